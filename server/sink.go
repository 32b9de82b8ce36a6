package server

import (
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
)

// known are the runtime's own event types; a node's others are custom.
var known = map[string]bool{runner.EventRunStart: true, runner.EventNodeStart: true, runner.EventNodeEnd: true,
	runner.EventLLMToken: true, runner.EventLLMCall: true, runner.EventLLMResult: true, runner.EventToolCall: true, runner.EventToolResult: true,
	runner.EventRule: true, runner.EventInterrupt: true, runner.EventCheckpoint: true, runner.EventError: true, runner.EventDone: true}

// flushes are the runtime's events that end a step, or the run: the
// events so far are then written, in one batch, at once while a stream
// reads the run, else held with the next ones for at most maxHold. A run
// that ends sooner writes them with its end event (Server.end): one write.
var flushes = map[string]bool{runner.EventCheckpoint: true, runner.EventInterrupt: true, runner.EventError: true, runner.EventDone: true}

// maxHold is the longest a run nobody reads keeps its events before
// writing them: a run that ends sooner writes its events in one batch.
const maxHold = 100 * time.Millisecond

// sink turns the engine's events into the stream modes the run asked for:
// values (the state after each step), updates ({node: update}), messages
// (each message a step added, whole: runner has no message chunks of its
// own), debug (every event), custom (a node's own events), and tasks,
// checkpoints and events (modes.go). A step's
// events are written together when it ends.
func (s *Server) sink(l *liveRun) runner.Sink {
	return func(ev runner.Event) {
		l.emitMu.Lock() // one event at a time, in order
		defer l.emitMu.Unlock()
		s.streamEvent(l, ev)
		switch {
		case !flushes[ev.Type]:
		case l.readers.Load() > 0:
			s.flushLocked(l)
		default:
			s.holdLocked(l)
		}
	}
}

// holdLocked keeps l's pending events for at most maxHold, when they are
// written unless something wrote them first; the caller holds l.emitMu.
func (s *Server) holdLocked(l *liveRun) {
	if l.hold != nil || len(l.pending) == 0 {
		return
	}
	l.hold = time.AfterFunc(maxHold, func() {
		l.emitMu.Lock()
		defer l.emitMu.Unlock()
		s.flushLocked(l)
	})
}

// streamEvent queues the stream events an engine event makes; the caller
// holds l.emitMu.
func (s *Server) streamEvent(l *liveRun, ev runner.Event) {
	if l.q.wants("debug") {
		s.emitLocked(l, "debug", map[string]any{"type": ev.Type, "step": ev.Step, "timestamp": stamp(ev.Time),
			"payload": map[string]any{"node": ev.Node, "thread": access.ThreadID(ev.Thread), "data": ev.Data}})
	}
	if !known[ev.Type] && l.q.wants("custom") {
		s.emitLocked(l, "custom", ev.Data)
	}
	if ev.Thread != l.rec.Thread { // a child thread's: only debug shows it
		return
	}
	s.modeEvents(l, ev)
	switch ev.Type {
	case runner.EventCheckpoint:
		s.valuesEvent(l, ev)
	case runner.EventNodeEnd:
		s.updateEvents(l, ev)
	case runner.EventInterrupt:
		intr, _ := ev.Data.(*runner.Interrupt)
		if intr == nil {
			return
		}
		body := map[string]any{"__interrupt__": interruptList(intr)}
		for _, mode := range []string{"updates", "values"} {
			if l.q.wants(mode) {
				s.emitLocked(l, mode, body)
			}
		}
	}
}

// valuesEvent streams the state a running or completed step left.
func (s *Server) valuesEvent(l *liveRun, ev runner.Event) {
	d, _ := ev.Data.(map[string]any)
	if !l.q.wants("values") || (d["status"] != runner.StatusRunning && d["status"] != runner.StatusCompleted) {
		return
	}
	id, _ := d["id"].(int64)
	if s.byReference(l) {
		s.emitValuesRef(l, id)
		return
	}
	state := ev.State
	if state == nil { // a runtime that does not hand it over: read it back
		ts, err := (&runner.Engine{Store: s.cfg.Store}).State(s.ctx, l.g, l.rec.Thread, id)
		if err != nil {
			s.cfg.Log.Error("state for a values event", "run", l.rec.ID, "err", err)
			return
		}
		state = ts.State
	}
	s.emitLocked(l, "values", outValues(state))
}

// updateEvents streams a step's update, and the messages it added.
func (s *Server) updateEvents(l *liveRun, ev runner.Event) {
	d, _ := ev.Data.(map[string]any)
	upd, _ := d["update"].(runner.Update)
	if l.q.wants("updates") {
		s.emitLocked(l, "updates", map[string]any{ev.Node: outValues(upd)})
	}
	msgs, ok := upd[messagesField].([]any)
	if m, one := upd[messagesField].(map[string]any); !ok && one {
		msgs = []any{m}
	}
	if len(msgs) == 0 {
		return
	}
	meta := map[string]any{"langgraph_node": ev.Node, "langgraph_step": ev.Step, "thread_id": access.ThreadID(l.rec.Thread), "run_id": l.rec.ID}
	for _, m := range msgs {
		if l.q.wants("messages-tuple") {
			s.emitLocked(l, "messages", []any{toLangChain(m), meta})
		}
	}
	if l.q.wants("messages") {
		out := make([]any, len(msgs))
		for i, m := range msgs {
			out[i] = toLangChain(m)
		}
		s.emitLocked(l, "messages/complete", out)
	}
}
