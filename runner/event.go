package runner

import "time"

// Event types. The CLI's progress, --events, logs and the HTTP stream all
// read the same events.
const (
	EventRunStart   = "run_start"
	EventNodeStart  = "node_start"
	EventNodeEnd    = "node_end"
	EventLLMToken   = "llm_token"
	EventLLMCall    = "llm_call"
	EventLLMResult  = "llm_result" // the call's record (LLMCall.Metric), or its error
	EventToolCall   = "tool_call"
	EventToolResult = "tool_result"
	EventRule       = "rule" // a rule fired, or a reviewer decided
	EventInterrupt  = "interrupt"
	EventCheckpoint = "checkpoint"
	EventError      = "error"
	EventDone       = "done"
)

// Event is something that happened in a run.
type Event struct {
	Type   string    `json:"event"`
	Thread string    `json:"thread"`
	Step   int       `json:"step"`
	Node   string    `json:"node,omitempty"`
	Time   time.Time `json:"time"`
	// Data depends on Type: the update (node_end), the route taken and
	// duration, the tool call or result, the interrupt, the checkpoint id,
	// the error, the result (done).
	Data any `json:"data,omitempty"`
	// State is, for a checkpoint event, the thread's state as of that
	// checkpoint (through the reducers), so a sink need not read it back
	// from the store. It is the run's own: read it during the call only,
	// never keep or change it.
	State State `json:"-"`
}

// Sink receives events; it must not block for long.
type Sink func(Event)
