package dsl

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/runner"
)

// budgetType is what expressions see as `budget`: the run's usage so far.
// usageType is what a Test's assertions see as `usage`: what the thread
// spent over all its runs (runner.RunUsage).
var usageType = ObjectOf(map[string]*Type{
	"input_tokens": IntegerType, "output_tokens": IntegerType, "cached_input_tokens": IntegerType,
	"cost_usd": NumberType, "llm_calls": IntegerType, "tool_calls": IntegerType, "iterations": IntegerType,
	"structured_retries": IntegerType,
})

var budgetType = ObjectOf(map[string]*Type{
	"tokens_used": IntegerType, "cost_usd": NumberType, "steps": IntegerType,
	"iterations": IntegerType, "llm_calls": IntegerType, "tool_calls": IntegerType,
	"structured_retries": IntegerType,
})

// errorType is what expressions see as `error`: the error a route caught
// last in the run (empty strings when none).
var errorType = ObjectOf(map[string]*Type{"message": StringType, "kind": StringType, "node": StringType})

// runType is what expressions see as `run`: the thread, when this turn of
// it began and the clock's reading (RFC 3339, UTC), and its limits.
var runType = ObjectOf(map[string]*Type{"thread": StringType, "started_at": StringType, "now": StringType,
	"limits": ObjectOf(map[string]*Type{"max_steps": IntegerType, "timeout_seconds": NumberType})})

// pipelineCheck holds what the checks of one pipeline share.
type pipelineCheck struct {
	*check
	d     *Document
	p     *Pipeline
	envs  map[string]*Env  // by extra variables
	node  *Node            // the node whose config is being visited
	vars  map[string]*Type // the types of its extra variables: its node type's, or a VarTyper's
	named *named           // the pipeline's named expressions
	// varsKey tells apart the environments of different vars.
	varsKey string
}

// pipeline checks a Pipeline document and adds it to the project.
func (k *check) pipeline(d *Document) {
	p := &Pipeline{Doc: d, Name: d.Name, Lang: docLang(d, Expr), Start: scalarValue(d.Get("start"))}
	p.Notify = k.notify(d, d.Get("notify"))
	pc := &pipelineCheck{check: k, d: d, p: p, envs: map[string]*Env{}}
	pc.state()
	p.Input = k.objectOf(d.Get("input"))
	pc.inputFields()
	pc.configurable()
	pc.named = k.namedExpressions(d, p.Lang, pc.baseVars())
	pc.startRoutes()
	lim := d.Get("limits")
	pc.decode(d, mapGet(lim, "max_steps"), &p.MaxSteps, "limits.max_steps")
	pc.decode(d, mapGet(lim, "timeout"), &p.Timeout, "limits.timeout")
	pc.decode(d, mapGet(lim, "handler_timeout"), &p.HandlerTimeout, "limits.handler_timeout")
	p.OnTimeout, p.OnError = pc.name("on_timeout"), pc.name("on_error")
	p.InterruptBefore, p.InterruptAfter = pc.names("interrupt_before"), pc.names("interrupt_after")
	if n := d.Get("durability"); !pc.bad(n) {
		p.Durability = scalarValue(n)
	}
	nodes := d.Get("nodes")
	pairs(nodes, func(key, v *yaml.Node) { pc.nodeDecl(key, v) })
	pairs(d.Get("output"), func(key, v *yaml.Node) {
		if p.Output == nil {
			p.Output = map[string]*Expression{}
		}
		p.Output[key.Value] = &Expression{Program: pc.compile(d, v, p.Lang, pc.env(nil), nil), node: v}
	})
	if nodes != nil && nodes.Kind == yaml.MappingNode { // else the schema reported it
		pc.graph()
	}
	p.Budget = k.budget(d, p)
	k.proj.Pipelines[p.Name] = p
}

// name is the node a pipeline's key names, "" when the schema refused it.
func (pc *pipelineCheck) name(key string) string {
	if n := pc.d.Get(key); !pc.bad(n) {
		return scalarValue(n)
	}
	return ""
}

// names are the nodes a pipeline's list names, nil when the schema
// refused it.
func (pc *pipelineCheck) names(key string) []string {
	n := pc.d.Get(key)
	if pc.bad(n) {
		return nil
	}
	return scalarValues(items(n))
}

// state reads the declared state fields. A field the schema refused is of
// any type, and a state: that is not a mapping is an open object, so the
// expressions that read them are checked without them.
func (pc *pipelineCheck) state() {
	if st := pc.d.Get("state"); st != nil && st.Kind != yaml.MappingNode {
		pc.p.State = &Type{Kind: Object}
		return
	}
	fields := map[string]*Type{}
	pairs(pc.d.Get("state"), func(key, v *yaml.Node) {
		f := &Field{Name: key.Value, Type: typeOf(v), Reducer: scalarValue(mapGet(v, "reducer")), Pos: pc.d.Pos(key),
			PerTurn: scalarValue(mapGet(v, "per_turn")) == "true"}
		if f.Reducer == "" || pc.bad(v) {
			f.Reducer = "replace"
		}
		if pc.bad(v) {
			f.Type = AnyType
			fields[f.Name] = f.Type
			pc.p.Fields = append(pc.p.Fields, f)
			return
		}
		pc.reducer(f, mapGet(v, "reducer"))
		if def := mapGet(v, "default"); def != nil {
			f.Default = runner.NormalizeJSON(toJSON(def))
			if !conforms(f.Default, f.Type) {
				pc.diags.Errorf(pc.d.Pos(def), CodeStateDefault, "default of %q must be %s, got %s", f.Name, f.Type, describe(def))
			}
			pc.enumDefault(f, def, mapGet(v, "enum"))
		}
		fields[f.Name] = f.Type
		pc.p.Fields = append(pc.p.Fields, f)
	})
	pc.p.State = ObjectOf(fields)
}

// enumDefault checks that a field's default is one of its enum values.
func (pc *pipelineCheck) enumDefault(f *Field, def, enum *yaml.Node) {
	if enum == nil || f.Default == nil {
		return
	}
	var values []string
	for _, e := range items(enum) {
		if reflect.DeepEqual(runner.NormalizeJSON(toJSON(e)), f.Default) {
			return
		}
		values = append(values, quoteValue(e))
	}
	pc.diags.Errorf(pc.d.Pos(def), CodeStateDefault, "default of %q is %s, which is not one of its enum values [%s]", f.Name, quoteValue(def), strings.Join(values, ", ")).Hint =
		hintOr(didYouMean(scalarValue(def), scalarValues(items(enum))), "add it to enum:, or change the default")
}

// inputFields checks that every declared input field initialises a state
// field of a type its values can have.
func (pc *pipelineCheck) inputFields() {
	pairs(pc.d.Get("input"), func(key, v *yaml.Node) {
		in, st := pc.p.Input.Fields[key.Value], pc.p.State.Fields[key.Value]
		switch {
		case pc.bad(v) || pc.p.State.Fields == nil:
			// the schema reported it
		case st == nil:
			pc.diags.Errorf(pc.d.Pos(key), CodeInputField, "input field %q has no state field of that name; a run with it would be refused", key.Value).Hint =
				hintOr(didYouMean(key.Value, pc.p.State.FieldNames()), "declare it under state:, where the input initialises it")
		case !sameType(in, st):
			pc.diags.Errorf(pc.d.Pos(mapGet(v, "type")), CodeInputField, "input field %q is %s, but state field %q is %s", key.Value, in, key.Value, st)
		}
		if !pc.bad(v) {
			pc.inputContract(key.Value, v)
		}
	})
}

// inputContract reads whether the input field name (declared at v) is
// required, and its default, which must fit its declaration.
func (pc *pipelineCheck) inputContract(name string, v *yaml.Node) {
	req, def := mapGet(v, "required"), mapGet(v, "default")
	if scalarValue(req) == "true" {
		pc.p.InputRequired = append(pc.p.InputRequired, name)
		if def != nil {
			pc.diags.Errorf(pc.d.Pos(def), CodeInputField, "input field %q is required, so its default is never used", name).Hint =
				"drop the default, or drop required: true"
		}
		return
	}
	if def == nil {
		return
	}
	c := &conformance{}
	val, _ := c.conform(runner.NormalizeJSON(toJSON(def)), pc.p.Input.Fields[name], []any{name})
	for _, pr := range c.problems {
		pc.diags.Errorf(pc.d.Pos(def), CodeInputField, "the default does not fit: %s", pr.Text())
	}
	if pc.p.InputDefaults == nil {
		pc.p.InputDefaults = map[string]any{}
	}
	pc.p.InputDefaults[name] = val
}

// scalarValues returns the values of the scalar nodes among ns.
func scalarValues(ns []*yaml.Node) []string {
	var out []string
	for _, n := range ns {
		if n.Kind == yaml.ScalarNode {
			out = append(out, n.Value)
		}
	}
	return out
}

// reducer checks that a field's reducer fits its type.
func (pc *pipelineCheck) reducer(f *Field, n *yaml.Node) {
	ok := map[string][]Kind{
		"append": {Array}, "messages": {Array}, "add": {Integer, Number}, "merge": {Object},
	}[f.Reducer]
	if ok == nil || f.Type.Kind == Any {
		return
	}
	for _, k := range ok {
		if f.Type.Kind == k {
			return
		}
	}
	pc.diags.Errorf(pc.d.Pos(n), CodeStateReducer, "reducer %q does not fit a field of type %s", f.Reducer, f.Type)
}

// env returns the environment of the pipeline's expressions with extra
// variables (of any type) added.
func (pc *pipelineCheck) env(extra []string) *Env {
	key := strings.Join(extra, ",")
	if len(extra) > 0 {
		key += pc.varsKey
	}
	if e, ok := pc.envs[key]; ok {
		return e
	}
	vars := pc.baseVars()
	for _, v := range extra {
		vars[v] = AnyType
		if t := pc.vars[v]; t != nil {
			vars[v] = t
		}
	}
	e := pc.namedEnv(pc.check.env(vars), pc.named)
	pc.envs[key] = e
	return e
}

// baseVars are the variables every expression of the pipeline sees.
func (pc *pipelineCheck) baseVars() map[string]*Type {
	return map[string]*Type{"state": pc.p.State, "input": pc.p.Input, "budget": budgetType, "error": errorType, "run": runType,
		"config": pc.p.Config}
}

// nodeDecl reads one node: type, with:, routes, timeout and retry. A node
// with a schema error is still a node (routes to it are not unknown); its
// routes are read unless they hold the error, and its type and with: are
// checked only when neither they nor an unknown field of the node does.
func (pc *pipelineCheck) nodeDecl(key, v *yaml.Node) {
	n := &Node{Name: key.Value, Pos: pc.d.Pos(key), Type: scalarValue(mapGet(v, "type")), key: key, value: v}
	pc.p.Nodes = append(pc.p.Nodes, n)
	if oe := mapGet(v, "on_error"); !pc.bad(oe) {
		pc.catches(n, oe)
	}
	defer func() { n.opaque = n.opaque || pc.bad(mapGet(v, "on_error")) }() // it may lead anywhere
	at := "nodes." + n.Name
	pc.decode(pc.d, mapGet(v, "timeout"), &n.Timeout, at+".timeout")
	if r := mapGet(v, "retry"); r != nil {
		n.Retry = &Retry{MaxAttempts: 1}
		pc.decode(pc.d, r, n.Retry, at+".retry")
	}
	if n.opaque = v.Kind != yaml.MappingNode || pc.bad(mapGet(v, "next")); !n.opaque {
		pc.routes(n, mapGet(v, "next"))
	}
	if pc.configBroken(v) {
		return
	}
	nt, ok := pc.reg.Lookup(n.Type)
	if !ok {
		return // the schema's enum reported it
	}
	n.Config = nt.Config()
	if !pc.decode(pc.d, mapGet(v, "with"), n.Config, at+".with") {
		return
	}
	pc.node, pc.vars, pc.varsKey = n, nt.Vars, "@"+nt.Name
	defer func() { pc.vars, pc.varsKey = nil, "" }()
	visitConfig(reflect.ValueOf(n.Config), nil, pc)
	n.pipesKnown = true // visitPipeline recorded them
	if nt.Check != nil {
		nt.Check(n.Config, &NodeCheck{pc: pc})
	}
}

// configBroken reports whether a schema error makes a node's type and
// with: unknowable: one in them, in a field the node does not have (a
// misspelt with:), or a missing type.
func (pc *pipelineCheck) configBroken(v *yaml.Node) bool {
	if !pc.bad(v) {
		return false
	}
	if v.Kind != yaml.MappingNode || pc.lacks(v, "type") {
		return true
	}
	broken := false
	pairs(v, func(key, val *yaml.Node) {
		switch key.Value {
		case "next", "on_error", "timeout", "retry", "description":
		default:
			broken = broken || pc.bad(val)
		}
	})
	return broken
}

// routes reads a node's next: a name, or a list of {when, to}.
func (pc *pipelineCheck) routes(n *Node, next *yaml.Node) {
	if next != nil {
		n.Next = pc.routeList(fmt.Sprintf("node %q", n.Name), next)
	}
}

// startRoutes reads a conditional start: a list of {when, to}, like a
// node's next. A start that is a name (Pipeline.Start), or that the
// schema refused, has none.
func (pc *pipelineCheck) startRoutes() {
	if st := pc.d.Get("start"); st != nil && st.Kind == yaml.SequenceNode && !pc.bad(st) {
		pc.p.StartRoutes = pc.routeList("start", st)
	}
}

// routeList reads routes: a name, or a list of {when, to}; owner says
// whose they are in messages (`node "a"`, start).
func (pc *pipelineCheck) routeList(owner string, next *yaml.Node) []*Route {
	if next.Kind == yaml.ScalarNode {
		return []*Route{{To: next.Value, Pos: pc.d.Pos(next), end: endOf(pc.d.File, next)}}
	}
	var out []*Route
	var always *Route // the first route without when
	for _, r := range items(next) {
		to := mapGet(r, "to")
		route := &Route{To: scalarValue(to), Pos: pc.d.Pos(to), end: endOf(pc.d.File, to)}
		if w := mapGet(r, "when"); w != nil {
			route.When = &Condition{Expression{node: w}}
			route.When.Program = pc.compile(pc.d, w, pc.p.Lang, pc.env(nil), BoolType)
		}
		if always != nil {
			pc.deadRoute(owner, r, route, always)
		} else if route.When == nil {
			always = route
		}
		out = append(out, route)
	}
	return out
}

// catches reads a node's on_error: a node's name (catching any error),
// or a list of {when, next}, where when is an error kind or a list of
// them, and an entry without when (or with any) catches the rest. An
// entry after such an entry can never be taken (an error); a kind an
// earlier entry catches is caught there (a warning).
func (pc *pipelineCheck) catches(n *Node, oe *yaml.Node) {
	if oe == nil {
		return
	}
	if oe.Kind == yaml.ScalarNode {
		n.OnError = []*Catch{{To: oe.Value, Pos: pc.d.Pos(oe), end: endOf(pc.d.File, oe)}}
		return
	}
	var all *Catch // the first entry that catches every kind
	seen := map[string]bool{}
	for _, e := range items(oe) {
		to := mapGet(e, "next")
		c := &Catch{To: scalarValue(to), Pos: pc.d.Pos(to), end: endOf(pc.d.File, to)}
		kinds := items(mapGet(e, "when"))
		if when := mapGet(e, "when"); when != nil && when.Kind == yaml.ScalarNode {
			kinds = []*yaml.Node{when}
		}
		c.When = pc.errorKinds(kinds)
		if all != nil {
			pc.diags.Errorf(pc.d.Pos(e), CodeGraphDeadRoute, "this on_error entry of node %q can never be taken: the entry to %q before it (line %d) catches every error",
				n.Name, all.To, all.Pos.Line).Hint = "move the entry without when (or with when: any) to the end of the list"
		}
		for i, k := range c.When {
			if seen[k] && k != runner.KindAny {
				pc.diags.Warnf(pc.d.Pos(kinds[i]), CodeGraphShadowedCatch, "error kind %q is caught by an earlier on_error entry of node %q; this entry never sees it", k, n.Name).Hint =
					"remove it here, or move this entry up"
			}
			seen[k] = true
		}
		if all == nil && (len(c.When) == 0 || slices.Contains(c.When, runner.KindAny)) {
			all = c
		}
		n.OnError = append(n.OnError, c)
	}
}

// errorKinds returns the error kinds an on_error entry names, reporting
// those that are not kinds (which catch nothing).
func (pc *pipelineCheck) errorKinds(kinds []*yaml.Node) []string {
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		if !slices.Contains(runner.ErrorKinds, k.Value) {
			dg := pc.diags.Errorf(pc.d.Pos(k), CodeSchemaEnum, "%q is not an error kind; the kinds are %s", k.Value, strings.Join(runner.ErrorKinds, ", "))
			dg.Hint, dg.End = didYouMean(k.Value, runner.ErrorKinds), endOf(pc.d.File, k)
		}
		out = append(out, k.Value)
	}
	return out
}

// deadRoute reports a route that follows a route without when, which
// always matches first: the route at r can never be taken.
func (pc *pipelineCheck) deadRoute(owner string, r *yaml.Node, route, always *Route) {
	if route.When == nil {
		pc.diags.Errorf(pc.d.Pos(r), CodeGraphDeadRoute, "%s has a second route without when (the first, to %q, is at line %d): the route to %q can never be taken",
			owner, always.To, always.Pos.Line, route.To).Hint = "give one of them a condition, or remove one"
		return
	}
	pc.diags.Errorf(pc.d.Pos(r), CodeGraphDeadRoute, "the route to %q can never be taken: the route to %q before it has no when and always matches",
		route.To, always.To).Hint = "move the route without when to the end of the list"
}

// where returns the position of a config value, or of the node's type when
// the value was preset by the node type rather than written.
func (pc *pipelineCheck) where(n *yaml.Node) Pos {
	if n != nil {
		return pc.d.Pos(n)
	}
	return pc.d.Pos(mapGet(pc.node.value, "type"))
}

// enterTyped gives the expressions inside a VarTyper's value the types
// it declares, on top of its node type's.
func (pc *pipelineCheck) enterTyped(t VarTyper) func() {
	vars, key := pc.vars, pc.varsKey
	typed := maps.Clone(vars)
	if typed == nil {
		typed = map[string]*Type{}
	}
	maps.Copy(typed, t.VarTypes(&NodeCheck{pc: pc}))
	pc.vars, pc.varsKey = typed, "@"+pc.node.Type+"@"+pc.varsSignature(typed)
	return func() { pc.vars, pc.varsKey = vars, key }
}

func (pc *pipelineCheck) visitExpression(e *Expression, want *Type, vars []string) {
	if e.node != nil {
		e.Program = pc.compile(pc.d, e.node, pc.p.Lang, pc.env(vars), want)
	}
}

// visitWrite compiles an expression whose value replaces state field f:
// it must give the field's type. (A reducer such as append or add takes
// other shapes; an undeclared field is reported at f.)
func (pc *pipelineCheck) visitWrite(f *FieldRef, e *Expression, vars []string) {
	var want *Type
	for _, fd := range pc.p.Fields {
		if fd.Name == f.Name && fd.Reducer == "replace" {
			want = fd.Type
		}
	}
	pc.visitExpression(e, want, vars)
}

func (pc *pipelineCheck) visitTemplate(t *TemplateText, vars []string) {
	if t.node != nil {
		t.Template = pc.template(pc.d, t.node, pc.p.Lang, pc.env(vars))
	}
}

func (pc *pipelineCheck) visitField(f *FieldRef) {
	if f.Name == "" {
		return
	}
	if pc.p.State.declares(f.Name) {
		return
	}
	msg := fmt.Sprintf("%s node %q writes state field %q, which is not declared", pc.node.Type, pc.node.Name, f.Name)
	d := pc.diags.Errorf(pc.where(f.node), CodeRefUndeclared, "%s", msg)
	if d.Hint = didYouMean(f.Name, pc.p.State.FieldNames()); d.Hint == "" {
		d.Hint = "declare it under state:"
	}
}

func (pc *pipelineCheck) visitTool(t *ToolRef) {
	if t.node != nil {
		pc.ref(pc.d, t.node, KindTool, "tool")
	}
}

func (pc *pipelineCheck) visitPipeline(p *PipelineRef) {
	pc.node.pipes = append(pc.node.pipes, p)
	if p.node != nil {
		pc.ref(pc.d, p.node, KindPipeline, "pipeline")
	}
}

func (pc *pipelineCheck) visitSchema(s *JSONSchemaDoc) {
	if s.node != nil {
		pc.jsonSchema(pc.d, s.node)
	}
}

func (pc *pipelineCheck) visitModel(m *ModelRef) {
	switch {
	case m.Name != "":
		pc.ref(pc.d, m.node, KindModel, "model")
	case pc.p.ownAgentModel == nil:
		pc.p.ownAgentModel = pc.node
	}
}

// conforms reports whether a default value has the declared type.
func conforms(v any, t *Type) bool {
	if v == nil {
		return true
	}
	switch t.Kind {
	case String:
		_, ok := v.(string)
		return ok
	case Integer:
		_, ok := v.(int64)
		return ok
	case Number:
		_, isInt := v.(int64)
		_, isFloat := v.(float64)
		return isInt || isFloat
	case Boolean:
		_, ok := v.(bool)
		return ok
	case Array:
		_, ok := v.([]any)
		return ok
	case Object:
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

// cleanDecodeError strips the YAML decoder's prefixes from err.
func cleanDecodeError(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	return strings.TrimSpace(s)
}
