// Package runner is the interpreter: it runs a compiled Graph one step at a
// time — run a node, merge its update through the field reducers, fire
// rules, write a checkpoint, pick the next node — and emits events. It
// knows nothing of YAML; dsl.Compile builds its graphs.
//
// Run and Resume return a *Result whose Status tells how the thread ended
// (completed, interrupted, failed, timed_out, cancelled). Errors are returned only for
// problems outside the run itself: a store that cannot be read or written,
// or a resume that does not fit the thread.
package runner

import (
	"context"
	"time"
)

// State is a thread's state: field name to JSON-like value (string,
// float64/int64, bool, []any, map[string]any, nil). Nodes never mutate the
// state they are given.
type State map[string]any

// Update is what a node returns: fields to merge into the state.
type Update map[string]any

// Graph is a compiled pipeline. It is immutable and safe to run for many
// threads at once.
type Graph struct {
	Name   string
	Fields map[string]Field
	// Start is the node a run starts at; with StartRoutes, the first of
	// them whose condition holds over the run's first state chooses it
	// instead, as a node's routes choose its successor, without a step.
	Start       string
	StartRoutes []Route
	Nodes       map[string]*Step
	// MaxSteps and Timeout are the pipeline's hard limits; Budget is what
	// a run may spend, with its own on_exceed policy.
	MaxSteps int
	Timeout  time.Duration
	Budget   Budget
	// OnTimeout and OnError name the node that runs once when a run would
	// end timed out (failed); its routes are followed to END within
	// HandlerTimeout (default DefaultHandlerTimeout), and the run still
	// ends timed out (failed). "": none.
	OnTimeout      string
	OnError        string
	HandlerTimeout time.Duration
	// InterruptBefore and InterruptAfter list the nodes a thread pauses
	// before (after) running, with an interrupt of kind KindBefore
	// (KindAfter); RunOptions can replace them for one invocation.
	InterruptBefore []string
	InterruptAfter  []string
	// Durability is the pipeline's durability mode (DurabilitySync, ...),
	// unless the Engine sets one; "": sync.
	Durability string
	// Output computes the run's result from the final state; nil: the state.
	Output Evaluator
	// Description says what the graph's agent (else its pipeline) does,
	// and InputSchema is the JSON Schema of its run input (nil: none
	// declared): what a server shows of it (its MCP tool).
	Description string
	InputSchema map[string]any
	// Schedule are the runs the agent's definition schedules (none for a
	// pipeline's graph); runner serve keeps a cron of each.
	Schedule []Scheduled
	// Notify names the webhooks told of the runs' approval events and
	// ends: the pipeline's and the agent's.
	Notify []string
	// CheckInput checks a run's input before the thread starts and returns
	// it normalised; its error names each field that does not fit (dsl
	// compiles the pipeline's declared input into it). Nil accepts any
	// state field.
	CheckInput func(input map[string]any) (map[string]any, error)
	// CheckState checks values written to a thread's state against the
	// declared state fields and returns them normalised; its error names
	// each field that does not fit (see Graph.CheckValues). Nil takes any
	// value.
	CheckState func(values map[string]any) (map[string]any, error)
	// Configure checks the configurable values a run is given (an
	// assistant's, RunOptions.Config) against the parameters the pipeline
	// declares and returns them with the defaults of those left out: what
	// expressions see as `config`. Its error names each value that does not
	// fit and wraps ErrInput. Nil: the pipeline declares none.
	Configure func(values map[string]any) (map[string]any, error)
	// Rules fire on the calls and steps of every run, in precedence order;
	// Agent is the agent the graph runs for (nil for a bare pipeline).
	Rules []*Rule
	Agent *AgentInfo
	// Hash identifies the definitions the graph was compiled from; Defs
	// holds the hash of each of them ("Tool/search": "9f2c...").
	Hash string
	Defs map[string]string
	// Redact hides the secrets of the graph's tools and models from
	// everything its runs keep and show (see Redactor); nil: none.
	Redact *Redactor
	// Tools are the tools its nodes can call, by name: CheckResume checks
	// a reviewer's edited arguments against them.
	Tools map[string]*ToolSpec
	// About describes the graph for people (nil: nothing is said).
	About *About
}

// Field is a declared state field.
type Field struct {
	Reducer Reducer
	Default any
	// PerTurn resets the field to its default when a new turn of the
	// thread starts.
	PerTurn bool
}

// Step is a node in a graph with its routing and policies.
type Step struct {
	Name   string
	Type   string
	Node   Node
	Routes []Route
	// OnError routes a node that failed for good: the first entry that
	// catches the error's kind (see ErrorKindsOf) names the node.
	OnError []Catch
	Timeout time.Duration
	Retry   Retry
}

// Route is one outgoing edge; a nil When always matches.
type Route struct {
	When Condition
	To   string
}

// End is the route target that finishes a run.
const End = "END"

// Retry is a step's retry policy. MaxAttempts counts the first attempt.
type Retry struct {
	MaxAttempts int
	Backoff     time.Duration
	MaxBackoff  time.Duration
	// On lists what retries: error, timeout (empty: both).
	On []string
}

// Node is the behaviour of a node type.
type Node interface {
	Run(ctx context.Context, in *Input) (Update, error)
}

// Input is what a node sees: its name, the state (read-only) and its run.
type Input struct {
	Node  string
	State State
	// Resumed is set when the node runs again after raising an interrupt;
	// Resume is the value the resume delivered (nil when it gave none).
	Resumed bool
	Resume  any
	Run     *Run
}

// Condition is a compiled boolean expression.
type Condition interface {
	EvalBool(vars map[string]any) (bool, error)
}

// Evaluator is a compiled expression of any result.
type Evaluator interface {
	Eval(vars map[string]any) (any, error)
}
