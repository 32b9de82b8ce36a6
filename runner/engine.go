package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// Thread statuses.
const (
	StatusRunning     = "running"
	StatusInterrupted = "interrupted"
	StatusCompleted   = "completed"
	StatusFailed      = "failed"
	StatusCancelled   = "cancelled"
	// StatusTimedOut is a run that ran out of time: its pipeline's
	// limits.timeout or its budget's timeout. It resumes like a failed one.
	StatusTimedOut = "timed_out"
)

// Engine runs graphs and checkpoints every step to its store.
type Engine struct {
	// Store keeps checkpoints; nil runs without any (nothing to resume).
	Store store.Store
	// Items is the long-term memory store the runs' memory tools use
	// (ToolCall.Memory); nil: Store's, when it keeps items too.
	Items store.ItemStore
	// Sink receives events; nil emits none.
	Sink Sink
	// Clock is the time runs see (default RealClock).
	Clock Clock
	// Tenant is the tenant new threads run for: a tenant's rule sets
	// apply to them. A resumed thread keeps the tenant it started with.
	Tenant string
	// LeaseTTL is how long a run holds its thread without renewing its
	// lease (default DefaultLeaseTTL): a run leases its thread so no other
	// runs it at the same time, and renews the lease while it works; the
	// thread of a run that crashed can be resumed that long after.
	LeaseTTL time.Duration
	// Durability says when a step's checkpoint reaches the store:
	// DurabilitySync, DurabilityAsync or DurabilityExit; "" is the
	// graph's, else sync.
	Durability string
	// Outbox, when set, gives the webhook deliveries of a checkpoint that
	// carries gate events (its Audit), written with it in the same write
	// (store.Checkpoint.Deliveries), so a crash between the two loses none.
	Outbox func(cp *store.Checkpoint) []*store.Delivery

	meter     *meter // set for a child thread: its parent's
	parent    string // set for a child thread: its parent thread
	owner     string // the Engine as a lease owner (leaseOwner)
	ownerOnce sync.Once
}

// ErrInput is returned by Run for an input that does not fit the pipeline.
var ErrInput = errors.New("invalid input")

// Result is how a run (or a resumed run) ended.
type Result struct {
	Thread     string     `json:"thread"`
	Status     string     `json:"status"`
	State      State      `json:"state"`
	Output     any        `json:"output,omitempty"`
	Error      *RunError  `json:"error,omitempty"`
	Interrupt  *Interrupt `json:"interrupt,omitempty"`
	Checkpoint int64      `json:"checkpoint"`
	// Path lists the nodes this invocation ran, in order.
	Path []string `json:"path"`
	// Usage is what the thread has spent, over all its invocations.
	Usage RunUsage `json:"usage"`
}

// RunError says why a run failed: a code (max_steps, timeout, node_error,
// budget_exceeded) and a message that names the limit or node; Kind is
// the error kind of a node's error (see ErrorKindsOf).
type RunError struct {
	Code    string `json:"code"`
	Node    string `json:"node,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message"`
}

func (e *RunError) Error() string { return e.Message }

// Run starts a run of g on thread with input: a new thread, or a new turn
// of a thread whose last run completed, which continues from its state —
// the input goes through the fields' reducers (messages append). A thread
// that is paused, failed, cancelled or was interrupted by a crash is not
// started again: it is resumed (Resume).
// An input that does not fit the graph (Graph.CheckInput, else a field
// that is not a state field) is refused before anything is written, with
// an error wrapping ErrInput.
func (e *Engine) Run(ctx context.Context, g *Graph, thread string, input map[string]any) (*Result, error) {
	return e.RunWith(ctx, g, thread, input, RunOptions{})
}

// RunWith is Run with options for this invocation; options that name
// nodes g does not have are refused with an error wrapping ErrInput.
func (e *Engine) RunWith(ctx context.Context, g *Graph, thread string, input map[string]any, opt RunOptions) (*Result, error) {
	r := e.newRun(g, thread, e.Tenant)
	if err := r.staticInterrupts(opt); err != nil {
		return nil, err
	}
	input, err := g.Admit(input)
	if err != nil {
		return nil, err
	}
	state, err := initialState(g, input)
	if err != nil {
		return nil, err
	}
	h, err := e.lease(ctx, thread)
	if err != nil {
		return nil, err
	}
	defer e.release(ctx, h)
	r.lease = h
	if !opt.New {
		if state, err = r.nextTurn(ctx, state, input); err != nil {
			return nil, err
		}
	}
	r.input, r.started, r.requester = input, r.clock.Now(), opt.As.Name
	start, route, err := r.start(state)
	if err != nil {
		return nil, err
	}
	d := map[string]any{"pipeline": g.Name, "input": input, "turn": r.turn}
	if route >= 0 {
		d["start"], d["route"] = start, route
	}
	r.emit(EventRunStart, "", d)
	if err := r.checkpoint(ctx, cpRecord{next: start, status: StatusRunning, state: state, snapshot: true, step: true}); err != nil {
		return nil, err
	}
	return r.loop(ctx, state, start, nil)
}

// nextTurn continues a thread that has completed runs: its state with
// input merged through the reducers, the checkpoint ids and tenant it
// had. A thread with no checkpoints starts from fresh, the state given.
func (r *Run) nextTurn(ctx context.Context, fresh State, input map[string]any) (State, error) {
	if r.engine.Store == nil {
		return fresh, nil
	}
	cps, err := r.engine.Store.Load(ctx, r.Thread, 0)
	if errors.Is(err, store.ErrNotFound) {
		return fresh, nil
	} else if err != nil {
		return nil, err
	}
	last := cps[len(cps)-1]
	if last.Status != StatusCompleted {
		return nil, fmt.Errorf("%w: thread %s is %s at node %s; %w", ErrThreadBusy, r.Thread, last.Status, last.Next, ErrUnfinished)
	}
	if last.Pipeline != r.Graph.Name {
		return nil, fmt.Errorf("%w: thread %s runs pipeline %s, not %s", ErrThreadBusy, r.Thread, last.Pipeline, r.Graph.Name)
	}
	state, meta, err := rebuild(r.Graph, cps)
	if err != nil {
		return nil, fmt.Errorf("thread %s: %w", r.Thread, err)
	}
	for name, f := range r.Graph.Fields {
		if f.PerTurn {
			state[name] = CloneJSON(f.Default)
		}
	}
	if state, err = merge(r.Graph, state, Update(input)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	r.id, r.step, r.turn, r.tenant = last.ID, last.Step, last.Step, meta.Tenant
	r.obey(r.Graph.ActiveRules(r.tenant))
	if r.ownsMeter {
		r.meter.restore(meta)
	}
	return state, nil
}

// ErrThreadBusy is returned by Run for a thread that cannot take a new
// run: it waits to be resumed, or runs another pipeline; and by Run and
// Resume for a thread that runs elsewhere (its lease is held).
var ErrThreadBusy = errors.New("thread cannot start a new run")

// ErrUnfinished is, with ErrThreadBusy, Run's error for a thread whose
// last run did not complete (it is paused, failed, cancelled, timed out or
// crashed): it is resumed, not started again.
var ErrUnfinished = errors.New("resume it instead of starting a new run")

// ResumeOptions say how to resume a thread.
type ResumeOptions struct {
	// Value is delivered to the interrupted node.
	Value any
	// Force resumes under changed definitions.
	Force bool
	// Expire resumes a thread paused by an approval gate without a
	// verdict (Value is ignored): the gates whose expiry has passed take
	// their on_expire decision and the run goes on; the others pause
	// again. The approval sweep resumes so.
	Expire bool
	RunOptions
}

// Resume continues a thread from its newest checkpoint: an interrupted
// thread's node runs again with the resume value; a cancelled, failed,
// timed-out or crashed thread continues with the node it had not
// finished. A thread paused by interrupt_before runs its node (the value
// is not delivered), one paused by interrupt_after goes on to its next.
func (e *Engine) Resume(ctx context.Context, g *Graph, thread string, opt ResumeOptions) (*Result, error) {
	if e.Store == nil {
		return nil, errors.New("resume needs a store")
	}
	// A thread that does not exist is not leased: no lease row is left.
	if _, err := e.Store.Load(ctx, thread, 0); err != nil {
		return nil, err
	}
	h, err := e.lease(ctx, thread)
	if err != nil {
		return nil, err
	}
	defer e.release(ctx, h)
	cps, err := e.Store.Load(ctx, thread, 0)
	if err != nil {
		return nil, err
	}
	last := cps[len(cps)-1]
	if err := checkResumable(g, cps, opt.Force); err != nil {
		return nil, err
	}
	state, meta, err := rebuild(g, cps)
	if err != nil {
		if last.ConfigHash != g.Hash {
			err = fmt.Errorf("%w; the thread ran under other definitions: restore what its state needs, or start a new thread", err)
		}
		return nil, fmt.Errorf("thread %s: %w", thread, err)
	}
	r := e.reopen(g, thread, cps, meta)
	r.lease = h
	if err := r.staticInterrupts(opt.RunOptions); err != nil {
		return nil, err
	}
	if opt.Expire {
		if intr := pendingInterrupt(last); last.Status != StatusInterrupted || intr == nil || intr.Rule == "" {
			return nil, fmt.Errorf("%w: thread %s waits on no approval gate: there is nothing to expire", ErrInvalidResume, thread)
		}
		r.expireOnly, opt.Value = true, nil
	}
	opt.Value = NormalizeJSON(opt.Value)
	var resume *delivery
	if last.Status == StatusInterrupted {
		intr := pendingInterrupt(last)
		switch be := budgetInterrupt(last); {
		case be != nil:
			if res, err := r.resumeBudget(ctx, state, last.Next, be, opt.Value); res != nil || err != nil {
				return res, err
			}
		case intr.static():
			if intr.Kind == KindBefore {
				r.skipBefore = last.Next
			}
		default:
			resume = &delivery{opt.Value}
			r.awaiting = awaitingCalls(intr)
		}
	} else if opt.Value != nil {
		return nil, fmt.Errorf("%w: thread %s is %s, not waiting for input; nothing was changed", ErrInvalidResume, thread, last.Status)
	}
	r.emit(EventRunStart, "", map[string]any{"pipeline": g.Name, "resume": true})
	return r.loop(ctx, state, last.Next, resume)
}

// reopen continues a thread in a new Run where its checkpoints cps (from
// the newest snapshot) leave it: checkpoint id, step, turn, input,
// tenant, usage, and the journal of a step not finished.
func (e *Engine) reopen(g *Graph, thread string, cps []*store.Checkpoint, m *meta) *Run {
	at := cps[len(cps)-1]
	r := e.newRun(g, thread, m.Tenant)
	r.id, r.step, r.turn, r.input, r.snapSize, r.caught = at.ID, at.Step, m.Turn, m.Input, len(cps[0].Snapshot), m.Caught
	r.started, r.requester = m.Started, m.Requester
	for _, cp := range cps[1:] {
		r.sinceSnap += len(cp.Writes)
	}
	if r.ownsMeter {
		r.meter.restore(m)
	}
	r.restoreJournal(m.Journal, m.Pending)
	return r
}

// memory is the long-term memory of a run of tenant: without Items when
// the engine has no item store.
func (e *Engine) memory(tenant string) Memory {
	items := e.Items
	if items == nil {
		items, _ = e.Store.(store.ItemStore)
	}
	return Memory{Items: items, Tenant: tenant}
}

func (e *Engine) newRun(g *Graph, thread, tenant string) *Run {
	r := &Run{Thread: thread, Graph: g, engine: e, clock: e.clock(), meter: e.meter, tenant: tenant}
	r.obey(g.ActiveRules(tenant))
	if g.Agent != nil {
		r.agent = g.Agent.vars()
	}
	if g.Configure != nil { // the defaults, until configure sets the run's own
		r.config, _ = g.Configure(nil)
	}
	if r.meter == nil {
		r.meter, r.ownsMeter = &meter{budget: g.Budget}, true
	}
	return r
}

// Admit checks a new run's input as Run does, before any thread exists:
// normalised, then checked by the graph's CheckInput. It returns the input
// the run starts with; the error wraps ErrInput.
func (g *Graph) Admit(input map[string]any) (map[string]any, error) {
	input = normalizeObject(input)
	if g.CheckInput == nil {
		return input, nil
	}
	out, err := g.CheckInput(input)
	if err != nil && !errors.Is(err, ErrInput) {
		err = fmt.Errorf("%w: %w", ErrInput, err)
	}
	return out, err
}

// initialState is the fields' defaults overlaid with the input's fields.
func initialState(g *Graph, input map[string]any) (State, error) {
	s := make(State, len(g.Fields))
	for name, f := range g.Fields {
		s[name] = CloneJSON(f.Default)
	}
	for k, v := range input {
		if _, ok := g.Fields[k]; !ok {
			return nil, fmt.Errorf("%w: input field %q is not a state field of pipeline %s", ErrInput, k, g.Name)
		}
		s[k] = v
	}
	return s, nil
}
