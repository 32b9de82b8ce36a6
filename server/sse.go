package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// stream writes the run's persisted events after the id after as
// server-sent events, each with its id, then the live ones as they come,
// until the run's end event; a comment line keeps an idle stream alive.
// keep, when not nil, says which events are written.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, run string, l *liveRun, after int64, keep func(event string) bool) {
	rc := startSSE(w)
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	s.relay(r.Context(), w, rc, beat, relayed{run: run, l: l, after: after, idOf: seqID, keep: keep})
}

// relayed is the run a relay writes: from after on, each event with the
// id idOf gives it, those keep keeps (nil: all).
type relayed struct {
	run   string
	l     *liveRun
	after int64
	idOf  func(run string, seq int64) string
	keep  func(event string) bool
}

// startSSE answers with an event stream and flushes its headers.
func startSSE(w http.ResponseWriter) *http.ResponseController {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	return rc
}

// seqID is an event's id in its run's stream: its number.
func seqID(_ string, seq int64) string { return strconv.FormatInt(seq, 10) }

// relay writes a run's persisted events, then the live ones as they
// come; it reports whether it wrote the run's end, false when the client
// went away first. A run not live here has all its events persisted
// already; one rolled back may be deleted before its stream reads its end.
func (s *Server) relay(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, beat *time.Ticker, in relayed) bool {
	run, l, after := in.run, in.l, in.after
	for {
		var wake <-chan struct{}
		if l != nil {
			wake = l.changed()
		}
		final := l == nil || l.ended() // every event it has is persisted
		evs, err := s.runs.Events(ctx, run, after)
		if err != nil {
			writeEvent(w, "", "error", []byte(fmt.Sprintf(`{"error":"store","message":%q}`, err.Error())))
			return false
		}
		for _, ev := range evs {
			if in.keep == nil || in.keep(ev.Event) {
				writeEvent(w, in.idOf(run, ev.Seq), ev.Event, ev.Data)
			}
			after = ev.Seq
			if ev.Event == "end" {
				return rc.Flush() == nil
			}
		}
		if err := rc.Flush(); err != nil || final {
			return err == nil
		}
		if !s.idle(ctx, w, beat, wake) {
			return false
		}
	}
}

// idle waits for wake, writing a heartbeat comment at each beat; false
// when the client went away.
func (s *Server) idle(ctx context.Context, w http.ResponseWriter, beat *time.Ticker, wake <-chan struct{}) bool {
	for {
		select {
		case <-wake:
			return true
		case <-beat.C:
			// a comment line alone: a blank line after it would make
			// SDKs that keep the last event id dispatch an empty event
			if _, err := w.Write([]byte(": heartbeat\n")); err != nil {
				return false
			}
			if err := http.NewResponseController(w).Flush(); err != nil {
				return false
			}
		case <-ctx.Done():
			return false
		}
	}
}

// writeEvent writes one event: its id, its name and its JSON on one data
// line.
func writeEvent(w http.ResponseWriter, id, event string, data []byte) {
	if len(data) == 0 {
		data = []byte("null")
	}
	var b bytes.Buffer
	if id != "" {
		fmt.Fprintf(&b, "id: %s\n", id)
	}
	fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", event, bytes.ReplaceAll(data, []byte("\n"), nil))
	_, _ = w.Write(b.Bytes())
}
