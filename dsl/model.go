package dsl

import (
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/runner"
)

// Document kinds.
const (
	KindPipeline = "Pipeline"
	KindAgent    = "Agent"
	KindRuleSet  = "RuleSet"
	KindSkill    = "Skill"
	KindTool     = "Tool"
	KindModel    = "Model"
	KindTest     = "Test"
	// KindMCPServer is a Model Context Protocol server whose tools the
	// project uses.
	KindMCPServer = "MCPServer"
)

// End is the name routes use to finish a run.
const End = "END"

// Project is a checked set of definitions, by kind and name.
type Project struct {
	Pipelines map[string]*Pipeline
	Agents    map[string]*Agent
	RuleSets  map[string]*RuleSet
	Tools     map[string]*ToolDef
	Models    map[string]*ModelDef
	Skills    map[string]*SkillDef
	// MCPServers are the MCP servers; each tool they offer is in Tools.
	MCPServers map[string]*MCPServerDef
	Tests      []*TestDef
	Docs       []*Document
	// notify are the notify: entries, each a webhook's name (CheckHooks).
	notify []docNode
}

// docNode is a node of a document.
type docNode struct {
	d *Document
	n *yaml.Node
}

// CheckHooks reports, at its line, each notify: entry that names none of
// hooks, the webhooks of the project's settings.
func (p *Project) CheckHooks(hooks []string) Diagnostics {
	var ds Diagnostics
	for _, r := range p.notify {
		if !slices.Contains(hooks, r.n.Value) {
			ds.Errorf(r.d.Pos(r.n), CodeRefUnknown, "notify names webhook %q, which runner.yaml's webhooks do not define", r.n.Value).Hint =
				hintOr(didYouMean(r.n.Value, hooks), "define it under webhooks: in runner.yaml (name, url, secret_env)")
		}
	}
	return ds
}

// TestDef is a checked Test document.
type TestDef struct {
	Doc      *Document
	Name     string
	Pipeline string // the pipeline run: the target's, for an agent
	Agent    string
	Input    map[string]any
	Tenant   string
	// Mocks replace tools: the n-th call of a tool gets its n-th mock, the
	// last one repeating.
	Mocks  map[string][]Mock
	Script []Reply
	// Before are runs made first, each on a thread of its own, with the
	// Test's store (its long-term memory too), clock and mocks; each must
	// complete.
	Before []TestRun
	Resume []ResumeStep
	Expect Expect
}

// TestRun is a run a Test makes before its own: its input, and the
// script its models answer from.
type TestRun struct {
	Input  map[string]any
	Script []Reply
	Pos    Pos
}

// Reply is one scripted LLM reply (runner test, exec --script).
type Reply struct {
	Node      string         `yaml:"node"`
	Text      string         `yaml:"text"`
	ToolCalls []ScriptedCall `yaml:"tool_calls"`
	Output    any            `yaml:"output"`
	Usage     *ScriptedUsage `yaml:"usage"`
	Error     *ScriptedError `yaml:"error"`
	Delay     time.Duration  `yaml:"delay"`
}

// ScriptedCall is a tool call in a scripted reply; Args is an object, or
// a string of raw JSON (to script a malformed call).
type ScriptedCall struct {
	ID   string `yaml:"id"`
	Name string `yaml:"name"`
	Args any    `yaml:"args"`
}

// ScriptedUsage is the usage a scripted reply reports.
type ScriptedUsage struct {
	Input  int64 `yaml:"input"`
	Output int64 `yaml:"output"`
	Cached int64 `yaml:"cached"`
}

// ScriptedError makes a scripted call fail as a provider would.
type ScriptedError struct {
	Status     int           `yaml:"status"`
	Message    string        `yaml:"message"`
	RetryAfter time.Duration `yaml:"retry_after"`
}

// Mock replaces a tool in a test: a result, an error, after a delay.
type Mock struct {
	Result any           `yaml:"result"`
	Error  string        `yaml:"error"`
	Delay  time.Duration `yaml:"delay"`
}

// ResumeStep is the value a paused test run is resumed with; Approve is
// shorthand for {"approved": ...}. After moves the test's clock forward
// first (gate expiry); Refused expects the resume to be refused with an
// error containing it, leaving the thread as it was. As and Roles are the
// principal the resume acts as: who decides a gate (unnamed and without
// roles when not given).
type ResumeStep struct {
	Value   any           `yaml:"value"`
	Approve *bool         `yaml:"approve"`
	After   time.Duration `yaml:"after"`
	Refused string        `yaml:"refused"`
	As      string        `yaml:"as"`
	Roles   []string      `yaml:"roles"`
	Pos     Pos           `yaml:"-"`
}

// Expect is what a test checks after its last step.
type Expect struct {
	Status    string
	Path      []string
	ToolCalls []string
	// ToolRuns counts how often each tool ran (was really called).
	ToolRuns map[string]int
	// Approval is the approval the thread must be paused at.
	Approval *ExpectApproval
	Assert   []*Expression
	// At is where each expectation is written: "status", "path",
	// "tool_calls", "tool_runs", "approval", and "assert.N" for the N-th
	// assertion (from 0); a failing Test points there.
	At map[string]Pos
}

// ExpectApproval is a pending approval a test expects: the gated tool,
// its arguments (those given must match), the rule and checkpoint type.
type ExpectApproval struct {
	Tool           string         `yaml:"tool"`
	Args           map[string]any `yaml:"args"`
	Rule           string         `yaml:"rule"`
	CheckpointType string         `yaml:"checkpoint_type"`
}

// ToolDef is a checked Tool document.
type ToolDef struct {
	Doc          *Document
	Name         string
	Description  string
	Capability   string
	Mutating     bool
	Tags         []string
	UpdatesState bool
	Timeout      time.Duration
	// Parameters is the JSON Schema of the arguments, decoded.
	Parameters map[string]any
	// Exactly one implementation is set.
	Expr    *Program
	HTTP    *HTTPDef
	Builtin string
	MCP     *MCPTool // a tool of an MCP server (Doc is the server's)
	Memory  *MemoryDef
	A2A     *A2ADef
}

// A2ADef is an a2a tool's remote agent: the A2A JSON-RPC endpoint the
// call's message is sent to, and the environment variable holding the
// API key sent to it as a bearer token (none when empty).
type A2ADef struct {
	URL       string `yaml:"url"`
	APIKeyEnv string `yaml:"api_key_env"`
}

// MemoryDef is a memory tool's operation on the long-term memory store:
// get, put or search the items of a namespace. Its expressions are over
// args and state (Response over args and result); each left out takes
// the argument of its name.
type MemoryDef struct {
	Op string // get, put or search
	// Namespace gives the namespace's labels, such as ["user",
	// state.user_id]: a search's prefix.
	Namespace *Program
	// Key (get, put; default args.key, for a put else the call's
	// idempotency key), Value (put; default args.value, else the whole
	// args), Filter and Limit (search; default args.filter, args.limit).
	Key, Value, Filter, Limit *Program
	// TTL is how long a put item lives after its last write or read (0:
	// for ever).
	TTL time.Duration
	// Response maps the operation's result to the tool's output.
	Response *Program
}

// Memory operations.
const (
	MemoryGet    = "get"
	MemoryPut    = "put"
	MemorySearch = "search"
)

// HTTPDef is an http tool's request and response mapping.
type HTTPDef struct {
	Method     string
	URL        *Template
	Headers    map[string]*Template
	Body       *Program // over args
	Response   *Program // over args and response {status, headers, body}
	AllowHosts []string
	// Secrets maps names usable as ${secrets.NAME} to environment variables.
	Secrets map[string]string
}

// Pipeline is a checked Pipeline document.
type Pipeline struct {
	Doc      *Document
	Name     string
	Lang     Lang
	Fields   []*Field
	State    *Type // a closed object of Fields
	Input    *Type
	MaxSteps int
	Timeout  time.Duration
	// OnTimeout and OnError name the pipeline's handlers: the node that
	// runs once when a run would end timed out (failed), within
	// HandlerTimeout. InterruptBefore and InterruptAfter list the nodes a
	// thread pauses before (after).
	OnTimeout       string
	OnError         string
	HandlerTimeout  time.Duration
	InterruptBefore []string
	InterruptAfter  []string
	// Durability is when a step's checkpoint reaches the store (sync,
	// async, exit; "": sync).
	Durability string
	// Start is the node a run starts at, or "" when StartRoutes choose
	// it: the first whose condition holds over the run's first state.
	Start       string
	StartRoutes []*Route
	Nodes       []*Node
	Output      map[string]*Expression
	// Budget holds the defaults of the agents running this pipeline.
	Budget runner.Budget
	// Notify names the webhooks told of its runs' approval events and ends.
	Notify []string
	// AgentModel is the first node, of this pipeline or of one it runs as
	// a subgraph, that calls the agent's model (an llm node without
	// model:); nil when none does. Such a pipeline runs only through an
	// agent that has a model.
	AgentModel    *Node
	ownAgentModel *Node // of this pipeline's own nodes
	// InputRequired lists the declared input fields every new run must
	// carry; InputDefaults holds the values of those a run may leave out.
	InputRequired []string
	InputDefaults map[string]any
	// Config is the closed object of the configurable parameters, what
	// expressions see as config; ConfigDefaults their defaults.
	Config         *Type
	ConfigDefaults map[string]any
}

// Node returns the node called name, or nil.
func (p *Pipeline) Node(name string) *Node {
	for _, n := range p.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Field is a declared state field.
type Field struct {
	Name    string
	Type    *Type
	Reducer string
	Default any
	// PerTurn fields start each turn of a thread from their default.
	PerTurn bool
	Pos     Pos
}

// Node is one node of a pipeline.
type Node struct {
	Name    string
	Pos     Pos
	Type    string
	Config  any // the node type's Config() value, checked
	Next    []*Route
	OnError []*Catch
	Timeout time.Duration
	Retry   *Retry
	key     *yaml.Node
	value   *yaml.Node
	// opaque marks a node whose routes the schema refused: the graph
	// checks take it to lead anywhere, END included.
	opaque bool
	// pipes are the pipelines the config names, once pipesKnown.
	pipes      []*PipelineRef
	pipesKnown bool
}

// pipelineRefs returns the pipelines n's config names (subgraphs,
// parallel branches): recorded when the checker visited the config, else
// collected from it.
func (n *Node) pipelineRefs() []*PipelineRef {
	if !n.pipesKnown {
		collectPipelineRefs(n.Config, func(r *PipelineRef) { n.pipes = append(n.pipes, r) })
		n.pipesKnown = true
	}
	return n.pipes
}

// Route is one outgoing edge; a nil When always matches.
type Route struct {
	When *Condition
	To   string
	Pos  Pos
	end  Pos // where the target's name ends, when known
}

// Catch is one entry of a node's on_error: the error kinds it catches
// (none: any error) and the node it routes to.
type Catch struct {
	When []string
	To   string
	Pos  Pos // of the target
	end  Pos // where the target's name ends, when known
}

// Retry is a node's retry policy.
type Retry struct {
	MaxAttempts int           `yaml:"max_attempts"`
	Backoff     time.Duration `yaml:"backoff"`
	MaxBackoff  time.Duration `yaml:"max_backoff"`
	On          []string      `yaml:"on"`
}

// Agent is a checked Agent document.
type Agent struct {
	Doc      *Document
	Name     string
	Pipeline string
	Model    string
	Persona  string
	Skills   []string
	Tools    []string
	Rules    []string
	Budget   runner.Budget
	// Schedule are the runs its schedule: declares.
	Schedule []runner.Scheduled
	// Notify names the webhooks told of its approval events and runs' ends.
	Notify []string
}

// ModelDef is a checked Model document.
type ModelDef struct {
	Doc      *Document
	Name     string
	Provider string // openai, anthropic or scripted
	// ID is the provider's model id (default: the document's name).
	ID        string
	BaseURL   string
	APIKeyEnv string
	Pricing   Pricing
	Context   int // context window, in tokens
	Params    runner.Params
}

// Pricing is a model's price in US dollars per million tokens.
type Pricing struct {
	Input       float64 `yaml:"input_per_mtok"`
	Output      float64 `yaml:"output_per_mtok"`
	CachedInput float64 `yaml:"cached_input_per_mtok"`
}

// Cost is what a call with usage u costs. Cached input tokens are priced
// at CachedInput when it is set, else at Input.
func (p Pricing) Cost(u runner.Usage) float64 {
	cached := p.CachedInput
	if cached == 0 {
		cached = p.Input
	}
	return (float64(u.InputTokens)*p.Input + float64(u.CachedInputTokens)*cached + float64(u.OutputTokens)*p.Output) / 1e6
}

// SkillDef is a checked Skill document.
type SkillDef struct {
	Doc      *Document
	Name     string
	Persona  string
	Context  []*Template // each rendered as its own system message
	Tools    []string
	Rules    []string
	Requires []string
}

// RuleSet is a checked RuleSet document.
type RuleSet struct {
	Doc   *Document
	Name  string
	State *Type // the state fields its rules read and write
	Rules []*Rule
	// Platform rule sets apply to every run; a Tenant's apply to that
	// tenant's runs, replacing the rules of the same key.
	Platform bool
	Tenant   string
}

// Rule is one rule: on a trigger, when a condition holds, do an action.
type Rule struct {
	Key    string
	On     string
	When   *Condition
	Action string // require_hitl, deny, abort, set or note
	// Text is the note, the deny or abort reason, or the reviewer's
	// message; HITL the gate of require_hitl; Set the fields set.
	Text *Template
	HITL *runner.HITL
	Set  map[string]*Expression
	// Locked: a rule of the same key may replace it only with one at
	// least as strong (runner.Rule.Weakens).
	Locked bool
	// Pos is where the rule is; ActionPos its action's key.
	Pos, ActionPos Pos
}
