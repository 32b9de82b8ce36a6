package dsl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/runner"
)

// CompileOptions are what Compile needs besides the checked project.
type CompileOptions struct {
	// Tool builds a runtime tool from its definition (builtins.Tool).
	Tool func(*ToolDef) (runner.Tool, error)
	// Mocks replace tools by name (runner test).
	Mocks map[string]runner.Tool
	// Agent, when set, is the agent the graph runs for: its budget
	// overrides the pipeline's, and prompt and llm nodes use its model,
	// persona, skills and tools.
	Agent *Agent
	// Provider builds the LLM provider of a model (builtins.Provider).
	Provider func(*ModelDef) (runner.Provider, error)
	// Budget overrides the agent's budget field by field (RUNNER_BUDGET_*).
	Budget runner.Budget
}

// Model is a model with its provider, as llm nodes call it.
type Model struct {
	Def      *ModelDef
	Provider runner.Provider
}

// Build is what a node type's Build function sees: the node being built
// and access to the tools and pipelines it refers to.
type Build struct {
	Project  *Project
	Pipeline *Pipeline
	Node     *Node
	// Agent is the agent the graph runs for; nil for a bare pipeline.
	Agent *Agent
	c     *graphCompiler
}

// Model returns the model called name, or the agent's model when name is
// empty.
func (b *Build) Model(name string) (*Model, error) {
	if name == "" && b.Agent != nil {
		name = b.Agent.Model
	}
	if name == "" {
		return nil, &codedError{CodeCompileModel, errors.New("no model: set model: on the node, or run the pipeline through an agent that has one")}
	}
	return b.c.model(name)
}

// Skill returns the skill called name, counting it among the definitions
// the graph depends on.
func (b *Build) Skill(name string) *SkillDef {
	s := b.Project.Skills[name]
	if s != nil {
		b.c.defs[KindSkill+"/"+name] = hashDoc(s.Doc)
	}
	return s
}

// HasField reports whether the node's pipeline declares a state field.
func (b *Build) HasField(name string) bool { return b.Pipeline.State.Fields[name] != nil }

// Tool returns the runtime tool called name.
func (b *Build) Tool(name string) (*runner.ToolSpec, error) { return b.c.tool(name) }

// Graph returns the compiled pipeline called name (for subgraphs).
func (b *Build) Graph(name string) (*runner.Graph, error) { return b.c.graph(name) }

// Reducer returns the reducer of a state field of the node's pipeline.
func (b *Build) Reducer(field string) runner.Reducer {
	for _, f := range b.Pipeline.Fields {
		if f.Name == field {
			return runner.Reducers[f.Reducer]
		}
	}
	return runner.Replace
}

// graphCompiler compiles one target and what it depends on, once each.
type graphCompiler struct {
	reg    *Registry
	proj   *Project
	opt    CompileOptions
	graphs map[string]*runner.Graph
	tools  map[string]*runner.ToolSpec
	models map[string]*Model
	defs   map[string]string
	// at is the node being built ("pipeline p → node n"); uses, the nodes
	// that call each tool.
	at   string
	uses map[string][]string
}

// Compile compiles the pipeline called name, with the pipelines it runs as
// subgraphs and the tools it calls. The project must have checked without
// errors. The graph is immutable and safe to run for many threads at once.
// What it refuses depends on how the graph is run (an API key that is not
// set, a scripted model without a script); it is returned as Diagnostics
// holding one error, at the node or rule that needed it, with a code of
// the compile phase.
func (c *Checker) Compile(proj *Project, name string, opt CompileOptions) (*runner.Graph, error) {
	g, _, err := c.compile(proj, name, opt)
	return g, err
}

// compile is Compile, returning the compiler too: it knows which nodes
// call which tools.
func (c *Checker) compile(proj *Project, name string, opt CompileOptions) (*runner.Graph, *graphCompiler, error) {
	cc := &graphCompiler{reg: c.reg, proj: proj, opt: opt, graphs: map[string]*runner.Graph{},
		tools: map[string]*runner.ToolSpec{}, models: map[string]*Model{}, defs: map[string]string{}, uses: map[string][]string{}}
	g, err := cc.graph(name)
	if err != nil {
		return nil, nil, err
	}
	b := proj.Pipelines[name].Budget
	g.Notify = proj.Pipelines[name].Notify
	if a := opt.Agent; a != nil {
		b = b.Over(a.Budget)
		g.Notify = union(g.Notify, a.Notify)
		cc.defs[KindAgent+"/"+a.Name] = hashDoc(a.Doc)
		g.Schedule = a.Schedule
	}
	g.Budget = b.Over(opt.Budget)
	rules, err := cc.rules(proj.Pipelines[name], opt.Agent)
	if err != nil {
		return nil, nil, err
	}
	var agent *runner.AgentInfo
	if a := opt.Agent; a != nil {
		agent = &runner.AgentInfo{Name: a.Name, Model: a.Model, Skills: a.Skills}
	}
	red := runner.NewRedactor(cc.secrets()...)
	for _, sub := range cc.graphs { // subgraphs obey the same rules and keep the same secrets
		sub.Rules, sub.Agent, sub.Redact, sub.Tools = rules, agent, red, cc.tools
	}
	g.Defs = cc.defs
	g.Hash = hashDefs(cc.defs)
	g.InputSchema = proj.Pipelines[name].InputSchema()
	g.Description = descriptionOf(proj.Pipelines[name].Doc)
	if a := opt.Agent; a != nil && descriptionOf(a.Doc) != "" {
		g.Description = descriptionOf(a.Doc)
	}
	g.About = about(proj.Pipelines[name], cc.tools)
	return g, cc, nil
}

func (c *graphCompiler) graph(name string) (*runner.Graph, error) {
	if g, ok := c.graphs[name]; ok {
		return g, nil
	}
	p := c.proj.Pipelines[name]
	if p == nil {
		return nil, compileError(Pos{}, CodeRefUnknown, fmt.Errorf("no pipeline named %q", name))
	}
	g := &runner.Graph{Name: name, Start: p.Start, StartRoutes: compileRoutes(p.StartRoutes), MaxSteps: p.MaxSteps, Timeout: p.Timeout,
		OnTimeout: p.OnTimeout, OnError: p.OnError, HandlerTimeout: p.HandlerTimeout,
		InterruptBefore: p.InterruptBefore, InterruptAfter: p.InterruptAfter, Durability: p.Durability,
		Fields: map[string]runner.Field{}, Nodes: map[string]*runner.Step{}, CheckInput: p.CheckInput, CheckState: p.CheckState}
	if p.DeclaresConfig() {
		g.Configure = p.Configure
	}
	c.graphs[name] = g // before the nodes: subgraph cycles are refused by Check
	c.defs[KindPipeline+"/"+name] = hashDoc(p.Doc)
	for _, f := range p.Fields {
		g.Fields[f.Name] = runner.Field{Reducer: runner.Reducers[f.Reducer], Default: f.Default, PerTurn: f.PerTurn}
	}
	for _, n := range p.Nodes {
		s, err := c.step(p, n)
		if err != nil {
			if _, ok := errors.AsType[Diagnostics](err); ok { // a subgraph's node, reported where it is
				return nil, err
			}
			return nil, compileError(n.Pos, codeOf(err), fmt.Errorf("node %s: %w", n.Name, err))
		}
		g.Nodes[n.Name] = s
	}
	if len(p.Output) > 0 {
		g.Output = outputOf(p.Output)
	}
	return g, nil
}

func (c *graphCompiler) step(p *Pipeline, n *Node) (*runner.Step, error) {
	nt, _ := c.reg.Lookup(n.Type)
	if nt.Build == nil {
		return nil, fmt.Errorf("node type %s cannot run", n.Type)
	}
	outer := c.at
	c.at = "pipeline " + p.Name + " → node " + n.Name
	defer func() { c.at = outer }()
	node, err := nt.Build(n.Config, &Build{Project: c.proj, Pipeline: p, Node: n, Agent: c.opt.Agent, c: c})
	if err != nil {
		return nil, err
	}
	s := &runner.Step{Name: n.Name, Type: n.Type, Node: node, Timeout: n.Timeout}
	for _, c := range n.OnError {
		s.OnError = append(s.OnError, runner.Catch{When: c.When, To: c.To})
	}
	if n.Retry != nil {
		s.Retry = runner.Retry{MaxAttempts: n.Retry.MaxAttempts, Backoff: n.Retry.Backoff, MaxBackoff: n.Retry.MaxBackoff, On: n.Retry.On}
	}
	s.Routes = compileRoutes(n.Next)
	return s, nil
}

// compileRoutes turns checked routes into the runtime's.
func compileRoutes(routes []*Route) []runner.Route {
	var out []runner.Route
	for _, r := range routes {
		rt := runner.Route{To: r.To}
		if r.When != nil {
			rt.When = r.When.Program
		}
		out = append(out, rt)
	}
	return out
}

func (c *graphCompiler) tool(name string) (*runner.ToolSpec, error) {
	if !slices.Contains(c.uses[name], c.at) {
		c.uses[name] = append(c.uses[name], c.at)
	}
	if t, ok := c.tools[name]; ok {
		return t, nil
	}
	def := c.proj.Tools[name]
	if def == nil {
		return nil, fmt.Errorf("no tool named %q", name)
	}
	spec := &runner.ToolSpec{Name: name, Description: def.Description, Parameters: def.Parameters, Capability: def.Capability,
		Mutating: def.Mutating, Tags: def.Tags, UpdatesState: def.UpdatesState, Timeout: def.Timeout}
	var err error
	switch {
	case c.opt.Mocks[name] != nil:
		spec.Tool = c.opt.Mocks[name]
	case c.opt.Tool != nil:
		spec.Tool, err = c.opt.Tool(def)
	default:
		err = fmt.Errorf("no tool implementations were given to the compiler")
	}
	if err != nil {
		return nil, &codedError{CodeCompileBuild, fmt.Errorf("tool %s: %w", name, err)}
	}
	c.tools[name] = spec
	c.defs[KindTool+"/"+name] = hashDoc(def.Doc)
	return spec, nil
}

func (c *graphCompiler) model(name string) (*Model, error) {
	if m, ok := c.models[name]; ok {
		return m, nil
	}
	def := c.proj.Models[name]
	if def == nil {
		return nil, fmt.Errorf("no model named %q", name)
	}
	if c.opt.Provider == nil {
		return nil, fmt.Errorf("no LLM providers were given to the compiler")
	}
	p, err := c.opt.Provider(def)
	if err != nil {
		return nil, &codedError{CodeCompileModel, fmt.Errorf("model %s: %w", name, err)}
	}
	m := &Model{Def: def, Provider: p}
	c.models[name] = m
	c.defs[KindModel+"/"+name] = hashDoc(def.Doc)
	return m, nil
}

// secrets are the secrets the compiled tools and models hold.
func (c *graphCompiler) secrets() []string {
	var out []string
	for _, t := range c.tools {
		if k, ok := t.Tool.(runner.SecretKeeper); ok {
			out = append(out, k.Secrets()...)
		}
	}
	for _, m := range c.models {
		if k, ok := m.Provider.(runner.SecretKeeper); ok {
			out = append(out, k.Secrets()...)
		}
	}
	return out
}

// output evaluates a pipeline's output mapping.
type output map[string]*Program

func outputOf(m map[string]*Expression) output {
	o := output{}
	for k, e := range m {
		o[k] = e.Program
	}
	return o
}

// Eval computes every output field.
func (o output) Eval(vars map[string]any) (any, error) {
	out := make(map[string]any, len(o))
	for k, p := range o {
		v, err := p.Eval(vars)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// hashDoc hashes a document's content (not its layout or comments).
func hashDoc(d *Document) string {
	b, _ := yaml.Marshal(stripComments(d.Root))
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func stripComments(n *yaml.Node) *yaml.Node {
	cp := *n
	cp.HeadComment, cp.LineComment, cp.FootComment = "", "", ""
	cp.Content = make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		cp.Content[i] = stripComments(c)
	}
	return &cp
}

func hashDefs(defs map[string]string) string {
	keys := make([]string, 0, len(defs))
	for k := range defs {
		keys = append(keys, k+"="+defs[k])
	}
	sort.Strings(keys)
	sum := sha256.Sum256([]byte(strings.Join(keys, "\n")))
	return hex.EncodeToString(sum[:8])
}

// codedError is an error of the compile phase that knows its code.
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// codeOf returns the code of the first codedError in err's chain, else
// CodeCompileBuild.
func codeOf(err error) string {
	if ce, ok := errors.AsType[*codedError](err); ok {
		return ce.code
	}
	return CodeCompileBuild
}

// compileError returns err as Diagnostics holding one error at pos.
func compileError(pos Pos, code string, err error) Diagnostics {
	return Diagnostics{{Pos: pos, Severity: Error, Code: code, Message: err.Error()}}
}

// union is a's names, then b's not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
