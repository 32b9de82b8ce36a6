package server

import (
	"bytes"
	"fmt"
	"net/http"
	"time"
)

// stream writes the run's persisted events after the id after as
// server-sent events, each with its id, then the live ones as they come,
// until the run's end event; a comment line keeps an idle stream alive.
// A run not live here has all its events persisted already; one rolled
// back may be deleted before its stream reads its end.
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
	ctx := r.Context()
	for {
		var wake <-chan struct{}
		if l != nil {
			wake = l.changed()
		}
		final := l == nil || l.ended() // every event it has is persisted
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
		if err := rc.Flush(); err != nil || final { // a run rolled back is deleted with its end
			return
		}
		select {
		case <-wake:
		case <-beat.C:
			if _, err := w.Write([]byte(": heartbeat\n\n")); err != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
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
