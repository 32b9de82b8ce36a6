package dsl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/runner-dev/runner/schemas"
)

const schemaBase = "file:///schemas/"

// printer renders the schema library's own messages.
var printer = message.NewPrinter(language.English)

// schemaSet is the compiled document schema plus the raw schema documents,
// kept to look up the properties a misspelt key could have meant.
type schemaSet struct {
	root *jsonschema.Schema
	// with is each node type's with: schema. The root leaves them out of
	// nodes.json: dispatching on a node's type here spares trying every
	// type's condition on every node.
	with map[string]*jsonschema.Schema
	// base is the root without its conditions on kind; kinds is, by kind,
	// the schema they apply. Validating a document against both is
	// validating it against the root, without trying every condition.
	base  *jsonschema.Schema
	kinds map[string]*jsonschema.Schema
	raw   map[string]any // resource URL -> decoded schema document
	quick *quickSet      // the quick validator of valid documents
}

// baseURL is where the root schema without its conditions on kind is.
const baseURL = schemaBase + "document.json"

// newSchemaSet compiles the embedded schemas with nodes.json built from reg.
func newSchemaSet(reg *Registry) (*schemaSet, error) {
	s := &schemaSet{raw: map[string]any{}}
	c := newSchemaCompiler()
	add := func(name string, data []byte) error {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("schema %s: %w", name, err)
		}
		s.raw[schemaBase+name] = doc
		return c.AddResource(schemaBase+name, doc)
	}
	files, _ := fs.Glob(schemas.FS, "*.json")
	for _, f := range files {
		if f == "nodes.json" {
			continue
		}
		data, _ := schemas.FS.ReadFile(f)
		if err := add(f, data); err != nil {
			return nil, err
		}
	}
	if err := add("nodes.json", reg.nodesSchema(false)); err != nil {
		return nil, err
	}
	base, kinds, err := splitRoot(s.raw[schemaBase+schemas.Root])
	if err != nil {
		return nil, err
	}
	if err := c.AddResource(baseURL, base); err != nil {
		return nil, err
	}
	if s.root, err = c.Compile(schemaBase + schemas.Root); err != nil {
		return nil, err
	}
	if s.base, err = c.Compile(baseURL); err != nil {
		return nil, err
	}
	if s.kinds, err = compileAll(c, kinds); err != nil {
		return nil, err
	}
	with := map[string]string{}
	for _, n := range reg.names {
		with[n] = schemaBase + "nodes.json#/$defs/" + n
	}
	if s.with, err = compileAll(c, with); err != nil {
		return nil, err
	}
	s.quick = newQuickSet(s)
	return s, nil
}

// compileAll compiles the schema at each URL of urls.
func compileAll(c *jsonschema.Compiler, urls map[string]string) (map[string]*jsonschema.Schema, error) {
	out := map[string]*jsonschema.Schema{}
	for k, url := range urls {
		sch, err := c.Compile(url)
		if err != nil {
			return nil, err
		}
		out[k] = sch
	}
	return out, nil
}

// splitRoot splits the root schema into its checks of every document and,
// by kind, the URL of the schema its conditions apply to a document of
// that kind ({"if": {"properties": {"kind": {"const": K}}, ...}, "then":
// {"$ref": F}}).
func splitRoot(root any) (map[string]any, map[string]string, error) {
	m, _ := root.(map[string]any)
	base, kinds := map[string]any{}, map[string]string{}
	for k, v := range m {
		if k != "allOf" {
			base[k] = v
		}
	}
	conds, _ := m["allOf"].([]any)
	for _, c := range conds {
		kind, _ := jsonAt(c, "if", "properties", "kind", "const").(string)
		ref, _ := jsonAt(c, "then", "$ref").(string)
		if kind == "" || ref == "" {
			return nil, nil, fmt.Errorf("schema %s: a condition of allOf is not on kind", schemas.Root)
		}
		kinds[kind] = schemaBase + ref
	}
	return base, kinds, nil
}

// jsonAt returns the value at path in nested JSON objects, or nil.
func jsonAt(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// validate checks a document against the schema, reports each problem at
// the YAML position of the offending value and records in f which parts of
// the document hold one. A document the quick validator finds valid is
// done with at once (see schema_quick.go).
func (s *schemaSet) validate(d *Document, diags *Diagnostics, f *faults) bool {
	if s.quick.valid(d.Root) {
		return true
	}
	var v validation
	if err := v.run(s, toJSON(d.Root)); err != nil {
		return false
	}
	var leaves []*jsonschema.ValidationError
	for _, e := range v.errs {
		leaves = append(leaves, s.leaves(e)...)
	}
	for _, leaf := range leaves {
		s.report(d, leaf, diags)
		f.record(d.Root, leaf)
	}
	return len(leaves) == 0
}

// validation collects the error trees of one document, in the order the
// root schema would report them.
type validation struct {
	errs []*jsonschema.ValidationError
}

// run validates doc: against the root's checks of every document, the
// schema of its kind and each node type's with: schema, which is what the
// root's conditions apply. A document of no known kind is validated
// against the root. An error that is no validation error stops it, as it
// stops the root.
func (v *validation) run(s *schemaSet, doc any) error {
	m, _ := doc.(map[string]any)
	kind, _ := m["kind"].(string)
	sch := s.kinds[kind]
	if sch == nil {
		return v.add(s.root.Validate(doc), nil)
	}
	if err := v.add(s.base.Validate(doc), nil); err != nil {
		return err
	}
	if err := v.add(sch.Validate(doc), nil); err != nil {
		return err
	}
	if kind != KindPipeline {
		return nil
	}
	nodes, _ := m["nodes"].(map[string]any)
	for name, n := range nodes {
		if err := v.node(s, name, n); err != nil {
			return err
		}
	}
	return nil
}

// node validates the with: of a node against its type's schema.
func (v *validation) node(s *schemaSet, name string, n any) error {
	node, _ := n.(map[string]any)
	typ, _ := node["type"].(string)
	with, ok := node["with"]
	if sch := s.with[typ]; sch != nil && ok {
		return v.add(sch.Validate(with), []string{"nodes", name, "with"})
	}
	return nil
}

// add records the result of validating the value at where; an error that
// is no validation error is returned.
func (v *validation) add(err error, where []string) error {
	switch err := err.(type) {
	case nil:
		return nil
	case *jsonschema.ValidationError:
		relocate(err, where)
		v.errs = append(v.errs, err)
		return nil
	}
	return err
}

// relocate prefixes the instance locations of an error tree with where
// its value lies in the document.
func relocate(e *jsonschema.ValidationError, where []string) {
	if len(where) == 0 {
		return
	}
	e.InstanceLocation = append(slices.Clip(where), e.InstanceLocation...)
	for _, c := range e.Causes {
		relocate(c, where)
	}
}

// faults records where documents break their schema, so that the semantic
// checks skip exactly the parts that do and check all the rest: an error in
// one node, state field, rule or tool section hides nothing outside it.
type faults struct {
	// broken holds every value with a schema error inside it or at it, the
	// values that contain it (up to, not including, the document) and the
	// values inside it.
	broken map[*yaml.Node]bool
	// missing holds the required fields a mapping lacks.
	missing map[*yaml.Node]map[string]bool
}

// record marks the values a schema error lies in. An error about the whole
// document (a Tool with two implementations) marks nothing: its parts are
// checked as written.
func (f *faults) record(root *yaml.Node, e *jsonschema.ValidationError) {
	if f.broken == nil {
		f.broken, f.missing = map[*yaml.Node]bool{}, map[*yaml.Node]map[string]bool{}
	}
	n := root
	for _, tok := range e.InstanceLocation {
		next := walk(n, []string{tok})
		if next == n {
			break
		}
		n = next
		f.broken[n] = true
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		if f.missing[n] == nil {
			f.missing[n] = map[string]bool{}
		}
		for _, p := range k.Missing {
			f.missing[n][p] = true
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			f.markAll(mapGet(n, p))
		}
	default:
		if n != root {
			f.markAll(n)
		}
	}
}

// markAll marks n and every value inside it.
func (f *faults) markAll(n *yaml.Node) {
	if n == nil {
		return
	}
	f.broken[n] = true
	for _, c := range n.Content {
		f.markAll(c)
	}
}

// leaves flattens an error tree to the errors worth showing. Of a failed
// oneOf/anyOf it keeps the branch that got furthest into the value, or one
// summary when every branch failed on the value's type.
func (s *schemaSet) leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	switch e.ErrorKind.(type) {
	case *kind.OneOf, *kind.AnyOf:
		if best := deepest(e.Causes); best != nil {
			return s.leaves(best)
		}
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, s.leaves(c)...)
	}
	return out
}

// deepest returns the cause whose errors lie deepest in the value, or nil
// when all of them fail at the same place (the value has the wrong shape).
// Of causes that fail equally deep, the one branch that only misses the
// allowed values, if there is one, is the one meant (`type: strin` is a
// misspelt type name, not a list of them).
func deepest(causes []*jsonschema.ValidationError) *jsonschema.ValidationError {
	var best []*jsonschema.ValidationError
	bestDepth := -1
	for _, c := range causes {
		switch d := depth(c); {
		case d > bestDepth:
			best, bestDepth = []*jsonschema.ValidationError{c}, d
		case d == bestDepth:
			best = append(best, c)
		}
	}
	if fits := slices.DeleteFunc(slices.Clone(best), func(e *jsonschema.ValidationError) bool { return !valuesOnly(e) }); len(fits) == 1 {
		return fits[0]
	}
	if len(best) > 1 || bestDepth <= len(causes[0].InstanceLocation) && isShapeError(best[0]) {
		return nil
	}
	return best[0]
}

// valuesOnly reports whether every error under e is a value that is not
// one of those allowed.
func valuesOnly(e *jsonschema.ValidationError) bool {
	if len(e.Causes) == 0 {
		_, ok := e.ErrorKind.(*kind.Enum)
		return ok
	}
	for _, c := range e.Causes {
		if !valuesOnly(c) {
			return false
		}
	}
	return true
}

func depth(e *jsonschema.ValidationError) int {
	d := len(e.InstanceLocation)
	if _, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
		d++ // blames a key one level down
	}
	for _, c := range e.Causes {
		d = max(d, depth(c))
	}
	return d
}

func isShapeError(e *jsonschema.ValidationError) bool {
	switch e.ErrorKind.(type) {
	case *kind.Type, *kind.Required:
		return true
	}
	return false
}

// report renders one leaf error as a diagnostic a YAML author understands.
func (s *schemaSet) report(d *Document, e *jsonschema.ValidationError, diags *Diagnostics) {
	n := walk(d.Root, e.InstanceLocation)
	where := at(e.InstanceLocation)
	first := len(*diags)
	defer func() { // the value's extent, when it is one plain scalar
		for i := first; i < len(*diags); i++ {
			if dg := &(*diags)[i]; dg.End == (Pos{}) && dg.Pos == d.Pos(n) {
				dg.End = endOf(d.File, n)
			}
		}
	}()
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		cands := s.properties(e.SchemaURL)
		for _, p := range k.Properties {
			key := mapKey(n, p)
			dg := diags.Errorf(d.Pos(key), CodeSchemaUnknownField, "unknown field %q%s", p, where)
			dg.Hint, dg.End = didYouMean(p, cands), endOf(d.File, key)
		}
	case *kind.Required:
		for _, p := range k.Missing {
			diags.Errorf(d.Pos(keyOf(d.Root, e.InstanceLocation, n)), CodeSchemaMissingField, "missing required field %q%s", p, where)
		}
	case *kind.Type:
		diags.Errorf(d.Pos(n), CodeSchemaType, "expected %s%s, got %s", yamlTypes(k.Want), where, describe(n))
	case *kind.Enum:
		dg := diags.Errorf(d.Pos(n), CodeSchemaEnum, "%s is not one of %s%s", quoteValue(n), joinAny(k.Want), where)
		dg.Hint = didYouMean(scalarValue(n), strs(k.Want))
	case *kind.Const:
		diags.Errorf(d.Pos(n), CodeSchemaFormat, "%s must be %v", strings.TrimPrefix(where, " in "), k.Want)
	case *kind.OneOf:
		if len(k.Subschemas) > 1 { // more than one form matched: exclusive keys set together
			s.exclusive(d, n, e, k.Subschemas, where, diags)
			return
		}
		s.wrongShape(d, n, e, where, diags)
	case *kind.AnyOf:
		s.wrongShape(d, n, e, where, diags)
	case *kind.Pattern:
		if secretName(e.InstanceLocation) { // a pasted key: never echo it
			diags.Errorf(d.Pos(n), CodeSchemaSecret, "%s must name an environment variable (like OPENAI_API_KEY), not hold the secret itself; the value is not shown",
				strings.TrimPrefix(where, " in "))
			return
		}
		diags.Errorf(d.Pos(n), CodeSchemaFormat, "%s is not a valid %s%s", quoteValue(n), patternName(e.SchemaURL, s), where)
	default:
		diags.Errorf(d.Pos(n), CodeSchemaValue, "%s%s", e.ErrorKind.LocalizedString(printer), where)
	}
}

// wrongShape reports a value that matches none of its allowed forms.
func (s *schemaSet) wrongShape(d *Document, n *yaml.Node, e *jsonschema.ValidationError, where string, diags *Diagnostics) {
	{
		shapes := s.shapes(e)
		dg := diags.Errorf(d.Pos(n), CodeSchemaType, "%s has the wrong shape%s: %s", describe(n), where, shapes)
		if n.Kind == yaml.MappingNode && strings.Contains(shapes, "a string") {
			dg.Hint = `YAML reads "key: value" inside a plain string as a mapping; quote the value`
		}
	}
}

// exclusive reports a mapping that sets the keys of more than one of its
// exclusive forms (a tool with two implementations, a test with two
// targets).
func (s *schemaSet) exclusive(d *Document, n *yaml.Node, e *jsonschema.ValidationError, matched []int, where string, diags *Diagnostics) {
	var keys []string
	for _, i := range matched {
		obj, _ := s.resolve(fmt.Sprintf("%s/oneOf/%d", strings.TrimSuffix(e.SchemaURL, "/oneOf"), i)).(map[string]any)
		req, _ := obj["required"].([]any)
		keys = append(keys, strs(req)...)
	}
	if len(keys) < 2 {
		diags.Errorf(d.Pos(n), CodeSchemaType, "%s matches more than one of its allowed forms%s; keep one", describe(n), where)
		return
	}
	key := mapKey(n, keys[len(keys)-1])
	diags.Errorf(d.Pos(key), CodeSchemaType, "%s sets %s, which exclude each other%s; keep one", describe(n), strings.Join(keys, " and "), where)
}

// secretName reports whether a location holds the name of a secret's
// environment variable, where a wrong value is likely the secret itself.
func secretName(loc []string) bool {
	return slices.Contains(loc, "api_key_env") || slices.Contains(loc, "secrets")
}

// at names the location of a value for messages: ` in nodes.planner.with`.
func at(loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	return " in " + strings.Join(loc, ".")
}

// keyOf returns the key that names the value n at loc, where a field
// missing from n is reported: the node's name, not its first field; n
// itself when no key names it (a list item, the document).
func keyOf(root *yaml.Node, loc []string, n *yaml.Node) *yaml.Node {
	if len(loc) == 0 {
		return n
	}
	if k := mapKey(walk(root, loc[:len(loc)-1]), loc[len(loc)-1]); k != nil {
		return k
	}
	return n
}

// walk follows a JSON instance location down the YAML tree.
func walk(n *yaml.Node, loc []string) *yaml.Node {
	for _, tok := range loc {
		switch n.Kind {
		case yaml.MappingNode:
			if v := mapGet(n, tok); v != nil {
				n = v
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(tok); err == nil && i < len(n.Content) {
				n = n.Content[i]
			}
		}
	}
	return n
}

// properties returns the property names of the schema whose
// additionalProperties keyword is at url.
func (s *schemaSet) properties(url string) []string {
	obj, _ := s.resolve(strings.TrimSuffix(url, "/additionalProperties")).(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for p := range props {
		names = append(names, p)
	}
	sort.Strings(names)
	return names
}

// resolve finds the raw schema value at an absolute schema URL.
func (s *schemaSet) resolve(url string) any {
	res, ptr, _ := strings.Cut(url, "#")
	v := s.raw[res]
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, _ := strconv.Atoi(tok)
			if i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// shapes describes the alternatives of a failed oneOf for its message,
// from the alternative schemas themselves.
func (s *schemaSet) shapes(e *jsonschema.ValidationError) string {
	var alts []string
	for _, c := range e.Causes {
		alts = append(alts, s.shape(c.SchemaURL))
	}
	if strings.Join(alts, "") == "" {
		return "expected one of its allowed forms"
	}
	return "expected " + strings.Join(alts, ", or ")
}

// shape names what the schema at url accepts: types, a list of at least
// so many items, or a mapping with its required keys.
func (s *schemaSet) shape(url string) string {
	obj, _ := s.resolve(url).(map[string]any)
	if ref, ok := obj["$ref"].(string); ok && len(obj) == 1 {
		return s.shape(refURL(url, ref))
	}
	var parts []string
	switch t := obj["type"].(type) {
	case string:
		parts = append(parts, yamlTypes([]string{t}))
	case []any:
		parts = append(parts, yamlTypes(strs(t)))
	}
	if n, _ := strconv.Atoi(fmt.Sprint(obj["minItems"])); n > 0 && len(parts) == 1 {
		parts[0] += fmt.Sprintf(" of at least %d", n)
	}
	if req, ok := obj["required"].([]any); ok {
		parts = []string{"a mapping with " + strings.Join(strs(req), ", ")}
	}
	if len(parts) == 0 {
		return "another shape"
	}
	return strings.Join(parts, " ")
}

// refURL resolves a $ref found in the schema at url.
func refURL(url, ref string) string {
	res, _, _ := strings.Cut(url, "#")
	if strings.HasPrefix(ref, "#") {
		return res + ref
	}
	return res[:strings.LastIndex(res, "/")+1] + ref
}

func patternName(url string, s *schemaSet) string {
	obj, _ := s.resolve(strings.TrimSuffix(url, "/pattern")).(map[string]any)
	if desc, ok := obj["description"].(string); ok {
		return strings.TrimSuffix(strings.SplitN(desc, ":", 2)[0], ".")
	}
	return "value"
}

// yamlTypes names JSON types as YAML authors know them.
func yamlTypes(want []string) string {
	names := map[string]string{"object": "a mapping", "array": "a list", "string": "a string",
		"integer": "an integer", "number": "a number", "boolean": "true or false", "null": "nothing"}
	out := make([]string, len(want))
	for i, w := range want {
		out[i] = names[w]
	}
	return strings.Join(out, " or ")
}

func quoteValue(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return strconv.Quote(n.Value)
	}
	return describe(n)
}

func joinAny(vs []any) string {
	return strings.Join(strs(vs), ", ")
}

func strs(vs []any) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprint(v)
	}
	return out
}

// toJSON converts a YAML tree to the JSON value the schema validates.
func toJSON(n *yaml.Node) any {
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		pairs(n, func(k, v *yaml.Node) { m[k.Value] = toJSON(v) })
		return m
	case yaml.SequenceNode:
		a := make([]any, len(n.Content))
		for i, c := range n.Content {
			a[i] = toJSON(c)
		}
		return a
	case yaml.ScalarNode:
		return scalarJSON(n)
	}
	return nil
}

// plainDecimal reports whether s is an integer written the way
// strconv.FormatInt writes it: an optional minus, and digits without a
// leading zero, short enough to fit an int64.
func plainDecimal(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 18 || (digits[0] == '0' && digits != "0") || s == "-0" {
		return false
	}
	return strings.Trim(digits, "0123456789") == ""
}

func scalarJSON(n *yaml.Node) any {
	switch n.Tag {
	case "!!null":
		return nil
	case "!!bool":
		if n.Value == "true" || n.Value == "false" {
			return n.Value == "true"
		}
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		if plainDecimal(n.Value) {
			return json.Number(n.Value)
		}
		var i int64
		if n.Decode(&i) == nil {
			return json.Number(strconv.FormatInt(i, 10))
		}
		fallthrough
	case "!!float":
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) { // JSON has no .inf or .nan
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	return n.Value
}
