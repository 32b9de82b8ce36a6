package server

import (
	"bytes"
	"context"
	"encoding/json"
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
// for every remotePoll until it ends. A stream open longer than the
// maximum ends with an error event: the client rejoins with Last-Event-ID.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, run string, l *liveRun, after int64) {
	sw := s.openStream(w)
	defer sw.close()
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
				sw.flush()
				return
			}
		}
		if !sw.flush() || l == nil && !s.runsElsewhere(ctx, run) {
			return
		}
		select {
		case <-wake:
		case <-poll:
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
