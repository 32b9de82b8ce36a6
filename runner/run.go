package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// Run is one invocation of a thread: what nodes see of it.
type Run struct {
	Thread string
	Graph  *Graph

	engine    *Engine
	clock     Clock
	input     map[string]any
	config    map[string]any // what expressions see as config
	id        int64          // newest checkpoint id
	lease     *held          // the thread's lease, for its checkpoints: nil for none
	step      int
	turn      int       // the step this run's turn of the thread began at
	started   time.Time // when this turn of the thread began
	sinceSnap int       // bytes written since the newest snapshot
	snapSize  int       // bytes of the newest snapshot
	vars      map[string]any
	runFixed  runFixed       // what runVar shows that a turn does not change
	budget    map[string]any // the expressions' view of meter
	meter     *meter
	ownsMeter bool   // false in a child thread: its parent checkpoints the usage
	synced    uint64 // the meter version budget shows
	routed    bool   // max_steps already took its on_exceed route
	in        Input
	path      []string
	tenant    string
	as        access.Principal // who the invocation acts as (RunOptions.As)
	requester string           // who started the turn: its gates' requester
	approval  *store.Approval  // the approval record the next checkpoint writes
	// caught is what expressions see as error (see catch); caughtNew: the
	// next checkpoint records it.
	caught    map[string]any
	caughtNew bool
	lists     lists // the lists the run's steps grow in place
	// unsaved: a step's checkpoint was not written (exit mode), so the
	// next one written is a snapshot; async: the checkpoints being
	// written in the background (async mode).
	unsaved bool
	async   *asyncPuts
	// base is the context the run was given, before its limits: a
	// pipeline's handler runs under it; handling is set while one runs.
	base     context.Context
	handling *ending
	// pauseBefore and pauseAfter are the nodes the thread pauses at;
	// skipBefore is the node a resume from its before-pause runs.
	pauseBefore, pauseAfter []string
	skipBefore              string

	// Rules: the graph's, active for the tenant, by trigger; gated: one of
	// them requires a human; the agent as rules see it.
	rules map[string][]*Rule
	gated bool
	agent map[string]any
	// mu guards what calls of one step share: the state updates of calls
	// and rules, the journal of the step's calls, the verdict of a resumed
	// gate.
	mu           sync.Mutex
	sideUpd      Update
	calls        map[string]*callEntry
	awaiting     []string // the calls the resumed gate decides
	verdictTaken bool
	// expireOnly: the run resumed without a verdict (ResumeOptions.Expire).
	expireOnly bool
	midStep    bool           // the step resumed with a journal: it had begun
	asked      map[string]int // the call ids the node's attempt asked for (see unique)
	models     int            // the model calls it asked for
	// audit are the gate events the next checkpoint appends to the
	// audit ledger (audit.go); runID names the run in them.
	audit []*store.AuditRecord
	runID string
}

// Emit sends an event about node, if the engine has a sink.
func (r *Run) Emit(typ, node string, data any) { r.emit(typ, node, data) }

func (r *Run) emit(typ, node string, data any) {
	r.send(Event{Type: typ, Node: node, Data: data})
}

// send stamps ev with the run's thread, step and time and gives it to
// the sink.
func (r *Run) send(ev Event) {
	if r.engine.Sink != nil {
		ev.Thread, ev.Step, ev.Time = r.Thread, r.step, r.clock.Now()
		r.engine.Sink(ev)
	}
}

// delivery is a resume value for the node that raised an interrupt.
type delivery struct{ value any }

// loop runs steps from node cur until the thread ends or pauses; resume,
// when set, goes to the first node.
func (r *Run) loop(ctx context.Context, state State, cur string, resume *delivery) (res *Result, err error) {
	defer func() { // the checkpoints still being written in the background
		if ferr := r.flush(); ferr != nil && err == nil {
			res, err = nil, fmt.Errorf("%w: %v", errStore, ferr)
		}
	}()
	g := r.Graph
	if r.engine.Clock != nil { // what waits and timeouts below the run go by
		ctx = context.WithValue(ctx, clockKey{}, r.clock)
	}
	r.base = ctx
	if g.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = r.clock.WithTimeout(ctx, g.Timeout, nil)
		defer cancel()
	}
	if t := r.meter.budget.Timeout; t > 0 && r.ownsMeter {
		var cancel context.CancelFunc
		ctx, cancel = r.clock.WithTimeout(ctx, t, &BudgetError{Budget: "timeout", Limit: float64(t), Used: float64(t)})
		defer cancel()
	}
	r.vars = r.routeVars(state)
	for cur != End {
		if ctx.Err() != nil {
			return r.stop(ctx, state, cur)
		}
		if g.MaxSteps > 0 && r.step-r.turn >= g.MaxSteps {
			return r.fail(ctx, state, cur, &RunError{Code: "max_steps", Node: cur, Message: fmt.Sprintf(
				"pipeline %s reached its limit of %d steps before node %s; raise limits.max_steps if the run needs more", g.Name, g.MaxSteps, cur)})
		}
		if be := r.stepBudget(); be != nil {
			p := r.meter.budget.OnExceed
			if !isPolicyNode(p) || r.routed {
				return r.exceeded(ctx, state, cur, be)
			}
			r.routed = true
			r.emit(EventError, cur, map[string]any{"error": be.Error(), "route": p})
			cur = p
		}
		if intr := r.pausesBefore(cur); intr != nil {
			return r.pauseAt(ctx, state, cur, cur, intr)
		}
		next, err := r.step1(ctx, &state, cur, resume)
		resume = nil
		if err != nil {
			return r.endStep(ctx, state, cur, err)
		}
		if intr := r.pausesAfter(cur, next); intr != nil {
			return r.pauseAt(ctx, state, cur, next, intr)
		}
		cur = next
	}
	return r.complete(ctx, state)
}

// routeVars makes the variables route conditions see, at state.
func (r *Run) routeVars(state State) map[string]any {
	r.budget, r.synced = map[string]any{}, ^uint64(0) // the first sync fills it
	r.syncBudget(r.step - r.turn)
	return map[string]any{"input": r.input, "budget": r.budget, "state": state, "error": r.errorVar(), "run": r.runVar(), "config": r.config}
}

// start returns the node a run starts at, Start, or the node the first of
// StartRoutes that holds over the run's first state names, with the
// route's index (-1: Start). A start no route chooses refuses the run
// (ErrInput): nothing is written.
func (r *Run) start(state State) (string, int, error) {
	g := r.Graph
	if len(g.StartRoutes) == 0 {
		return g.Start, -1, nil
	}
	to, i, err := pick(g.StartRoutes, r.routeVars(state))
	if err != nil {
		return "", -1, fmt.Errorf("%w: pipeline %s: start: %v", ErrInput, g.Name, err)
	}
	return to, i, nil
}

// routeRun brings the run the route conditions see up to date: the same
// map from step to step (a condition's result is a bool, so the map does
// not escape), with the clock's new reading.
func (r *Run) routeRun() {
	if m, ok := r.vars["run"].(map[string]any); ok {
		m["now"] = r.clock.Now().UTC().Format(time.RFC3339Nano)
		return
	}
	r.vars["run"] = r.runVar()
}

// errorVar is what expressions see as error.
func (r *Run) errorVar() map[string]any {
	if r.caught == nil {
		return noError
	}
	return r.caught
}

// step1 runs one node, merges its update, routes and checkpoints.
func (r *Run) step1(ctx context.Context, state *State, cur string, resume *delivery) (string, error) {
	s := r.Graph.Nodes[cur]
	var start time.Time
	if r.engine.Sink != nil {
		r.emit(EventNodeStart, cur, nil)
		start = r.clock.Now()
	}
	r.in = Input{Node: cur, State: *state, Run: r}
	if resume != nil {
		r.in.Resumed, r.in.Resume = true, resume.value
	}
	upd, err := r.runNode(ctx, s, &r.in)
	next, route := "", -1 // route: the index of the route taken
	if err != nil {
		var caught int // the index of the on_error entry, -1 for the budget's node
		if next, caught = r.errorRoute(ctx, s, err); next == "" {
			return "", err
		}
		d := map[string]any{"error": err.Error(), "route": next}
		if caught >= 0 {
			d["catch"] = caught
		}
		r.emit(EventError, cur, d)
		upd = r.errorUpdate(cur, err)
	}
	if r.lists == nil {
		r.lists = lists{}
	}
	upd = withMessageIDs(r.Graph, *state, upd)
	merged, err := mergeGrowing(r.Graph, *state, upd, r.lists)
	if err != nil {
		return "", &RunError{Code: "node_error", Node: cur, Message: fmt.Sprintf("node %s: %v", cur, err)}
	}
	sideUpd, err := r.afterNode(s, merged)
	if err != nil {
		return "", err
	}
	r.syncBudget(r.step - r.turn + 1) // this step counts from here on
	if next == "" {
		if next, route, err = r.route(s, merged); err != nil {
			return "", err
		}
	}
	*state = merged
	r.step++
	r.path = append(r.path, cur)
	clear(r.calls) // the step is done: its journal with it
	r.awaiting, r.midStep = nil, false
	rec := cpRecord{node: cur, next: next, status: StatusRunning, writes: upd, sideWrites: sideUpd, state: merged, step: true}
	if next == End {
		rec.status, rec.last = StatusCompleted, true
	}
	if h := r.handling; h != nil { // a handler's step: the thread stands where the run ended
		rec.next, rec.status, rec.err, rec.last = h.node, h.status, h.err, false
	}
	if err := r.checkpoint(ctx, rec); err != nil {
		return "", err
	}
	if r.engine.Sink != nil {
		d := map[string]any{"update": upd, "next": next, "duration_ms": r.clock.Now().Sub(start).Milliseconds()}
		if route >= 0 {
			d["route"] = route
		}
		r.emit(EventNodeEnd, cur, d)
	}
	return next, nil
}

// runNode runs a step's node with its timeout and retry policy.
func (r *Run) runNode(ctx context.Context, s *Step, in *Input) (Update, error) {
	attempts := max(1, s.Retry.MaxAttempts)
	for a := 1; ; a++ {
		clear(r.asked)
		r.models = 0
		upd, err := attempt(ctx, s, in)
		err = r.Graph.Redact.Error(err)
		if err != nil && !isA[*Interrupt](err) && !errors.Is(err, ErrInvalidResume) {
			r.forget() // a retry or a resume makes the attempt's calls again
		}
		if err == nil || !s.Retry.retries(err) || ctx.Err() != nil {
			return upd, err
		}
		if a >= attempts {
			if a > 1 {
				err = fmt.Errorf("%w (after %d attempts)", err, a)
			}
			return upd, err
		}
		r.emit(EventError, s.Name, map[string]any{"error": err.Error(), "attempt": a, "retrying": true})
		if err := Sleep(ctx, max(s.Retry.backoff(a), retryAfter(err))); err != nil {
			return nil, err
		}
	}
}

// attempt runs a node once, turning a panic or an overrun into an error.
func attempt(ctx context.Context, s *Step, in *Input) (upd Update, err error) {
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			upd, err = nil, Permanent(fmt.Errorf("node %s panicked: %v", s.Name, p))
		}
	}()
	upd, err = s.Node.Run(ctx, in)
	if err != nil && s.Timeout > 0 && TimedOut(ctx) {
		err = &TimeoutError{What: "node " + s.Name, After: s.Timeout}
	}
	return upd, err
}

// TimeoutError is a node or a tool call that overran its timeout; retry
// policies treat it as a timeout, not an error.
type TimeoutError struct {
	What  string // "node planner", "tool search"
	After time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s timed out after %s", e.What, e.After)
}

// retries reports whether the policy retries err. An empty On retries
// every error; "error" is any error but a timeout, "rate_limit" a 429,
// "server_error" a 5xx, and the error kinds of on_error match as there.
func (p Retry) retries(err error) bool {
	if isPermanent(err) || isA[*Interrupt](err) || errors.Is(err, ErrInvalidResume) {
		return false
	}
	if len(p.On) == 0 {
		return true
	}
	kinds := ErrorKindsOf(err)
	for _, o := range p.On {
		switch o {
		case "error":
			if !slices.Contains(kinds, KindTimeout) {
				return true
			}
		case "rate_limit":
			if httpStatus(err) == 429 {
				return true
			}
		case "server_error":
			if slices.Contains(kinds, KindHTTP5xx) {
				return true
			}
		case KindAny:
			return true
		default:
			if slices.Contains(kinds, o) {
				return true
			}
		}
	}
	return false
}

// backoff is the wait before attempt a+1: exponential with full jitter.
func (p Retry) backoff(a int) time.Duration {
	if p.Backoff <= 0 {
		return 0
	}
	d := p.Backoff << (a - 1)
	if p.MaxBackoff > 0 && d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// route picks the first route of s whose condition holds, and its index;
// the conditions see the state and the run as they are now.
func (r *Run) route(s *Step, state State) (string, int, error) {
	if len(s.Routes) > 0 && s.Routes[0].When != nil {
		r.vars["state"] = state
		r.routeRun()
	}
	to, i, err := pick(s.Routes, r.vars)
	if err != nil {
		return "", -1, &RunError{Code: "node_error", Node: s.Name, Message: fmt.Sprintf("node %s: %v", s.Name, err)}
	}
	return to, i, nil
}

// pick returns the first of routes whose condition holds over vars, and
// its index.
func pick(routes []Route, vars map[string]any) (string, int, error) {
	for i, rt := range routes {
		if rt.When == nil {
			return rt.To, i, nil
		}
		ok, err := rt.When.EvalBool(vars)
		if err != nil {
			return "", -1, fmt.Errorf("route condition: %w", err)
		}
		if ok {
			return rt.To, i, nil
		}
	}
	return "", -1, errors.New("no route condition holds and there is no default route")
}

// errorRoute is the node a failed step routes to: the budget's on_exceed
// node for a budget error, else the first of the step's on_error entries
// that catches the error's kind (a budget error only when on_exceed is
// fail), with its index (-1 for the budget's node); "" ends the run.
func (r *Run) errorRoute(ctx context.Context, s *Step, err error) (string, int) {
	if ctx.Err() != nil || isA[*Interrupt](err) || errors.Is(err, ErrInvalidResume) {
		return "", -1
	}
	kinds := ErrorKindsOf(err)
	if kinds[0] == KindBudgetErr {
		if p := r.meter.budget.OnExceed; p != "" && p != OnExceedFail {
			if isPolicyNode(p) {
				return p, -1
			}
			return "", -1
		}
	}
	return catchOf(s.OnError, kinds)
}

// errorField receives a node's error message when the node takes its
// on_error route, if the pipeline declares it.
const errorField = "error"

// errorUpdate is the update of a step whose error a route caught, which
// expressions see from here on as error.
func (r *Run) errorUpdate(node string, err error) Update {
	r.catch(err.Error(), ErrorKindsOf(err)[0], node)
	if _, ok := r.Graph.Fields[errorField]; ok {
		return Update{errorField: err.Error()}
	}
	return Update{}
}

// catch makes an error the one expressions see, and the next checkpoint
// records.
func (r *Run) catch(message, kind, node string) {
	r.caught, r.caughtNew = caughtError(message, kind, node), true
	if r.vars != nil {
		r.vars["error"] = r.caught
	}
}
