package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// stream writes the run's persisted events after the id after as
// server-sent events, each with its id, then the live ones as they come,
// until the run's end event; a comment line keeps an idle stream alive.
// A run not live here has all its events persisted already. A stream
// open longer than the maximum ends with an error event: the client
// rejoins with Last-Event-ID.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, run string, l *liveRun, after int64) {
	sw := s.openStream(w)
	defer sw.close()
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
				sw.flush()
				return
			}
		}
		if !sw.flush() || l == nil {
			return
		}
		select {
		case <-wake:
		case <-sw.beat.C:
			if !sw.heartbeat() {
				return
			}
		case <-sw.expired:
			sw.expire(fmt.Sprintf("the stream reached its maximum duration of %s; the run goes on: rejoin its stream with Last-Event-ID: %d",
				s.cfg.MaxStream, after))
			return
		case <-ctx.Done():
			return
		}
	}
}

// streamWriter is an open event stream with its heartbeat and its
// maximum duration.
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	beat    *time.Ticker
	timer   *time.Timer
	expired <-chan time.Time
}

// openStream starts an event stream on w; close it when done.
func (s *Server) openStream(w http.ResponseWriter) *streamWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sw := &streamWriter{w: w, rc: http.NewResponseController(w), beat: time.NewTicker(s.cfg.Heartbeat), timer: time.NewTimer(s.cfg.MaxStream)}
	sw.expired = sw.timer.C
	sw.flush()
	return sw
}

// close stops the stream's timers.
func (sw *streamWriter) close() {
	sw.beat.Stop()
	sw.timer.Stop()
}

func (sw *streamWriter) flush() bool { return sw.rc.Flush() == nil }

// heartbeat writes the keep-alive comment.
func (sw *streamWriter) heartbeat() bool {
	_, err := sw.w.Write([]byte(": heartbeat\n\n"))
	return err == nil && sw.flush()
}

// expire ends the stream with an error event saying why.
func (sw *streamWriter) expire(msg string) {
	data, _ := json.Marshal(errorBody("stream_timeout", msg))
	writeEvent(sw.w, 0, "error", data)
	sw.flush()
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
