package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// liveRun is a run pending or running in this process.
type liveRun struct {
	rec       *store.RunRecord
	q         *runRequest
	g         *runner.Graph
	stateless bool
	from      int64 // the checkpoint the run started from (0: none; -1: unknown)
	// plan is how the run drives its thread, when planned as it was
	// admitted and started at once (nil: planned when it starts).
	plan   *planned
	undone bool // rolled back: deleted once it ends

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the run ended and its stream has its end
	// streams counts the streams that started with the run: a stateless
	// run's thread is deleted once they have read its end.
	streams sync.WaitGroup

	// emitMu serializes the run's events and their writes; pending are
	// the events of the step under way, written in one batch when it ends
	// (flushLocked).
	emitMu  sync.Mutex
	pending []store.EventInput
	hold    *time.Timer // writes pending events held while nobody reads
	// readers counts the streams reading the run as it goes: while there
	// are none, its values events are stored as references and its steps'
	// events held (holdLocked).
	readers atomic.Int32
	mu      sync.Mutex
	wake    chan struct{} // closed and replaced when events are appended
	final   any           // what runs/wait and join return
	watch   *watch        // its observation, once it started
	modes   modeState     // under emitMu
	// launch starts a run admitted with a watcher (nil: started, or
	// queued): its stream runs it once it has written meta, the run's
	// metadata event (Seq 0: not saved); POST /execute at once.
	launch func()
	meta   store.RunEvent
	// requestID names the request that admitted the run; refused is the
	// problem that kept it from starting or going on (a 4xx), if any.
	requestID string
	refused   *problem
}

func newLiveRun(parent context.Context, rec *store.RunRecord, q *runRequest, g *runner.Graph, stateless bool) *liveRun {
	l := &liveRun{rec: rec, q: q, g: g, stateless: stateless, done: make(chan struct{}), wake: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancelCause(parent)
	return l
}

// run starts l if it was admitted with a watcher that starts it (launch),
// once; the request that admitted it calls it.
func (l *liveRun) run() {
	if start := l.launch; start != nil {
		l.launch = nil
		start()
	}
}

// changed returns a channel closed at the next appended events.
func (l *liveRun) changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wake
}

// attach counts a stream reading l as it goes and writes l's held
// events, so the stream finds them in the store; detach when it is done.
func (s *Server) attach(l *liveRun) {
	l.readers.Add(1)
	l.emitMu.Lock()
	defer l.emitMu.Unlock()
	s.flushLocked(l)
}

func (l *liveRun) detach() { l.readers.Add(-1) }

// ended reports whether the run has ended.
func (l *liveRun) ended() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// add appends an event of run, its data as JSON, to events; one whose
// data does not marshal is logged and left out.
func (s *Server) add(events []store.EventInput, run, event string, data any) []store.EventInput {
	raw, err := runner.MarshalJSON(data)
	if err != nil {
		s.cfg.Log.Error("run event not saved", "run", run, "event", event, "err", err)
		return events
	}
	return append(events, store.EventInput{Event: event, Data: raw})
}

// append persists events of run in one write and returns the Seq of the
// last; a failure is logged (the run goes on: its checkpoints are what
// counts) and returns 0.
func (s *Server) append(ctx context.Context, run string, events []store.EventInput) int64 {
	seq, err := s.runs.AppendEvents(context.WithoutCancel(ctx), run, events)
	if err != nil {
		s.cfg.Log.Error("run events not saved", "run", run, "events", len(events), "err", err)
	}
	return seq
}

// emit persists an event of l's run with those pending before it, and
// wakes its streams.
func (s *Server) emit(l *liveRun, event string, data any) {
	l.emitMu.Lock()
	defer l.emitMu.Unlock()
	s.emitLocked(l, event, data)
	s.flushLocked(l)
}

// emitLocked queues an event of l's run until its step ends; the caller
// holds l.emitMu.
func (s *Server) emitLocked(l *liveRun, event string, data any) {
	l.pending = s.add(l.pending, l.rec.ID, event, data)
}

// flushLocked persists l's pending events in one batch and wakes its
// streams; the caller holds l.emitMu, so batches are written in order,
// while streams waiting on l.mu are not held up by the write.
func (s *Server) flushLocked(l *liveRun) {
	l.unhold()
	if len(l.pending) == 0 {
		return
	}
	s.append(s.ctx, l.rec.ID, l.pending)
	s.wakeLocked(l)
}

// end writes l's final status with its last events and its end event,
// in one write (RunStore.EndRun), and wakes its streams: a reader sees
// the run ended with every event, or neither.
func (s *Server) end(l *liveRun, status string) {
	l.emitMu.Lock()
	defer l.emitMu.Unlock()
	l.unhold()
	s.emitLocked(l, "end", nil)
	if err := s.runs.EndRun(context.WithoutCancel(l.ctx), l.rec.ID, status, l.pending); err != nil {
		s.cfg.Log.Error("run end not saved", "run", l.rec.ID, "status", status, "events", len(l.pending), "err", err)
	}
	s.wakeLocked(l)
}

// unhold stops the timer that writes l's held events; the caller holds
// l.emitMu.
func (l *liveRun) unhold() {
	if l.hold != nil {
		l.hold.Stop()
		l.hold = nil
	}
}

// wakeLocked empties l's pending events, written, and wakes its streams;
// the caller holds l.emitMu.
func (s *Server) wakeLocked(l *liveRun) {
	clear(l.pending)
	l.pending = l.pending[:0]
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.wake)
	l.wake = make(chan struct{})
}

// event is p as the data of an error event, and of runs/wait's
// __error__: the problem's members, with the two LangGraph's clients
// read: error, a code, and message, the detail.
func (p *problem) event(code string) map[string]any {
	out := map[string]any{"type": p.Type, "title": p.Title, "detail": p.Detail, "error": code, "message": p.Detail}
	if p.Status != 0 {
		out["status"] = p.Status
	}
	if len(p.Errors) > 0 {
		out["errors"] = p.Errors
	}
	if p.RequestID != "" {
		out["request_id"] = p.RequestID
	}
	return out
}

// runFailed is the error event of a run that failed: code says how
// (node_error, max_steps, timeout, budget_exceeded, server_lost).
func runFailed(code, msg string) map[string]any {
	return (&problem{Type: typeRunFailed, Title: "Run failed", Detail: msg}).event(code)
}

// streamEnded is the error event that ends a stream before its run's end:
// code says why (stream_timeout, thread_deleted, store).
func streamEnded(code, msg string) map[string]any {
	return (&problem{Type: typeStreamEnded, Title: "Stream ended", Detail: msg}).event(code)
}

// busy reports whether a run of thread runs or waits here.
func (s *Server) busy(thread string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active[thread] != nil || len(s.queued[thread]) > 0
}
