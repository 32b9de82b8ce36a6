package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// How a run drives its thread.
const (
	modeRun      = iota // a new turn: Engine.Run with the input
	modeResume          // deliver command.resume to the pending interrupt
	modeContinue        // continue a cancelled, failed, edited or statically paused thread
	modeGoOn            // a run taken over after it wrote checkpoints: on from the newest (reclaim.go)
)

// errCancelled is the cause of a run cancelled by a client or by a run
// that interrupts it (multitask_strategy interrupt); errRollback of one
// cancelled to be undone (cancel action rollback, multitask_strategy
// rollback); errEnded of a run's context once the run has ended.
var (
	errCancelled = errors.New("run cancelled")
	errRollback  = errors.New("run rolled back")
	errEnded     = errors.New("run ended")
)

// planned is how a run drives its thread (modeRun, …) and the thread's
// newest checkpoint when it was planned (0: none).
type planned struct {
	mode int
	from int64
}

// plan decides how a run drives thread, from where its checkpoints leave
// it; a run that does not fit is a 409 saying why. A thread created with
// the run (created) has no checkpoints of its own: plan reads none, and
// the run's first checkpoint is refused if another writer's are there.
func (s *Server) plan(ctx context.Context, g *runner.Graph, thread string, q *runRequest, created bool) (planned, error) {
	var ts *runner.ThreadState
	if !created {
		var err error
		ts, err = (&runner.Engine{Store: s.cfg.Store}).State(ctx, g, thread, 0)
		if errors.Is(err, store.ErrNotFound) {
			ts, err = nil, nil
		}
		if err != nil {
			return planned{}, err
		}
	}
	mode, err := planMode(thread, q, ts)
	p := planned{mode: mode}
	if ts != nil {
		p.from = ts.Checkpoint
	}
	switch {
	case err != nil:
	case mode == modeRun: // a new turn's input must fit: a 422 before it starts
		_, err = g.Admit(q.input)
		err = inputProblem(err, "input")
	case q.input != nil: // merged into the state the run goes on from: it must fit the state's fields
		_, err = g.CheckValues(q.input)
		err = inputProblem(err, "input")
	}
	if err == nil && mode == modeResume && !q.expire { // so must a verdict: a refused one is a 422, and the run is not made
		err = runner.CheckResume(g, ts, q.resume, q.opts.As)
	}
	return p, err
}

// planMode is how a run drives thread, whose newest state is ts (nil:
// it has none).
func planMode(thread string, q *runRequest, ts *runner.ThreadState) (int, error) {
	static := ts != nil && ts.Interrupt != nil && (ts.Interrupt.Kind == runner.KindBefore || ts.Interrupt.Kind == runner.KindAfter)
	switch {
	case q.resuming() || q.expire:
		if ts == nil || ts.Status != runner.StatusInterrupted {
			return 0, problemf(http.StatusConflict, "thread %s is not waiting on an interrupt (it is %s): there is nothing to resume; an interrupt takes one resume",
				access.ThreadID(thread), statusOr(ts, "new")).as(typeNotInterrupted)
		}
		return modeResume, nil
	case q.goTo != "":
		if ts == nil {
			return 0, problemf(http.StatusConflict, "thread %s has not run yet: command.goto moves a thread that has; start a run first", thread)
		}
		return modeContinue, nil
	case ts == nil || ts.Status == runner.StatusCompleted:
		return modeRun, nil
	case static && q.input == nil: // paused by interrupt_before/after: a run without input goes on
		return modeContinue, nil
	case ts.Status == runner.StatusInterrupted:
		return 0, problemf(http.StatusConflict, "thread %s waits on an interrupt at node %s: resume it with command.resume", thread, ts.Next)
	case q.input != nil:
		return 0, problemf(http.StatusConflict, "thread %s is %s at node %s: runner continues it before it takes new input; run it without input to continue",
			thread, ts.Status, ts.Next)
	}
	return modeContinue, nil
}

func statusOr(ts *runner.ThreadState, none string) string {
	if ts == nil {
		return none
	}
	return ts.Status
}

// start runs l in a goroutine the server owns.
func (s *Server) start(l *liveRun) { s.activate(l)() }

// activate makes l its thread's active run, counted until it ends, and
// returns what starts it in a goroutine the server owns, to be called
// once: start calls it at once; a run admitted with its stream waits for
// the stream's first event (liveRun.launch).
func (s *Server) activate(l *liveRun) func() {
	s.active[l.rec.Thread] = l
	s.wg.Add(1)
	return func() {
		go func() {
			defer s.wg.Done()
			s.execute(l)
		}()
	}
}

// retain prunes a thread whose run completed to the configured retention,
// as runner exec does.
func (s *Server) retain(ctx context.Context, e *runner.Engine, g *runner.Graph, thread string) {
	if s.cfg.Retention == (runner.Retention{}) {
		return
	}
	if _, err := e.Prune(ctx, g, thread, s.cfg.Retention); err != nil {
		s.cfg.Log.Warn("retention", "thread", thread, "err", err)
	}
}

// execute runs l to its end, persisting its status and events.
func (s *Server) execute(l *liveRun) {
	ctx := l.ctx
	if l.rec.Status != store.RunRunning { // a run that waited its turn
		_ = s.runs.SetRunStatus(ctx, l.rec.ID, store.RunRunning)
	}
	g := l.g
	if c := l.q.Config; c != nil && c.RecursionLimit > 0 {
		limited := *g
		limited.MaxSteps = c.RecursionLimit
		g = &limited
	}
	e := &runner.Engine{Store: s.cfg.Store, Sink: s.observe(l, s.sink(l)), Tenant: l.rec.Tenant, LeaseTTL: s.cfg.LeaseTTL,
		Durability: l.q.Durability, Outbox: s.outbox(l)}
	res, err := s.drive(ctx, e, g, l)
	if errors.Is(context.Cause(ctx), errRollback) {
		s.rollback(l)
		return
	}
	status := store.RunError
	switch {
	case err != nil && ctx.Err() != nil: // cancelled before the engine began: the thread is as it was
		status, l.final = store.RunInterrupted, s.finalValues(context.WithoutCancel(ctx), g, l.rec.Thread, &runner.Result{})
	case err != nil:
		s.refuse(l, err)
	case res.Status == runner.StatusFailed || res.Status == runner.StatusTimedOut:
		body := runFailed(res.Error.Code, res.Error.Message)
		s.emit(l, "error", body)
		l.final = map[string]any{"__error__": body}
		if res.Status == runner.StatusTimedOut {
			status = store.RunTimeout
		}
	default:
		status = map[string]string{runner.StatusCompleted: store.RunSuccess, runner.StatusInterrupted: store.RunInterrupted,
			runner.StatusCancelled: store.RunInterrupted}[res.Status]
		l.final = s.finalValues(context.WithoutCancel(ctx), g, l.rec.Thread, res)
		if res.Status == runner.StatusCompleted {
			s.retain(context.WithoutCancel(ctx), e, g, l.rec.Thread)
		}
	}
	s.finish(l, status)
	if l.stateless && l.q.OnCompletion != "keep" { // once its stream has read the end
		l.streams.Wait()
		ctx := context.WithoutCancel(ctx)
		_ = s.runs.DeleteThread(ctx, l.rec.Thread)
		_ = s.cfg.Store.Delete(ctx, l.rec.Thread)
	}
}

// refuse ends l with err, what kept its run from starting or going on: a
// refusal (a 4xx problem) that runs/wait answers as such if it has not
// begun its answer, or a fault, logged in full and shown as a generic
// problem.
func (s *Server) refuse(l *liveRun, err error) {
	p := asProblem(err)
	p.RequestID = l.requestID
	if p.Status >= 500 {
		s.cfg.Log.Error("run failed", "run", l.rec.ID, "thread", l.rec.Thread, "request_id", l.requestID, "err", err)
	} else {
		l.refused = p
	}
	body := p.event(strings.TrimPrefix(p.Type, problemBase))
	s.emit(l, "error", body)
	l.final = map[string]any{"__error__": body}
}

// drive starts, resumes or continues the thread as the run asks.
func (s *Server) drive(ctx context.Context, e *runner.Engine, g *runner.Graph, l *liveRun) (*runner.Result, error) {
	thread, q := l.rec.Thread, l.q
	p := l.plan
	if p == nil { // a queued run: its thread has moved since it was admitted
		np, err := s.plan(ctx, g, thread, q, false)
		if err != nil {
			l.from = s.newestCheckpoint(context.WithoutCancel(ctx), thread)
			return nil, err
		}
		p = &np
	}
	l.from = p.from
	mode := p.mode
	if mode == modeGoOn {
		return goOn(ctx, e, g, thread, q)
	}
	input, err := applyCommand(ctx, e, g, thread, q, mode)
	if err != nil {
		return nil, err
	}
	if q.goTo == runner.End {
		return ended(ctx, e, g, thread)
	}
	opts := q.opts
	opts.RunID = l.rec.ID
	if mode == modeRun {
		opts.New = p.from == 0 // the plan read no checkpoint: the run need not read again
		return e.RunWith(ctx, g, thread, input, opts)
	}
	return e.Resume(ctx, g, thread, runner.ResumeOptions{Value: q.resume, Expire: q.expire, RunOptions: opts})
}

// goOn continues a run taken over from a server that stopped after it
// wrote checkpoints, its command applied: from the thread's newest, or,
// where the run had reached its end, it ends as the thread stands.
func goOn(ctx context.Context, e *runner.Engine, g *runner.Graph, thread string, q *runRequest) (*runner.Result, error) {
	ts, err := e.State(ctx, g, thread, 0)
	if err != nil {
		return nil, err
	}
	if ts.Status == runner.StatusRunning || ts.Status == runner.StatusUpdated {
		return e.Resume(ctx, g, thread, runner.ResumeOptions{RunOptions: q.opts})
	}
	return endedAt(ts), nil
}

// ended is the result of a run that ended its thread with command.goto
// __end__: the thread as it stands.
func ended(ctx context.Context, e *runner.Engine, g *runner.Graph, thread string) (*runner.Result, error) {
	ts, err := e.State(ctx, g, thread, 0)
	if err != nil {
		return nil, err
	}
	return endedAt(ts), nil
}

// endedAt is the result of a run that ended where ts stands; one that
// failed or timed out says so.
func endedAt(ts *runner.ThreadState) *runner.Result {
	res := &runner.Result{Thread: ts.Thread, Status: ts.Status, State: ts.State, Checkpoint: ts.Checkpoint}
	if ts.Status == runner.StatusFailed || ts.Status == runner.StatusTimedOut {
		res.Error = &runner.RunError{Code: ts.Status, Node: ts.Node, Message: fmt.Sprintf("the thread %s at checkpoint %d", ts.Status, ts.Checkpoint)}
	}
	return res
}

// applyCommand writes what a run carries beside a new turn's input before
// the thread goes on — the input of a run that resumes or moves it,
// command.update (Engine.Update), command.goto (Engine.Goto) — and
// returns the new turn's input. On a thread without checkpoints
// command.update is part of the first input.
func applyCommand(ctx context.Context, e *runner.Engine, g *runner.Graph, thread string, q *runRequest, mode int) (map[string]any, error) {
	if mode == modeRun {
		if q.update == nil {
			return q.input, nil
		}
		_, err := e.Update(ctx, g, thread, q.update, "")
		if errors.Is(err, store.ErrNotFound) {
			input := clone(q.input)
			for k, v := range q.update {
				input[k] = v
			}
			return input, nil
		}
		return q.input, err
	}
	if q.input != nil { // merged into the paused state, then resumed
		if _, err := e.Update(ctx, g, thread, q.input, ""); err != nil {
			return nil, err
		}
	}
	var err error
	switch {
	case q.goTo != "":
		_, err = e.Goto(ctx, g, thread, q.update, q.goTo)
	case q.update != nil:
		_, err = e.Update(ctx, g, thread, q.update, "")
	}
	return nil, err
}

// newestCheckpoint is the id of thread's newest checkpoint (0: it has
// none; -1: unknown, the store failed), where a rollback returns it.
func (s *Server) newestCheckpoint(ctx context.Context, thread string) int64 {
	h, err := s.cfg.Store.History(ctx, thread)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return 0
	case err != nil:
		s.cfg.Log.Error("the checkpoint a run starts from", "thread", thread, "err", err)
		return -1
	}
	return h[len(h)-1].ID
}

// rollback ends a run cancelled to be undone: its thread goes back to
// the checkpoint the run started from, the run ends and its record is
// deleted, as LangGraph's rollback does.
func (s *Server) rollback(l *liveRun) {
	ctx := context.WithoutCancel(l.ctx)
	if err := s.restore(ctx, l); err != nil {
		s.cfg.Log.Error("rollback: the thread is left as the run left it", "run", l.rec.ID, "thread", l.rec.Thread, "err", err)
	}
	l.final, l.undone = map[string]any{}, true
	s.finish(l, store.RunInterrupted)
}

// restore makes the checkpoint l started from its thread's newest again
// (Engine.Rewind); a thread that had none loses those the run wrote.
func (s *Server) restore(ctx context.Context, l *liveRun) error {
	now := s.newestCheckpoint(ctx, l.rec.Thread)
	switch {
	case l.from < 0 || now < 0:
		return errors.New("the store did not say where the thread stood")
	case now == l.from:
		return nil
	case l.from == 0:
		return s.cfg.Store.Delete(ctx, l.rec.Thread)
	}
	_, err := (&runner.Engine{Store: s.cfg.Store}).Rewind(ctx, l.g, l.rec.Thread, l.from)
	return err
}

// finalValues is what runs/wait returns: the thread's values, with the
// pending interrupt as __interrupt__; those of a completed run are its
// result's.
func (s *Server) finalValues(ctx context.Context, g *runner.Graph, thread string, res *runner.Result) map[string]any {
	if res.Status == runner.StatusCompleted && res.Interrupt == nil && res.State != nil {
		return outValues(res.State)
	}
	ts, err := (&runner.Engine{Store: s.cfg.Store}).State(ctx, g, thread, 0)
	if err != nil {
		return outValues(res.State)
	}
	out := outValues(ts.State)
	if ts.Interrupt != nil {
		out = clone(out)
		out["__interrupt__"] = interruptsOf(ts)
	}
	return out
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// finish ends l with status: the thread is free for its next queued run
// (started here) before the status is written, so a client that sees the
// run ended may start another; then the stream gets its end, and a run
// undone (rolled back) is deleted.
func (s *Server) finish(l *liveRun, status string) {
	s.mu.Lock()
	if s.active[l.rec.Thread] == l {
		delete(s.active, l.rec.Thread)
		if q := s.queued[l.rec.Thread]; len(q) > 0 && !s.closing {
			if s.queued[l.rec.Thread] = q[1:]; len(q) == 1 {
				delete(s.queued, l.rec.Thread)
			}
			s.start(q[0])
		}
	}
	s.mu.Unlock()
	s.end(l, status)
	s.ended(l, status)
	s.changes.publish(l.rec.Tenant, threadChange{Thread: access.ThreadID(l.rec.Thread), Reason: "run_ended", Status: status})
	if l.undone {
		if err := s.runs.DeleteRun(context.WithoutCancel(l.ctx), l.rec.ID); err != nil {
			s.cfg.Log.Error("rollback: run record not deleted", "run", l.rec.ID, "err", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, l.rec.ID)
	close(l.done)
	l.cancel(errEnded) // releases the run's context from the server's
}
