package runner

import (
	"context"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// Tool is a callable tool, compiled from a Tool document.
type Tool interface {
	Call(ctx context.Context, call *ToolCall) (any, error)
}

// ToolSpec is a tool with what the runtime needs to know about it.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments, as the model sees it.
	Parameters map[string]any
	Capability string
	Mutating   bool
	Tags       []string
	// UpdatesState marks a state-aware tool: it returns {output, state},
	// its output for the model and updates for the state.
	UpdatesState bool
	Timeout      time.Duration
	Tool         Tool
}

// ToolCall is one invocation: validated arguments, the caller's state, and
// an idempotency key (thread:call, the thread by its store id, which
// names its tenant: two tenants' calls never share a key) a side-effecting
// tool can pass on, so a call replayed after a crash can be recognised.
type ToolCall struct {
	Name  string
	Args  map[string]any
	State State
	Key   string
	// Memory is the long-term memory the call may read and write (its
	// Items are nil when the run has none).
	Memory Memory
}

// Memory is the long-term memory of a run: its tenant's items in the
// engine's item store, which outlive the thread (memory tools).
type Memory struct {
	Items  store.ItemStore
	Tenant string
}

// ToolFunc adapts a Go function to Tool.
type ToolFunc func(ctx context.Context, call *ToolCall) (any, error)

// Call calls f.
func (f ToolFunc) Call(ctx context.Context, call *ToolCall) (any, error) { return f(ctx, call) }
