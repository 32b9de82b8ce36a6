package runner

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultHandlerTimeout is how long a pipeline's on_timeout or on_error
// handler may run when the pipeline sets no limits.handler_timeout.
const DefaultHandlerTimeout = 10 * time.Second

// ending is how a run whose handler runs ends: its status, the node a
// resume runs again and the error. The handler's checkpoints record it,
// so a thread that crashes in its handler stays failed (timed out).
type ending struct {
	status, node string
	err          *RunError
}

// handle runs the graph's handler for a run about to end with status
// (failed or timed out) at node cur with error re, once: the handler node
// and the nodes its routes lead to, until END, under a deadline of their
// own. It returns the state the handler left; a handler that fails adds
// its error to re's message. The run's status stays what it was.
func (r *Run) handle(state State, cur, status string, re *RunError) State {
	h, which := r.Graph.OnError, "on_error"
	if status == StatusTimedOut {
		h, which = r.Graph.OnTimeout, "on_timeout"
	}
	if h == "" || r.handling != nil || r.base == nil {
		return state
	}
	r.handling = &ending{status: status, node: cur, err: re}
	defer func() { r.handling = nil }()
	r.catch(re.Message, re.kind(), re.Node)
	r.emit(EventError, re.Node, map[string]any{"error": re.Message, "handler": h})
	limit := r.Graph.HandlerTimeout
	if limit <= 0 {
		limit = DefaultHandlerTimeout
	}
	ctx, cancel := WithTimeout(r.base, limit)
	defer cancel()
	for cur := h; cur != End; {
		next, err := r.step1(ctx, &state, cur, nil)
		if err != nil {
			re.Message += fmt.Sprintf("; then the pipeline's %s handler failed at node %s: %s", which, cur, handlerFailure(ctx, err, limit))
			return state
		}
		cur = next
	}
	return state
}

// handlerFailure says why a handler's node failed.
func handlerFailure(ctx context.Context, err error, limit time.Duration) string {
	intr, paused := errors.AsType[*Interrupt](err)
	switch {
	case paused:
		return "a handler cannot pause (" + intr.Kind + ")"
	case TimedOut(ctx):
		return fmt.Sprintf("it ran longer than limits.handler_timeout (%s)", limit)
	}
	return err.Error()
}

// kind is the error kind of a run's error, as expressions see it.
func (e *RunError) kind() string {
	if e.Kind != "" {
		return e.Kind
	}
	return KindOther
}
