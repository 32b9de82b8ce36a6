package runner

import (
	"context"
	"errors"
	"fmt"
)

// endStep ends a run whose step returned err: a pause, a cancellation, a
// failure, or (for store errors and refused resume values) an error.
func (r *Run) endStep(ctx context.Context, state State, cur string, err error) (*Result, error) {
	if intr, ok := errors.AsType[*Interrupt](err); ok {
		intr.Node = cur
		return r.pause(ctx, state, cur, intr)
	}
	if errors.Is(err, ErrInvalidResume) || errors.Is(err, errStore) {
		return nil, err
	}
	if ctx.Err() != nil {
		return r.stop(ctx, state, cur)
	}
	if be, ok := errors.AsType[*BudgetError](err); ok {
		return r.exceeded(ctx, state, cur, be)
	}
	if re, ok := errors.AsType[*RunError](err); ok {
		return r.fail(ctx, state, cur, re)
	}
	return r.fail(ctx, state, cur, &RunError{Code: "node_error", Node: cur, Kind: ErrorKindsOf(err)[0], Message: fmt.Sprintf("node %s failed: %v", cur, err)})
}

// pause pauses a thread at node cur, which runs again on resume.
func (r *Run) pause(ctx context.Context, state State, cur string, intr *Interrupt) (*Result, error) {
	return r.pauseAt(ctx, state, cur, cur, intr)
}

// pauseAt pauses a thread after node cur, standing at next.
func (r *Run) pauseAt(ctx context.Context, state State, cur, next string, intr *Interrupt) (*Result, error) {
	if len(intr.Update) > 0 {
		var err error
		if state, err = merge(r.Graph, state, intr.Update); err != nil {
			return r.fail(ctx, state, cur, &RunError{Code: "node_error", Node: cur, Message: fmt.Sprintf("node %s: pausing: %v", cur, err)})
		}
	}
	if intr.ID == "" { // a child's interrupt keeps the ID its thread gave it
		intr.ID = interruptID(r.Thread, r.id+1) // the checkpoint that records it
	}
	if err := r.checkpoint(context.WithoutCancel(ctx), cpRecord{node: cur, next: next, status: StatusInterrupted, state: state, writes: intr.Update, interrupt: intr, last: true}); err != nil {
		return nil, err
	}
	r.emit(EventInterrupt, cur, intr)
	res := r.result(StatusInterrupted, state, nil, intr)
	if r.Graph.Output != nil { // what the pipeline declares so far; an output that needs a finished run is left out
		res.Output, _ = r.Graph.Output.Eval(r.outputVars(state))
	}
	return res, nil
}

// stop ends a run whose context ended: the run's own timeout ends it
// timed out, a cancellation leaves it resumable at the node it had not
// finished.
func (r *Run) stop(ctx context.Context, state State, cur string) (*Result, error) {
	if be, ok := errors.AsType[*BudgetError](context.Cause(ctx)); ok {
		return r.exceeded(ctx, state, cur, be)
	}
	if TimedOut(ctx) && r.Graph.Timeout > 0 {
		return r.end(ctx, state, cur, StatusTimedOut, &RunError{Code: "timeout", Node: cur, Kind: KindTimeout, Message: fmt.Sprintf(
			"pipeline %s ran longer than its timeout of %s (at node %s); raise limits.timeout if the run needs more", r.Graph.Name, r.Graph.Timeout, cur)})
	}
	if err := r.checkpoint(context.WithoutCancel(ctx), cpRecord{node: cur, next: cur, status: StatusCancelled, state: state, last: true}); err != nil {
		return nil, err
	}
	r.emit(EventError, cur, map[string]any{"error": "cancelled"})
	return r.result(StatusCancelled, state, nil, nil), nil
}

// fail ends a run that failed at node cur, which a resume runs again.
func (r *Run) fail(ctx context.Context, state State, cur string, re *RunError) (*Result, error) {
	return r.end(ctx, state, cur, StatusFailed, re)
}

// end ends a run with status failed or timed out at node cur, after the
// pipeline's handler for it, if it has one, has run.
func (r *Run) end(ctx context.Context, state State, cur, status string, re *RunError) (*Result, error) {
	re.Message = r.Graph.Redact.String(re.Message) // before the handler sees it
	state = r.handle(state, cur, status, re)
	re.Message = r.Graph.Redact.String(re.Message) // with the handler's error
	if err := r.checkpoint(context.WithoutCancel(ctx), cpRecord{node: cur, next: cur, status: status, state: state, err: re, last: true}); err != nil {
		return nil, err
	}
	r.emit(EventError, cur, re)
	res := r.result(status, state, re, nil)
	r.emit(EventDone, "", res)
	return res, nil
}

func (r *Run) complete(_ context.Context, state State) (*Result, error) {
	res := r.result(StatusCompleted, state, nil, nil)
	if r.Graph.Output != nil {
		out, err := r.Graph.Output.Eval(r.outputVars(state))
		if err != nil {
			res.Status, res.Error = StatusFailed, &RunError{Code: "output", Message: fmt.Sprintf("pipeline %s: output: %v", r.Graph.Name, err)}
		}
		res.Output = out
	}
	r.emit(EventDone, "", res)
	return res, nil
}

// outputVars are the variables of the pipeline's output expressions.
func (r *Run) outputVars(state State) map[string]any {
	return map[string]any{"state": state, "input": r.input, "error": r.errorVar(), "config": r.config}
}

func (r *Run) result(status string, state State, re *RunError, intr *Interrupt) *Result {
	return &Result{Thread: r.Thread, Status: status, State: state, Error: re, Interrupt: intr, Checkpoint: r.id, Path: r.path, Usage: r.Usage()}
}
