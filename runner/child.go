package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// Vars returns the variables a node's expressions see: state, input,
// budget, error (the error a route caught last: {message, kind, node}),
// run ({thread, started_at, now, limits}) and config (the values of the
// pipeline's configurable parameters).
func (in *Input) Vars() map[string]any {
	return map[string]any{"state": in.State, "input": in.Run.input, "budget": in.Run.budget, "error": in.Run.errorVar(), "run": in.Run.runVar(),
		"config": in.Run.config}
}

// runVar is what expressions see as run: the thread (by the id its
// tenant knows it by: access.ThreadID), when this turn of
// it began and the clock's reading (RFC 3339 times in UTC), and the limits
// the turn runs under: max_steps and timeout_seconds (0: none).
func (r *Run) runVar() map[string]any {
	f := r.fixedRunVars()
	return map[string]any{"thread": access.ThreadID(r.Thread), "started_at": f.startedAt,
		"now": r.clock.Now().UTC().Format(time.RFC3339Nano), "limits": f.limits}
}

// runFixed is what run shows that does not change during a turn: its
// start, formatted, and its limits (expressions cannot change a map).
type runFixed struct {
	started   time.Time
	startedAt string
	limits    map[string]any
}

// fixedRunVars returns the turn's runFixed, made at its first use.
func (r *Run) fixedRunVars() *runFixed {
	f := &r.runFixed
	if f.limits != nil && f.started.Equal(r.started) {
		return f
	}
	timeout := r.Graph.Timeout
	if t := r.meter.budget.Timeout; t > 0 && (timeout == 0 || t < timeout) {
		timeout = t
	}
	*f = runFixed{started: r.started, startedAt: r.started.UTC().Format(time.RFC3339Nano),
		limits: map[string]any{"max_steps": int64(r.Graph.MaxSteps), "timeout_seconds": timeout.Seconds()}}
	return f
}

// Now returns the run's clock reading.
func (r *Run) Now() time.Time { return r.clock.Now() }

// Child runs g as a child thread of this run (a subgraph or a parallel
// branch, named name): its checkpoints live under the parent thread, as
// "<parent>/<name>@<step>". When the parent step runs again — on resume
// after an interrupt or a crash — the child resumes instead of starting
// over, and a child that had completed returns its result unchanged.
func (r *Run) Child(ctx context.Context, g *Graph, name string, input map[string]any, resume any) (*Result, error) {
	thread := fmt.Sprintf("%s/%s@%d", r.Thread, name, r.step)
	e := &Engine{Store: r.engine.Store, Items: r.engine.Items, Sink: r.engine.Sink, Clock: r.engine.Clock, Tenant: r.tenant, meter: r.meter, parent: r.Thread, Durability: r.durability(),
		Outbox: r.engine.Outbox}
	opt := RunOptions{As: r.as}
	if e.Store == nil {
		return e.RunWith(ctx, g, thread, input, opt)
	}
	hist, err := e.Store.History(ctx, thread)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && len(hist) == 0):
		return e.RunWith(ctx, g, thread, input, opt)
	case err != nil:
		return nil, err
	}
	switch last := hist[len(hist)-1]; last.Status {
	case StatusCompleted:
		return e.finished(ctx, g, thread)
	case StatusInterrupted:
		it := pendingInterrupt(last) // History keeps the interrupt
		v, ok := ValueFor(resume, it)
		if !ok { // a value for another of the parent's interrupts: still waiting
			return &Result{Thread: thread, Status: StatusInterrupted, Interrupt: it}, nil
		}
		return e.Resume(ctx, g, thread, ResumeOptions{Value: v, Expire: r.expireOnly, RunOptions: opt})
	}
	return e.Resume(ctx, g, thread, ResumeOptions{RunOptions: opt}) // cut short: it goes on
}

// finished returns the result of a completed thread from its checkpoints.
func (e *Engine) finished(ctx context.Context, g *Graph, thread string) (*Result, error) {
	cps, err := e.Store.Load(ctx, thread, 0)
	if err != nil {
		return nil, err
	}
	state, m, err := rebuild(g, cps)
	if err != nil {
		return nil, err
	}
	r := e.newRun(g, thread, m.Tenant)
	r.input = m.Input
	r.id = cps[len(cps)-1].ID
	return r.complete(ctx, state)
}
