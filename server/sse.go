package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// stream writes the run's persisted events after the id after as
// server-sent events, each with its id, then the live ones as they come,
// until the run's end event; a comment line keeps an idle stream alive.
// A run not live here has all its events persisted already, unless it
// runs on another server sharing the store: then its events are polled
// for every remotePoll until it ends.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, run string, l *liveRun, after int64) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	var poll <-chan time.Time
	if l == nil {
		t := time.NewTicker(remotePoll)
		defer t.Stop()
		poll = t.C
	}
	ctx := r.Context()
	for {
		var wake <-chan struct{}
		if l != nil {
			wake = l.changed()
		}
		evs, err := s.runs.Events(ctx, run, after)
		if err != nil {
			writeEvent(w, 0, "error", []byte(fmt.Sprintf(`{"error":"store","message":%q}`, err.Error())))
			return
		}
		for _, ev := range evs {
			writeEvent(w, ev.Seq, ev.Event, ev.Data)
			after = ev.Seq
			if ev.Event == "end" {
				_ = rc.Flush()
				return
			}
		}
		if err := rc.Flush(); err != nil || l == nil && !s.runsElsewhere(ctx, run) {
			return
		}
		select {
		case <-wake:
		case <-poll:
		case <-beat.C:
			if _, err := w.Write([]byte(": heartbeat\n\n")); err != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// remotePoll is how often a stream polls the events of a run on another
// server.
const remotePoll = 200 * time.Millisecond

// runsElsewhere reports whether run is pending or running on another
// server, not a ghost (reap).
func (s *Server) runsElsewhere(ctx context.Context, run string) bool {
	rec, err := s.runs.Run(ctx, run)
	if err == nil {
		rec, err = s.reap(ctx, rec)
	}
	return err == nil && (rec.Status == store.RunPending || rec.Status == store.RunRunning) && s.liveRun(run) == nil
}

// writeEvent writes one event: its id, its name and its JSON on one data
// line.
func writeEvent(w http.ResponseWriter, id int64, event string, data []byte) {
	if len(data) == 0 {
		data = []byte("null")
	}
	var b bytes.Buffer
	if id > 0 {
		fmt.Fprintf(&b, "id: %d\n", id)
	}
	fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", event, bytes.ReplaceAll(data, []byte("\n"), nil))
	_, _ = w.Write(b.Bytes())
}
