package dsl

import (
	"time"

	"go.yaml.in/yaml/v3"
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
)

// End is the name routes use to finish a run.
const End = "END"

// Project is a checked set of definitions, by kind and name.
type Project struct {
	Pipelines map[string]*Pipeline
	Agents    map[string]*Agent
	RuleSets  map[string]*RuleSet
	Tools     map[string]*ToolDef
	Tests     []*TestDef
	Docs      []*Document
}

// TestDef is a checked Test document.
type TestDef struct {
	Doc      *Document
	Name     string
	Pipeline string // the pipeline run: the target's, for an agent
	Agent    string
	Input    map[string]any
	Mocks    map[string]Mock
	Resume   []ResumeStep
	Expect   Expect
}

// Mock replaces a tool in a test: a result, an error, after a delay.
type Mock struct {
	Result any           `yaml:"result"`
	Error  string        `yaml:"error"`
	Delay  time.Duration `yaml:"delay"`
}

// ResumeStep is the value a paused test run is resumed with; Approve is
// shorthand for {"approved": ...}.
type ResumeStep struct {
	Value   any   `yaml:"value"`
	Approve *bool `yaml:"approve"`
}

// Expect is what a test checks after its last step.
type Expect struct {
	Status    string
	Path      []string
	ToolCalls []string
	Assert    []*Expression
}

// ToolDef is a checked Tool document.
type ToolDef struct {
	Doc        *Document
	Name       string
	Capability string
	Mutating   bool
	Timeout    time.Duration
	// Parameters is the JSON Schema of the arguments, decoded.
	Parameters map[string]any
	// Exactly one implementation is set.
	Expr    *Program
	HTTP    *HTTPDef
	Builtin string
}

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
	Start    string
	Nodes    []*Node
	Output   map[string]*Expression
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
	Pos     Pos
}

// Node is one node of a pipeline.
type Node struct {
	Name    string
	Pos     Pos
	Type    string
	Config  any // the node type's Config() value, checked
	Next    []*Route
	OnError string
	Timeout time.Duration
	Retry   *Retry
	key     *yaml.Node
	value   *yaml.Node
}

// Route is one outgoing edge; a nil When always matches.
type Route struct {
	When *Condition
	To   string
	Pos  Pos
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
	Budget   Budget
}

// Budget bounds an agent's run; zero values are unlimited.
type Budget struct {
	MaxTokens    int           `yaml:"max_tokens"`
	MaxCostUSD   float64       `yaml:"max_cost_usd"`
	MaxIter      int           `yaml:"max_iterations"`
	MaxSteps     int           `yaml:"max_steps"`
	MaxLLMCalls  int           `yaml:"max_llm_calls"`
	MaxToolCalls int           `yaml:"max_tool_calls"`
	Timeout      time.Duration `yaml:"timeout"`
	OnExceed     string        `yaml:"on_exceed"`
}

// RuleSet is a checked RuleSet document.
type RuleSet struct {
	Doc   *Document
	Name  string
	State *Type // the state fields its rules read and write
	Rules []*Rule
}

// Rule is one rule: on a trigger, when a condition holds, do an action.
type Rule struct {
	Key    string
	On     string
	When   *Condition
	Action string // require_hitl, abort, set or note
	Params map[string]any
	Set    map[string]*Expression
	Pos    Pos
}
