package server

import (
	"context"
	"encoding/json"
	"sync"

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
	undone    bool  // rolled back: deleted once it ends

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the run ended and its stream has its end
	// streams counts the streams that started with the run: a stateless
	// run's thread is deleted once they have read its end.
	streams sync.WaitGroup

	mu    sync.Mutex
	wake  chan struct{} // closed and replaced when an event is appended
	final any           // what runs/wait and join return
	watch *watch        // its observation, once it started
}

func newLiveRun(parent context.Context, rec *store.RunRecord, q *runRequest, g *runner.Graph, stateless bool) *liveRun {
	l := &liveRun{rec: rec, q: q, g: g, stateless: stateless, done: make(chan struct{}), wake: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancelCause(parent)
	return l
}

// changed returns a channel closed at the next appended event.
func (l *liveRun) changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wake
}

func (l *liveRun) notify() {
	l.mu.Lock()
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

// ended reports whether the run has ended.
func (l *liveRun) ended() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// append persists an event of run and returns its id; a failure is
// logged (the run goes on: its checkpoints are what counts).
func (s *Server) append(ctx context.Context, run, event string, data any) int64 {
	raw, err := json.Marshal(data)
	if err == nil {
		var seq int64
		if seq, err = s.runs.AppendEvent(context.WithoutCancel(ctx), run, event, raw); err == nil {
			return seq
		}
	}
	s.cfg.Log.Error("run event not saved", "run", run, "event", event, "err", err)
	return 0
}

// emit persists an event of l's run and wakes its streams.
func (s *Server) emit(l *liveRun, event string, data any) {
	s.append(s.ctx, l.rec.ID, event, data)
	l.notify()
}

// errorBody is the data of an error event, and of runs/wait's __error__.
func errorBody(kind, msg string) map[string]any { return map[string]any{"error": kind, "message": msg} }

// busy reports whether a run of thread runs or waits here.
func (s *Server) busy(thread string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active[thread] != nil || len(s.queued[thread]) > 0
}
