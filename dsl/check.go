package dsl

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/runner"
)

// Checker validates documents: schema, references, expressions and graphs.
// It is safe for concurrent use once built.
type Checker struct {
	reg     *Registry
	schemas *schemaSet
}

// NewChecker returns a checker for the node types in reg.
func NewChecker(reg *Registry) (*Checker, error) {
	s, err := newSchemaSet(reg)
	if err != nil {
		return nil, fmt.Errorf("compiling schemas: %w", err)
	}
	return &Checker{reg: reg, schemas: s}, nil
}

// check holds the state of one Check call.
type check struct {
	*Checker
	diags Diagnostics
	// byKind indexes every document with a name, schema-valid or not, so a
	// reference to a broken document is not also reported as unknown.
	byKind map[string]map[string]*Document
	valid  map[*Document]bool         // whether a document fits its schema
	faults faults                     // the parts of documents that break their schema
	used   map[string]map[string]bool // kind -> names referred to
	proj   *Project
	envs   map[string]*Env // shared environments, by what they declare
	// ruleEnvs holds the environment of each rule trigger over a state.
	ruleEnvs map[ruleEnvKey]*Env
	sigs     map[*Type]string // the signatures of the types expressions see
	// programs holds the expressions that compiled without a diagnostic,
	// so one repeated across documents is compiled once.
	programs map[programKey]*Program
	// jsonSchemas holds the outcome of compiling each JSON Schema of the
	// documents, by its JSON text.
	jsonSchemas map[string]error
	// namedEnvs holds the environments with named expressions (namedEnv).
	namedEnvs map[namedEnvKey]*Env
}

// programKey is what a compiled expression depends on: its text and
// language, the environment and the result type wanted.
type programKey struct {
	text string
	lang Lang
	env  *Env
	want string
}

// Check validates docs and returns the checked project with every
// diagnostic found, sorted. The project is complete only when the
// diagnostics hold no error.
func (c *Checker) Check(docs []*Document) (*Project, Diagnostics) {
	k := &check{
		Checker:     c,
		byKind:      map[string]map[string]*Document{},
		valid:       map[*Document]bool{},
		used:        map[string]map[string]bool{},
		envs:        map[string]*Env{},
		ruleEnvs:    map[ruleEnvKey]*Env{},
		sigs:        map[*Type]string{},
		programs:    map[programKey]*Program{},
		jsonSchemas: map[string]error{},
		namedEnvs:   map[namedEnvKey]*Env{},
		proj: &Project{Pipelines: map[string]*Pipeline{}, Agents: map[string]*Agent{},
			RuleSets: map[string]*RuleSet{}, Tools: map[string]*ToolDef{},
			Models: map[string]*ModelDef{}, Skills: map[string]*SkillDef{}, MCPServers: map[string]*MCPServerDef{}, Docs: docs},
	}
	for _, d := range docs {
		k.index(d)
	}
	k.checkKind(KindMCPServer, k.mcpServer) // first: its tools are referred to as any tool
	k.checkKind(KindRuleSet, k.ruleSet)
	k.lockedRules()
	k.checkKind(KindPipeline, k.pipeline)
	k.agentModels()
	k.checkKind(KindTool, k.tool)
	k.checkKind(KindSkill, k.skill)
	k.checkKind(KindModel, k.model)
	k.checkKind(KindAgent, k.agent)
	k.checkKind(KindTest, k.test)
	k.subgraphCycles()
	k.unused(KindTool, "tool")
	k.unused(KindSkill, "skill")
	k.modelsWithoutAgent()
	return k.proj, k.diags.Sorted()
}

// index validates a document's schema and records its name.
func (k *check) index(d *Document) {
	k.valid[d] = k.schemas.validate(d, &k.diags, &k.faults)
	if d.Kind == "" || d.Name == "" {
		return
	}
	names := k.byKind[d.Kind]
	if names == nil {
		names = map[string]*Document{}
		k.byKind[d.Kind] = names
	}
	if prev, dup := names[d.Name]; dup {
		k.diags.Errorf(d.Pos(mapGet(d.Get("metadata"), "name")), CodeRefDuplicate,
			"duplicate %s %q (first defined at %s)", d.Kind, d.Name, prev.Pos(mapGet(prev.Get("metadata"), "name")))
		return
	}
	names[d.Name] = d
}

// checkKind runs f on every document of kind, in file order, whether or
// not it fits its schema: the checks skip the parts that do not (see bad),
// so one error never hides another.
func (k *check) checkKind(kind string, f func(*Document)) {
	for _, d := range k.proj.Docs {
		if d.Kind == kind && k.byKind[kind][d.Name] == d {
			f(d)
		}
	}
}

// bad reports whether the value n holds a schema error, or lies inside or
// around one: the schema reported it, and the checks skip it rather than
// report what follows from it.
func (k *check) bad(n *yaml.Node) bool { return n != nil && k.faults.broken[n] }

// lacks reports whether the schema reported mapping m missing field.
func (k *check) lacks(m *yaml.Node, field string) bool { return k.faults.missing[m][field] }

// ref checks that n names a document of kind and marks it used. A value
// that is not a name was reported by the schema.
func (k *check) ref(d *Document, n *yaml.Node, kind, what string) bool {
	if n == nil || n.Kind != yaml.ScalarNode || k.bad(n) {
		return false
	}
	name := n.Value
	if k.used[kind] == nil {
		k.used[kind] = map[string]bool{}
	}
	k.used[kind][name] = true
	if _, ok := k.byKind[kind][name]; ok {
		return true
	}
	dg := k.diags.Errorf(d.Pos(n), CodeRefUnknown, "unknown %s %q", what, name)
	dg.Hint, dg.End = didYouMean(name, k.names(kind)), endOf(d.File, n)
	return false
}

// refs checks a list of names with ref.
func (k *check) refs(d *Document, list *yaml.Node, kind, what string) []string {
	var out []string
	for _, n := range items(list) {
		if k.ref(d, n, kind, what) {
			out = append(out, n.Value)
		}
	}
	return out
}

// names returns the names of the documents of kind, sorted.
func (k *check) names(kind string) []string {
	var out []string
	for n := range k.byKind[kind] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// unused warns about documents of kind that nothing refers to. It says
// nothing while a document has schema errors: the references in the parts
// it refused are unknown.
func (k *check) unused(kind, what string) {
	for _, ok := range k.valid {
		if !ok {
			return
		}
	}
	for _, name := range k.names(kind) {
		d := k.byKind[kind][name]
		if !k.used[kind][name] && d.Kind == kind { // not an MCP server's tool
			k.diags.Warnf(d.Pos(mapGet(d.Get("metadata"), "name")), CodeRefUnused, "%s %q is not used by any agent, skill, pipeline or test", what, name)
		}
	}
}

// docLang returns the document's default expression language; one the
// schema refuses is reported there, and def is used.
func docLang(d *Document, def Lang) Lang {
	if l := Lang(scalarValue(d.Get("language"))); l == CEL || l == Expr {
		return l
	}
	return def
}

// source builds the expression source of a YAML value: a scalar in the
// document's language, or {cel: ...} / {expr: ...}.
func source(d *Document, n *yaml.Node, lang Lang) Source {
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		lang, n = Lang(n.Content[0].Value), n.Content[1]
	}
	return Source{Text: n.Value, Lang: lang, File: d.File, Node: n, Src: d.Src}
}

// compile compiles the expression at n and adds its diagnostics. An
// expression the schema refused is not compiled. One that compiled cleanly
// before, with the same text against the same environment, is reused.
func (k *check) compile(d *Document, n *yaml.Node, lang Lang, env *Env, want *Type) *Program {
	if n == nil || k.bad(n) {
		return nil
	}
	src := source(d, n, lang)
	key := programKey{text: src.Text, lang: src.Lang, env: env, want: k.signature(want)}
	if p, ok := k.programs[key]; ok {
		return p
	}
	p, ds := Compile(src, env, want)
	if len(ds) == 0 {
		k.programs[key] = p
	}
	k.diags = append(k.diags, ds...)
	return p
}

// env returns the environment with vars, shared by every place of the
// Check that declares the same variables with the same types, so that
// its compiled forms are built once and its expressions compiled once.
func (k *check) env(vars map[string]*Type) *Env {
	key := k.varsSignature(vars)
	if e := k.envs[key]; e != nil {
		return e
	}
	e := NewEnv(vars)
	k.envs[key] = e
	return e
}

// varsSignature renders variables with their types' signatures, sorted by
// name: two sets of variables with the same signature are the same. A
// type's signature is written once a Check (types are not changed once
// built; budget, run and the triggers' variables are in every place).
func (k *check) varsSignature(vars map[string]*Type) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(k.signature(vars[name]))
		b.WriteByte(';')
	}
	return b.String()
}

// signature returns t's signature, written once a Check.
func (k *check) signature(t *Type) string {
	sig, ok := k.sigs[t]
	if !ok {
		sig = t.signature()
		k.sigs[t] = sig
	}
	return sig
}

// template compiles the template at n and adds its diagnostics. A
// template the schema refused is not compiled.
func (k *check) template(d *Document, n *yaml.Node, lang Lang, env *Env) *Template {
	if n == nil || k.bad(n) {
		return nil
	}
	t, ds := CompileTemplate(source(d, n, lang), env)
	k.diags = append(k.diags, ds...)
	return t
}

// typeOf reads a declared type ({type: ..., items: ..., properties: ...}).
func typeOf(n *yaml.Node) *Type {
	t := &Type{Kind: Kind(scalarValue(mapGet(n, "type")))}
	if t.Kind == "" {
		t.Kind = Any
	}
	if it := mapGet(n, "items"); it != nil {
		t.Items = typeOf(it)
	} else if t.Kind == Array {
		t.Items = AnyType
	}
	if props := mapGet(n, "properties"); props != nil && t.Kind == Object {
		t.Fields = map[string]*Type{}
		pairs(props, func(k, v *yaml.Node) { t.Fields[k.Value] = typeOf(v) })
	}
	if enum := mapGet(n, "enum"); enum != nil {
		t.Enum, _ = runner.NormalizeJSON(toJSON(enum)).([]any)
	}
	t.Format = scalarValue(mapGet(n, "format"))
	return t
}

// objectOf reads a mapping of declared types as a closed object; a missing
// mapping, or one the schema refused, is an open object. A field the schema
// refused is of any type, so what reads it is checked without it.
func (k *check) objectOf(n *yaml.Node) *Type {
	if n == nil || n.Kind != yaml.MappingNode {
		return &Type{Kind: Object}
	}
	t := ObjectOf(map[string]*Type{})
	pairs(n, func(key, v *yaml.Node) {
		if t.Fields[key.Value] = AnyType; !k.bad(v) {
			t.Fields[key.Value] = typeOf(v)
		}
	})
	return t
}

// declares reports whether an object type has field name; an open object
// has every field.
func (t *Type) declares(name string) bool { return t.Fields == nil || t.Fields[name] != nil }

// sameType reports whether two declared types agree (Any agrees with all).
func sameType(a, b *Type) bool {
	if a == nil || b == nil || a.Kind == Any || b.Kind == Any {
		return true
	}
	if a.Kind != b.Kind {
		return (a.Kind == Integer && b.Kind == Number) || (a.Kind == Number && b.Kind == Integer)
	}
	return a.Kind != Array || sameType(a.Items, b.Items)
}
