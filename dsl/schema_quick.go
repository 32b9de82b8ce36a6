package dsl

import (
	"encoding/json"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// Most documents fit their schema, and the schema library spends most of
// its time building what it needs to explain a failure. So a document is
// first checked by a quick validator: the compiled document schemas, in
// the subset of JSON Schema (draft 2020-12) they use, applied to the
// yaml.Nodes themselves, with the values toJSON would give them. It
// answers valid, invalid or unsure (a keyword outside the subset, a value
// it does not compare); only a document it does not find valid goes
// through the library, which reports the errors. It decides exactly as the
// library does on what it answers, so no document passes that the library
// would refuse (TestQuickSchemaAgrees).

// verdict is the quick validator's answer.
type verdict uint8

const (
	unsure verdict = iota
	valid
	invalid
)

// JSON value kinds, as a mask.
const (
	jNull uint8 = 1 << iota
	jBoolean
	jNumber
	jInteger
	jString
	jArray
	jObject
)

// quickSchema is a compiled schema of the subset; opaque marks one that
// uses a keyword outside it.
type quickSchema struct {
	s      *jsonschema.Schema
	opaque bool
	types  uint8 // 0: any
	ref    *quickSchema
	props  map[string]*quickSchema
	addl   *quickSchema // additionalProperties as a schema
	noAddl bool         // additionalProperties: false
	items  *quickSchema
	not    *quickSchema
	allOf  []*quickSchema
	anyOf  []*quickSchema
	oneOf  []*quickSchema
	ifS    *quickSchema
	thenS  *quickSchema
	elseS  *quickSchema
}

// quickCompiler compiles each schema once; schemas refer to each other in
// cycles.
type quickCompiler map[*jsonschema.Schema]*quickSchema

// compile returns the quick form of s (nil for nil).
func (qc quickCompiler) compile(s *jsonschema.Schema) *quickSchema {
	if s == nil {
		return nil
	}
	if q := qc[s]; q != nil {
		return q
	}
	q := &quickSchema{s: s, opaque: !inQuickSubset(s)}
	qc[s] = q
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			q.types |= kindMask(t)
		}
	}
	q.ref, q.items, q.not = qc.compile(s.Ref), qc.compile(s.Items2020), qc.compile(s.Not)
	q.ifS, q.thenS, q.elseS = qc.compile(s.If), qc.compile(s.Then), qc.compile(s.Else)
	q.allOf, q.anyOf, q.oneOf = qc.all(s.AllOf), qc.all(s.AnyOf), qc.all(s.OneOf)
	if len(s.Properties) > 0 {
		q.props = make(map[string]*quickSchema, len(s.Properties))
		for name, p := range s.Properties {
			q.props[name] = qc.compile(p)
		}
	}
	switch a := s.AdditionalProperties.(type) {
	case bool:
		q.noAddl = !a
	case *jsonschema.Schema:
		q.addl = qc.compile(a)
	}
	return q
}

func (qc quickCompiler) all(ss []*jsonschema.Schema) []*quickSchema {
	out := make([]*quickSchema, len(ss))
	for i, s := range ss {
		out[i] = qc.compile(s)
	}
	return out
}

// inQuickSubset reports whether the quick validator knows every keyword s
// uses (TestQuickSubsetCoversSchema lists the fields of the library's
// Schema it considered).
func inQuickSubset(s *jsonschema.Schema) bool {
	return s.DraftVersion >= 2020 && s.RecursiveRef == nil && s.DynamicRef == nil && s.Format == nil &&
		s.PropertyNames == nil && len(s.PatternProperties) == 0 && s.Dependencies == nil &&
		s.DependentSchemas == nil && s.UnevaluatedProperties == nil && s.Contains == nil &&
		s.MinContains == nil && s.MaxContains == nil && s.Items == nil && s.AdditionalItems == nil &&
		len(s.PrefixItems) == 0 && s.UnevaluatedItems == nil && s.ContentEncoding == nil &&
		s.ContentMediaType == nil && s.ContentSchema == nil && s.MultipleOf == nil && len(s.Extensions) == 0
}

// kindMask is the mask of a JSON Schema type name.
func kindMask(t string) uint8 {
	return map[string]uint8{"null": jNull, "boolean": jBoolean, "number": jNumber, "integer": jInteger,
		"string": jString, "array": jArray, "object": jObject}[t]
}

// maxQuickDepth bounds the schemas applied to one value through
// references; past it the answer is unsure (the library reports cycles).
const maxQuickDepth = 64

// quickValue is a YAML value as toJSON gives it to the library, without
// building it: a scalar's JSON value, or a mapping or sequence node.
type quickValue struct {
	n    *yaml.Node
	kind uint8 // one of the masks; jNumber for every number
	str  string
	b    bool
	num  json.Number
}

// quickValueOf reads n as toJSON would; a missing value (nil) is of no
// kind.
func quickValueOf(n *yaml.Node) quickValue {
	v := quickValue{n: n}
	if n == nil {
		return v
	}
	switch n.Kind {
	case yaml.MappingNode:
		v.kind = jObject
		return v
	case yaml.SequenceNode:
		v.kind = jArray
		return v
	case yaml.ScalarNode:
	default:
		v.kind = jNull
		return v
	}
	switch n.Tag {
	case "!!null", "!!bool", "!!int", "!!float":
	default:
		v.kind, v.str = jString, n.Value
		return v
	}
	switch x := scalarJSON(n).(type) {
	case nil:
		v.kind = jNull
	case bool:
		v.kind, v.b = jBoolean, x
	case json.Number:
		v.kind, v.num = jNumber, x
	case string:
		v.kind, v.str = jString, x
	}
	return v
}

// isInteger reports whether a number has no fractional part, as the
// library decides it.
func (v quickValue) isInteger() bool {
	if digits := strings.TrimPrefix(string(v.num), "-"); digits != "" && strings.Trim(digits, "0123456789") == "" {
		return true
	}
	r, ok := new(big.Rat).SetString(string(v.num))
	return ok && r.IsInt()
}

// quickValid applies q to n.
func quickValid(q *quickSchema, n *yaml.Node) verdict {
	return q.validate(quickValueOf(n), 0)
}

// validate applies q to v: every keyword must hold; an unsure one makes
// the answer unsure unless another is invalid.
func (q *quickSchema) validate(v quickValue, depth int) verdict {
	switch {
	case q.opaque || depth > maxQuickDepth:
		return unsure
	case q.s.Bool != nil && *q.s.Bool:
		return valid
	case q.s.Bool != nil:
		return invalid
	}
	out := and(q.typeOK(v), q.constEnum(v))
	if out != invalid {
		out = and(out, q.refs(v, depth))
	}
	if out != invalid {
		out = and(out, q.shape(v, depth))
	}
	if out != invalid {
		out = and(out, q.conds(v, depth))
	}
	return out
}

// shape applies the keywords of v's kind.
func (q *quickSchema) shape(v quickValue, depth int) verdict {
	switch v.kind {
	case jObject:
		return q.object(v, depth)
	case jArray:
		return q.array(v, depth)
	case jString:
		return q.str(v)
	case jNumber:
		return q.number(v)
	}
	return valid
}

// and combines two verdicts of keywords that must both hold.
func and(a, b verdict) verdict {
	switch {
	case a == invalid || b == invalid:
		return invalid
	case a == unsure || b == unsure:
		return unsure
	}
	return valid
}

func (q *quickSchema) typeOK(v quickValue) verdict {
	if q.types == 0 || q.types&v.kind != 0 {
		return valid
	}
	if v.kind == jNumber && q.types&jInteger != 0 && v.isInteger() {
		return valid
	}
	return invalid
}

func (q *quickSchema) constEnum(v quickValue) verdict {
	out := valid
	if q.s.Const != nil {
		out = quickEquals(v, *q.s.Const)
	}
	if q.s.Enum == nil || out != valid {
		return out
	}
	for _, want := range q.s.Enum.Values {
		switch quickEquals(v, want) {
		case valid:
			return valid
		case unsure:
			out = unsure
		}
	}
	if out == unsure {
		return unsure
	}
	return invalid
}

// quickEquals compares a value with a constant of a schema as the library
// does; a structured constant or value is unsure.
func quickEquals(v quickValue, want any) verdict {
	if v.kind == jObject || v.kind == jArray {
		return unsure
	}
	same := false
	switch w := want.(type) {
	case nil:
		same = v.kind == jNull
	case bool:
		same = v.kind == jBoolean && v.b == w
	case string:
		same = v.kind == jString && v.str == w
	case json.Number:
		if v.kind != jNumber {
			return invalid
		}
		a, okA := new(big.Rat).SetString(string(v.num))
		b, okB := new(big.Rat).SetString(string(w))
		if !okA || !okB {
			return unsure
		}
		same = a.Cmp(b) == 0
	default:
		return unsure
	}
	if same {
		return valid
	}
	return invalid
}

func (q *quickSchema) refs(v quickValue, depth int) verdict {
	if q.ref == nil {
		return valid
	}
	return q.ref.validate(v, depth+1)
}

func (q *quickSchema) object(v quickValue, depth int) verdict {
	s, n := q.s, v.n
	size := len(n.Content) / 2 // Parse refuses duplicate keys
	if (s.MinProperties != nil && size < *s.MinProperties) || (s.MaxProperties != nil && size > *s.MaxProperties) ||
		!hasKeys(n, s.Required) {
		return invalid
	}
	for name, reqd := range s.DependentRequired {
		if mapGet(n, name) != nil && !hasKeys(n, reqd) {
			return invalid
		}
	}
	out := valid
	for i := 0; i+1 < len(n.Content); i += 2 {
		p := q.props[n.Content[i].Value]
		switch {
		case p == nil && q.noAddl:
			return invalid
		case p == nil:
			p = q.addl
		}
		if p != nil {
			if out = and(out, p.validate(quickValueOf(n.Content[i+1]), depth+1)); out == invalid {
				return invalid
			}
		}
	}
	return out
}

// hasKeys reports whether mapping n has every key of keys.
func hasKeys(n *yaml.Node, keys []string) bool {
	for _, k := range keys {
		if mapGet(n, k) == nil {
			return false
		}
	}
	return true
}

func (q *quickSchema) array(v quickValue, depth int) verdict {
	s, items := q.s, v.n.Content
	if (s.MinItems != nil && len(items) < *s.MinItems) || (s.MaxItems != nil && len(items) > *s.MaxItems) {
		return invalid
	}
	out := valid
	if s.UniqueItems {
		out = uniqueScalars(items)
	}
	for _, it := range items {
		if out == invalid || q.items == nil {
			break
		}
		out = and(out, q.items.validate(quickValueOf(it), depth+1))
	}
	return out
}

// uniqueScalars decides uniqueItems for lists of strings and booleans;
// other lists are unsure.
func uniqueScalars(items []*yaml.Node) verdict {
	seen := make(map[quickValue]bool, len(items))
	for _, it := range items {
		v := quickValueOf(it)
		if v.kind != jString && v.kind != jBoolean && v.kind != jNull {
			return unsure
		}
		v.n = nil
		if seen[v] {
			return invalid
		}
		seen[v] = true
	}
	return valid
}

func (q *quickSchema) str(v quickValue) verdict {
	s := q.s
	if s.MinLength != nil || s.MaxLength != nil {
		l := utf8.RuneCountInString(v.str)
		if (s.MinLength != nil && l < *s.MinLength) || (s.MaxLength != nil && l > *s.MaxLength) {
			return invalid
		}
	}
	if s.Pattern != nil && !s.Pattern.MatchString(v.str) {
		return invalid
	}
	return valid
}

func (q *quickSchema) number(v quickValue) verdict {
	s := q.s
	if s.Minimum == nil && s.Maximum == nil && s.ExclusiveMinimum == nil && s.ExclusiveMaximum == nil {
		return valid
	}
	r, ok := new(big.Rat).SetString(string(v.num))
	if !ok {
		return unsure
	}
	if (s.Minimum != nil && r.Cmp(s.Minimum) < 0) || (s.Maximum != nil && r.Cmp(s.Maximum) > 0) ||
		(s.ExclusiveMinimum != nil && r.Cmp(s.ExclusiveMinimum) <= 0) || (s.ExclusiveMaximum != nil && r.Cmp(s.ExclusiveMaximum) >= 0) {
		return invalid
	}
	return valid
}

// conds applies not, allOf, anyOf, oneOf and if/then/else.
func (q *quickSchema) conds(v quickValue, depth int) verdict {
	out := valid
	if q.not != nil {
		out = negate(q.not.validate(v, depth+1))
	}
	for _, s := range q.allOf {
		if out = and(out, s.validate(v, depth+1)); out == invalid {
			return invalid
		}
	}
	if len(q.anyOf) > 0 {
		out = and(out, countValid(q.anyOf, v, depth, func(n int) bool { return n >= 1 }))
	}
	if len(q.oneOf) > 0 {
		out = and(out, countValid(q.oneOf, v, depth, func(n int) bool { return n == 1 }))
	}
	if q.ifS != nil && out != invalid {
		out = and(out, q.ifThenElse(v, depth))
	}
	return out
}

func (q *quickSchema) ifThenElse(v quickValue, depth int) verdict {
	branch := q.elseS
	switch q.ifS.validate(v, depth+1) {
	case unsure:
		return unsure
	case valid:
		branch = q.thenS
	}
	if branch == nil {
		return valid
	}
	return branch.validate(v, depth+1)
}

// negate is the verdict of not.
func negate(v verdict) verdict {
	switch v {
	case valid:
		return invalid
	case invalid:
		return valid
	}
	return unsure
}

// countValid applies every schema of ss and judges how many hold; an
// unsure one makes the count unsure.
func countValid(ss []*quickSchema, v quickValue, depth int, ok func(int) bool) verdict {
	n := 0
	for _, s := range ss {
		switch s.validate(v, depth+1) {
		case unsure:
			return unsure
		case valid:
			n++
		}
	}
	if ok(n) {
		return valid
	}
	return invalid
}

// quickSet is the quick form of a schemaSet's schemas.
type quickSet struct {
	base  *quickSchema
	kinds map[string]*quickSchema
	with  map[string]*quickSchema
}

// newQuickSet compiles the quick forms of s's schemas.
func newQuickSet(s *schemaSet) *quickSet {
	qc := quickCompiler{}
	q := &quickSet{base: qc.compile(s.base), kinds: map[string]*quickSchema{}, with: map[string]*quickSchema{}}
	for k, sch := range s.kinds {
		q.kinds[k] = qc.compile(sch)
	}
	for t, sch := range s.with {
		q.with[t] = qc.compile(sch)
	}
	return q
}

// valid reports whether the quick validator finds the document root valid,
// applying what validation.run applies: the root's checks, its kind's
// schema and each node type's with: schema. false means invalid or unsure.
func (q *quickSet) valid(root *yaml.Node) bool {
	kind := quickValueOf(mapGet(root, "kind"))
	sch := q.kinds[kind.str]
	if kind.kind != jString || sch == nil || quickValid(q.base, root) != valid || quickValid(sch, root) != valid {
		return false
	}
	if kind.str != KindPipeline {
		return true
	}
	ok := true
	pairs(mapGet(root, "nodes"), func(_, node *yaml.Node) {
		typ, with := quickValueOf(mapGet(node, "type")), mapGet(node, "with")
		if w := q.with[typ.str]; ok && node.Kind == yaml.MappingNode && typ.kind == jString && w != nil && with != nil {
			ok = quickValid(w, with) == valid
		}
	})
	return ok
}
