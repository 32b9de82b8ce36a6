package server

import (
	"sync"
	"time"

	"github.com/runner-dev/runner/runner"
)

// observer follows one run for the server's metrics, traces and
// conversation streams: every runtime event of the run (its child
// threads' too), in order, then its end.
type observer interface {
	event(ev runner.Event)
	end(e runEnd)
}

// runEnd is how a run ended: its status as the API reports it (success,
// error, timeout, interrupted), its error message, and when.
type runEnd struct {
	status string
	err    string
	at     time.Time
}

// watch is the observation of one run, from the moment it starts.
type watch struct {
	mu    sync.Mutex
	start time.Time
	obs   []observer
	conv  *convRun
}

// observe starts watching l and returns the sink that shows its events
// to the observers, then passes them to next.
func (s *Server) observe(l *liveRun, next runner.Sink) runner.Sink {
	w := &watch{start: time.Now()}
	w.conv = s.convs.begin(l)
	w.obs = []observer{s.metrics.run(l, w.start)}
	if s.tracing != nil { // no span is built without a tracer
		w.obs = append(w.obs, s.tracing.run(l, w.start))
	}
	w.obs = append(w.obs, w.conv, hookWatch{s, l})
	l.watch = w
	s.cfg.Log.Info("run started", "run", l.rec.ID, "thread", l.rec.Thread, "assistant", l.rec.Assistant, "tenant", l.rec.Tenant)
	return func(ev runner.Event) {
		w.mu.Lock()
		for _, o := range w.obs {
			o.event(ev)
		}
		w.mu.Unlock()
		next(ev)
	}
}

// ended tells the observers of l that it ended with status, and logs it.
// A run that never started (dropped from its queue) is only counted.
func (s *Server) ended(l *liveRun, status string) {
	e := runEnd{status: status, err: finalError(l.final), at: time.Now()}
	w := l.watch
	if w == nil {
		s.metrics.countRun(l, status)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range w.obs {
		o.end(e)
	}
	d := e.at.Sub(w.start)
	attrs := []any{"run", l.rec.ID, "thread", l.rec.Thread, "assistant", l.rec.Assistant, "tenant", l.rec.Tenant,
		"status", status, "duration_ms", d.Milliseconds()}
	if e.err != "" {
		s.cfg.Log.Warn("run ended", append(attrs, "error", e.err)...)
		return
	}
	s.cfg.Log.Info("run ended", attrs...)
}

// finalError is the message of a run's __error__, if it failed.
func finalError(final any) string {
	m, _ := final.(map[string]any)
	e, _ := m["__error__"].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}
