package dsl

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/runner"
)

// agent checks an Agent's references and budget.
func (k *check) agent(d *Document) {
	a := &Agent{Doc: d, Name: d.Name, Pipeline: scalarValue(d.Get("pipeline")), Model: scalarValue(d.Get("model")),
		Persona: scalarValue(d.Get("persona"))}
	k.ref(d, d.Get("pipeline"), KindPipeline, "pipeline")
	if m := d.Get("model"); m != nil {
		k.ref(d, m, KindModel, "model")
	}
	a.Skills = k.refs(d, d.Get("skills"), KindSkill, "skill")
	a.Tools = k.refs(d, d.Get("tools"), KindTool, "tool")
	p := k.proj.Pipelines[a.Pipeline]
	k.agentModel(d, d.Get("pipeline"), a, p)
	for _, n := range items(d.Get("rules")) {
		if k.ref(d, n, KindRuleSet, "rule set") {
			a.Rules = append(a.Rules, n.Value)
			k.bindRules(d, n, n.Value, p)
		}
	}
	for _, n := range items(d.Get("skills")) {
		if s := k.byKind[KindSkill][n.Value]; s != nil {
			for _, rs := range items(s.Get("rules")) {
				k.bindRules(d, n, rs.Value, p)
			}
		}
	}
	a.Budget = k.budget(d, p)
	a.Schedule = k.schedule(d, p)
	a.Notify = k.notify(d, d.Get("notify"))
	k.proj.Agents[a.Name] = a
}

// schedule reads an agent's schedule: and checks each entry's cron
// expression and time zone, an error at the one that is wrong, and its
// input as a run of p checks it (as a Test's input is checked).
func (k *check) schedule(d *Document, p *Pipeline) []runner.Scheduled {
	var out []runner.Scheduled
	for _, n := range items(d.Get("schedule")) {
		var s runner.Scheduled
		if !k.decode(d, n, &s, "schedule") {
			continue
		}
		if p != nil {
			k.testInput(d, mapGet(n, "input"), n, p)
		}
		if _, err := runner.ParseSchedule(s.Cron, s.Timezone); err != nil {
			at := mapGet(n, "cron")
			if _, err := runner.ParseSchedule("@daily", s.Timezone); err != nil {
				at = mapGet(n, "timezone")
			}
			k.diags.Errorf(d.Pos(at), CodeSchemaValue, "%v", err)
			continue
		}
		out = append(out, s)
	}
	return out
}

// budget reads a document's budget: and checks its on_exceed against p.
func (k *check) budget(d *Document, p *Pipeline) runner.Budget {
	var b runner.Budget
	n := d.Get("budget")
	if n == nil {
		return b
	}
	k.decode(d, n, &b, "budget")
	k.onExceed(d, mapGet(n, "on_exceed"), p)
	if p != nil {
		k.repeatsLimit(d, mapGet(n, "max_steps"), b.MaxSteps > 0 && b.MaxSteps == p.MaxSteps, p, "max_steps")
		k.repeatsLimit(d, mapGet(n, "timeout"), b.Timeout > 0 && b.Timeout == p.Timeout, p, "timeout")
	}
	return b
}

// repeatsLimit warns about a budget value at n that repeats the
// pipeline's limit of the same name: a limit is declared once.
func (k *check) repeatsLimit(d *Document, n *yaml.Node, same bool, p *Pipeline, name string) {
	if n != nil && same {
		k.diags.Warnf(d.Pos(n), CodeBudgetLimit, "budget.%s repeats pipeline %q's limits.%s (%s)", name, p.Name, name, n.Value).Hint =
			"declare it once: leave it out here (the agent runs under the pipeline's limit), or set the tighter value the agent needs"
	}
}

// onExceed checks a budget's on_exceed: fail, interrupt or a node name.
func (k *check) onExceed(d *Document, n *yaml.Node, p *Pipeline) {
	if n == nil || k.bad(n) || n.Value == "fail" || n.Value == "interrupt" || p == nil || p.Node(n.Value) != nil {
		return
	}
	k.diags.Errorf(d.Pos(n), CodeRefUnknown, "budget.on_exceed must be fail, interrupt or a node of pipeline %q, not %q", p.Name, n.Value).Hint =
		didYouMean(n.Value, append(nodeNames(p), "fail", "interrupt"))
}

// tool checks a Tool: its parameter and return schemas compile, its
// expressions compile against its arguments.
func (k *check) tool(d *Document) {
	t := &ToolDef{Doc: d, Name: d.Name, Capability: scalarValue(d.Get("capability")), Builtin: scalarValue(d.Get("builtin"))}
	t.Description = scalarValue(mapGet(d.Get("metadata"), "description"))
	k.decode(d, d.Get("mutating"), &t.Mutating, "mutating")
	k.decode(d, d.Get("tags"), &t.Tags, "tags")
	k.decode(d, d.Get("updates_state"), &t.UpdatesState, "updates_state")
	k.decode(d, d.Get("timeout"), &t.Timeout, "timeout")
	t.Parameters = k.jsonSchema(d, d.Get("parameters"))
	k.jsonSchema(d, d.Get("returns"))
	lang := docLang(d, Expr)
	args := schemaType(t.Parameters)
	if e := d.Get("expr"); e != nil {
		t.Expr = k.compile(d, e, lang, k.env(map[string]*Type{"args": args, "state": {Kind: Object}}), nil)
	}
	if h := d.Get("http"); h != nil && !k.bad(h) { // a section with a schema error is skipped whole
		t.HTTP = k.httpTool(d, h, lang, args)
	}
	if m := d.Get("memory"); m != nil && !k.bad(m) {
		t.Memory = k.memoryTool(d, m, lang, args)
	}
	if a := d.Get("a2a"); a != nil && !k.bad(a) {
		t.A2A = k.a2aTool(d, a, args)
	}
	if b := d.Get("builtin"); b != nil && !k.bad(b) && !slices.Contains(k.reg.builtins, t.Builtin) {
		k.diags.Errorf(d.Pos(b), CodeRefUnknown, "unknown builtin tool %q", t.Builtin).Hint = hintOr(didYouMean(t.Builtin, k.reg.builtins),
			"the builtins are: "+strings.Join(k.reg.builtins, ", "))
	}
	k.proj.Tools[t.Name] = t
}

// a2aTool checks an a2a tool: an http(s) URL, and a message argument
// to send.
func (k *check) a2aTool(d *Document, a *yaml.Node, args *Type) *A2ADef {
	def := &A2ADef{}
	k.decode(d, a, def, "a2a")
	if u, err := url.Parse(def.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		k.diags.Errorf(d.Pos(mapGet(a, "url")), CodeSchemaValue, "a2a.url %q is not an http(s) URL", def.URL).Hint =
			"give the remote agent's A2A JSON-RPC endpoint, such as http://agents.example:2024/a2a/ASSISTANT_ID"
	}
	if args == nil || args.Fields["message"] == nil {
		k.diags.Errorf(d.Pos(d.Get("parameters")), CodeSchemaValue, "an a2a tool's parameters must declare message, the text it sends").Hint =
			"parameters: {type: object, properties: {message: {type: string}, context_id: {type: string}}, required: [message]}"
	}
	return def
}

func (k *check) httpTool(d *Document, h *yaml.Node, lang Lang, args *Type) *HTTPDef {
	def := &HTTPDef{Method: scalarValue(mapGet(h, "method")), Headers: map[string]*Template{}, Secrets: map[string]string{}}
	if def.Method == "" {
		def.Method = "GET"
	}
	k.decode(d, mapGet(h, "allow_hosts"), &def.AllowHosts, "http.allow_hosts")
	secrets := ObjectOf(map[string]*Type{})
	pairs(mapGet(h, "secrets"), func(key, v *yaml.Node) {
		secrets.Fields[key.Value] = StringType
		def.Secrets[key.Value] = v.Value
	})
	env := k.env(map[string]*Type{"args": args, "secrets": secrets})
	templ := func(n *yaml.Node) *Template { return k.template(d, n, lang, env) }
	def.URL = templ(mapGet(h, "url"))
	k.httpURL(d, mapGet(h, "url"), def)
	pairs(mapGet(h, "headers"), func(key, v *yaml.Node) { def.Headers[key.Value] = templ(v) })
	if b := mapGet(h, "body"); b != nil {
		def.Body = k.compile(d, b, lang, k.env(map[string]*Type{"args": args}), nil)
	}
	if r := mapGet(h, "response"); r != nil {
		resp := ObjectOf(map[string]*Type{"status": IntegerType, "headers": {Kind: Object}, "body": AnyType})
		def.Response = k.compile(d, r, lang, k.env(map[string]*Type{"args": args, "response": resp}), nil)
	}
	return def
}

// memoryTool checks a memory tool: its expressions compile against its
// arguments and the state, its namespace to a list of strings.
func (k *check) memoryTool(d *Document, m *yaml.Node, lang Lang, args *Type) *MemoryDef {
	def := &MemoryDef{Op: scalarValue(mapGet(m, "op"))}
	pairs(m, func(key, _ *yaml.Node) {
		if ops := memoryKeys[key.Value]; ops != "" && def.Op != "" && !strings.Contains(ops, def.Op) {
			k.diags.Errorf(d.Pos(key), CodeSchemaUnknownField, "memory.%s is not used by op %s (only by %s)", key.Value, def.Op, ops).Hint =
				"remove it, or use the op that reads it"
		}
	})
	k.decode(d, mapGet(m, "ttl"), &def.TTL, "memory.ttl")
	env := k.env(map[string]*Type{"args": args, "state": {Kind: Object}})
	expr := func(key string, want *Type) *Program { return k.compile(d, mapGet(m, key), lang, env, want) }
	def.Namespace = expr("namespace", ArrayOf(StringType))
	def.Key, def.Value = expr("key", StringType), expr("value", &Type{Kind: Object})
	def.Filter, def.Limit = expr("filter", &Type{Kind: Object}), expr("limit", IntegerType)
	if r := mapGet(m, "response"); r != nil {
		def.Response = k.compile(d, r, lang, k.env(map[string]*Type{"args": args, "result": AnyType}), nil)
	}
	return def
}

// memoryKeys are the memory tool's keys that only some ops use.
var memoryKeys = map[string]string{"key": "get, put", "value": "put", "ttl": "put", "filter": "search", "limit": "search"}

// jsonSchema checks that n is a valid JSON Schema whose references stay
// inside it (see checkSchemaRefs) and returns it decoded.
func (k *check) jsonSchema(d *Document, n *yaml.Node) map[string]any {
	if n == nil || k.bad(n) {
		return nil
	}
	doc, ok := toJSON(n).(map[string]any)
	// A schema that is not a mapping is reported by the document schema;
	// one whose references leave it is not compiled.
	if !ok || k.checkSchemaRefs(d, n) {
		return doc
	}
	if err := k.compileJSONSchema(doc); err != nil {
		k.jsonSchemaError(d, n, err)
	}
	return doc
}

// jsonSchemaError reports why the JSON Schema at n does not compile: each
// place the metaschema refuses, at that place, in the words of the
// document checks; any other error at the schema.
func (k *check) jsonSchemaError(d *Document, n *yaml.Node, err error) {
	var ve *jsonschema.ValidationError
	if sve, ok := errors.AsType[*jsonschema.SchemaValidationError](err); ok {
		ve, _ = sve.Err.(*jsonschema.ValidationError)
	}
	if ve == nil {
		k.diags.Errorf(d.Pos(n), CodeSchemaJSONSchema, "not a valid JSON Schema: %v", err)
		return
	}
	from := len(k.diags)
	where := pathTo(d.Root, n)
	for _, leaf := range k.schemas.leaves(ve) {
		at := *leaf // the error is kept for the next schema of the same text
		at.InstanceLocation = append(slices.Clip(where), leaf.InstanceLocation...)
		k.schemas.report(d, &at, &k.diags)
	}
	for i := from; i < len(k.diags); i++ {
		k.diags[i].Code, k.diags[i].Message = CodeSchemaJSONSchema, "not a valid JSON Schema: "+k.diags[i].Message
	}
}

// pathTo returns the location of n under root, as JSON instance tokens.
func pathTo(root, n *yaml.Node) []string {
	if root == n {
		return []string{}
	}
	for i, c := range root.Content {
		if root.Kind == yaml.MappingNode && i%2 == 0 {
			continue
		}
		if p := pathTo(c, n); p != nil {
			tok := strconv.Itoa(i)
			if root.Kind == yaml.MappingNode {
				tok = root.Content[i-1].Value
			}
			return append([]string{tok}, p...)
		}
	}
	return nil
}

// compileJSONSchema compiles doc as the runtime compiles it and returns
// the error. Its outcome depends on doc alone, so a schema repeated across
// documents is compiled once per Check.
func (k *check) compileJSONSchema(doc map[string]any) error {
	text, err := json.Marshal(doc)
	if err != nil { // not JSON (a NaN): compiled, not remembered
		_, err := CompileJSONSchema(doc)
		return err
	}
	if err, ok := k.jsonSchemas[string(text)]; ok {
		return err
	}
	_, err = CompileJSONSchema(doc)
	k.jsonSchemas[string(text)] = err
	return err
}

// schemaType turns a JSON Schema object into the type expressions see.
func schemaType(s map[string]any) *Type {
	props, ok := s["properties"].(map[string]any)
	if !ok {
		return &Type{Kind: Object}
	}
	t := ObjectOf(map[string]*Type{})
	for name, p := range props {
		t.Fields[name] = jsonType(p)
	}
	return t
}

// JSONSchemaType returns the type expressions see of a value a JSON Schema
// describes: its type, items and properties; any when it is nil or says
// no more.
func JSONSchemaType(schema map[string]any) *Type { return jsonType(schema) }

func jsonType(p any) *Type {
	m, _ := p.(map[string]any)
	kind, _ := m["type"].(string)
	switch Kind(kind) {
	case String, Integer, Number, Boolean:
		return &Type{Kind: Kind(kind)}
	case Array:
		return ArrayOf(jsonType(m["items"]))
	case Object:
		return schemaType(m)
	}
	return AnyType
}

// skill checks a Skill's references and context templates.
func (k *check) skill(d *Document) {
	s := &SkillDef{Doc: d, Name: d.Name, Persona: scalarValue(d.Get("persona")),
		Tools:    k.refs(d, d.Get("tools"), KindTool, "tool"),
		Rules:    k.refs(d, d.Get("rules"), KindRuleSet, "rule set"),
		Requires: k.refs(d, d.Get("requires"), KindSkill, "skill")}
	lang := docLang(d, Expr)
	env := k.env(map[string]*Type{"state": {Kind: Object}, "agent": agentVar, "user": {Kind: Object}})
	for _, c := range items(d.Get("context")) {
		s.Context = append(s.Context, k.template(d, c, lang, env))
	}
	k.proj.Skills[s.Name] = s
}

// model checks a Model document.
func (k *check) model(d *Document) {
	m := &ModelDef{Doc: d, Name: d.Name, Provider: scalarValue(d.Get("provider")), ID: scalarValue(d.Get("model")),
		BaseURL: scalarValue(d.Get("base_url")), APIKeyEnv: scalarValue(d.Get("api_key_env"))}
	if m.ID == "" {
		m.ID = m.Name
	}
	k.decode(d, d.Get("pricing"), &m.Pricing, "pricing")
	k.decode(d, d.Get("context_window"), &m.Context, "context_window")
	k.decode(d, d.Get("params"), &m.Params, "params")
	k.baseURL(d, d.Get("base_url"))
	k.proj.Models[m.Name] = m
}

// test checks a Test's target, mocks, expected path and assertions.
func (k *check) test(d *Document) {
	var p *Pipeline
	if n := d.Get("pipeline"); n != nil && k.ref(d, n, KindPipeline, "pipeline") {
		p = k.proj.Pipelines[n.Value]
	}
	if n := d.Get("agent"); n != nil && k.ref(d, n, KindAgent, "agent") {
		if a := k.proj.Agents[n.Value]; a != nil {
			p = k.proj.Pipelines[a.Pipeline]
		}
	}
	pairs(d.Get("mocks"), func(key, _ *yaml.Node) { k.ref(d, key, KindTool, "tool") })
	k.refs(d, mapGet(d.Get("expect"), "tool_calls"), KindTool, "tool")
	if p == nil {
		return
	}
	if n := d.Get("pipeline"); n != nil {
		k.testModel(d, n, p)
	}
	names := append(nodeNames(p), End)
	for _, n := range items(mapGet(d.Get("expect"), "path")) {
		if !k.bad(n) && p.Node(n.Value) == nil {
			k.diags.Errorf(d.Pos(n), CodeRefUnknown, "pipeline %q has no node %q", p.Name, n.Value).Hint = didYouMean(n.Value, names)
		}
	}
	env := k.env(map[string]*Type{"state": p.State, "output": {Kind: Object}, "status": StringType, "error": StringType, "usage": usageType})
	t := &TestDef{Doc: d, Name: d.Name, Pipeline: p.Name, Agent: scalarValue(d.Get("agent")), Tenant: scalarValue(d.Get("tenant")),
		Mocks: map[string][]Mock{}}
	t.Input = k.testInput(d, d.Get("input"), cmp.Or(mapKey(d.Root, "agent"), mapKey(d.Root, "pipeline")), p)
	for i, n := range items(d.Get("before")) {
		run := TestRun{Input: k.testInput(d, mapGet(n, "input"), n, p), Pos: d.Pos(n)}
		k.decode(d, mapGet(n, "script"), &run.Script, fmt.Sprintf("before[%d].script", i))
		t.Before = append(t.Before, run)
	}
	pairs(d.Get("mocks"), func(key, v *yaml.Node) {
		var m Mock
		if v.Kind != yaml.SequenceNode {
			k.decode(d, v, &m, "mocks."+key.Value)
			t.Mocks[key.Value] = []Mock{m}
			return
		}
		var ms []Mock
		k.decode(d, v, &ms, "mocks."+key.Value)
		t.Mocks[key.Value] = ms
	})
	k.decode(d, d.Get("script"), &t.Script, "script")
	for i, n := range items(d.Get("resume")) {
		var r ResumeStep
		k.decode(d, n, &r, fmt.Sprintf("resume[%d]", i))
		r.Value, r.Pos = runner.NormalizeJSON(toJSON(orEmpty(mapGet(n, "value")))), d.Pos(n)
		if mapGet(n, "value") == nil {
			r.Value = nil
		}
		t.Resume = append(t.Resume, r)
	}
	ex := d.Get("expect")
	t.Expect.At = map[string]Pos{}
	pairs(ex, func(key, v *yaml.Node) { t.Expect.At[key.Value] = d.Pos(v) })
	for i, a := range items(mapGet(ex, "assert")) {
		t.Expect.At[fmt.Sprintf("assert.%d", i)] = d.Pos(a)
	}
	t.Expect.Status = scalarValue(mapGet(ex, "status"))
	k.decode(d, mapGet(ex, "path"), &t.Expect.Path, "expect.path")
	k.decode(d, mapGet(ex, "tool_calls"), &t.Expect.ToolCalls, "expect.tool_calls")
	k.decode(d, mapGet(ex, "tool_runs"), &t.Expect.ToolRuns, "expect.tool_runs")
	if n := mapGet(ex, "approval"); n != nil {
		t.Expect.Approval = &ExpectApproval{}
		k.decode(d, n, t.Expect.Approval, "expect.approval")
		t.Expect.Approval.Args, _ = runner.NormalizeJSON(toJSON(orEmpty(mapGet(n, "args")))).(map[string]any)
		k.toolArgs(d, mapGet(n, "args"), t.Expect.Approval.Tool, t.Expect.Approval.Args)
	}
	pairs(mapGet(ex, "tool_runs"), func(key, _ *yaml.Node) { k.ref(d, key, KindTool, "tool") })
	for _, a := range items(mapGet(ex, "assert")) {
		t.Expect.Assert = append(t.Expect.Assert, &Expression{Program: k.compile(d, a, docLang(d, Expr), env, BoolType), node: a})
	}
	k.proj.Tests = append(k.proj.Tests, t)
}

// testInput reads a Test's or a schedule's input n and checks it as a
// run of p checks it, reporting each field that does not fit at its own line:col, and a
// required field missing at the input (at at, when there is none).
func (k *check) testInput(d *Document, n, at *yaml.Node, p *Pipeline) map[string]any {
	if k.bad(n) {
		return nil
	}
	var v any
	if n == nil {
		n = at
	} else {
		v = runner.NormalizeJSON(toJSON(n))
	}
	input, problems := p.checkInput(v)
	for _, pr := range problems {
		k.diags.Errorf(d.Pos(pr.node(n)), CodeInputType, "%s", pr.Text()).Hint = pr.Hint
	}
	return input
}

func orEmpty(n *yaml.Node) *yaml.Node {
	if n == nil {
		return &yaml.Node{Kind: yaml.MappingNode}
	}
	return n
}

// subgraphCycles reports pipelines that contain themselves through
// subgraph nodes, which could never finish.
func (k *check) subgraphCycles() {
	deps := map[string][]*PipelineRef{}
	for name, p := range k.proj.Pipelines {
		for _, n := range p.Nodes {
			deps[name] = append(deps[name], n.pipelineRefs()...)
		}
	}
	for name, p := range k.proj.Pipelines {
		for _, r := range deps[name] {
			if pipelineReaches(deps, r.Name, name, map[string]bool{}) {
				k.diags.Errorf(p.Doc.Pos(r.node), CodeRefSubgraph, "pipeline %q contains itself through subgraph %q", name, r.Name)
			}
		}
	}
}

func pipelineReaches(deps map[string][]*PipelineRef, from, target string, seen map[string]bool) bool {
	if from == target {
		return true
	}
	if seen[from] {
		return false
	}
	seen[from] = true
	for _, r := range deps[from] {
		if pipelineReaches(deps, r.Name, target, seen) {
			return true
		}
	}
	return false
}
