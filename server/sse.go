package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// stream writes the run's persisted events after the id after as
// server-sent events, each with its id, then the live ones as they come,
// until the run's end event; a comment line keeps an idle stream alive.
// keep, when not nil, says which events are written.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, run string, l *liveRun, after int64, keep func(event string) bool) {
	sw := s.openStream(w)
	defer sw.close()
	s.relay(r.Context(), sw, relayed{run: run, l: l, after: after, idOf: seqID, keep: keep})
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

// seqID is an event's id in its run's stream: its number.
func seqID(_ string, seq int64) string { return strconv.FormatInt(seq, 10) }

// relay writes a run's persisted events, then the live ones as they
// come; it reports whether it wrote the run's end, false when the client
// went away or the stream reached its maximum duration first. A run that
// has ended and is not live here has all its events persisted already;
// one pending or running but not live here runs on another server
// sharing the store, or is being admitted here: its events are polled
// every remotePoll, and the relay follows it live once it is admitted
// here. One rolled back may be deleted before its stream reads its end.
func (s *Server) relay(ctx context.Context, sw *streamWriter, in relayed) bool {
	run, after := in.run, in.after
	var l *liveRun
	follow := func(live *liveRun) {
		if l = live; l != nil {
			s.attach(l)
		}
	}
	follow(in.l)
	defer func() {
		if l != nil {
			l.detach()
		}
	}()
	for {
		if l == nil {
			follow(s.liveRun(run))
		}
		wake, final := s.nextWake(ctx, run, l)
		evs, err := s.runs.Events(ctx, run, after)
		if err == nil {
			evs, err = s.kept(ctx, evs, in.keep)
		}
		if err != nil {
			s.cfg.Log.Error("stream: the run's events cannot be read", "run", run, "err", err)
			p := asProblem(err)
			data, _ := json.Marshal(streamEnded("store", p.Detail+"; rejoin its stream with Last-Event-ID: "+in.idOf(run, after)))
			writeEvent(sw.w, "", "error", data)
			sw.flush()
			return false
		}
		for _, ev := range evs {
			if ev.Event != "" {
				writeEvent(sw.w, in.idOf(run, ev.Seq), ev.Event, ev.Data)
			}
			after = ev.Seq
			if ev.Event == "end" {
				return sw.flush()
			}
		}
		if !sw.flush() || final {
			return sw.flush()
		}
		if !s.idle(ctx, sw, wake, nil, fmt.Sprintf("rejoin its stream with Last-Event-ID: %s", in.idOf(run, after))) {
			return false
		}
	}
}

// kept returns evs with the values references among them rebuilt, and
// the name of each event keep does not keep (when not nil) blanked.
func (s *Server) kept(ctx context.Context, evs []store.RunEvent, keep func(event string) bool) ([]store.RunEvent, error) {
	for i := range evs {
		name := evs[i].Event
		if name == valuesRef {
			name = "values"
		}
		if keep != nil && !keep(name) {
			evs[i].Event = ""
		}
	}
	return evs, s.resolveEvents(ctx, evs)
}

// nextWake is what a relay of run waits on for more events: the live
// run's change, or, for a run not live here, the next poll; final when
// every event the run will have is persisted.
func (s *Server) nextWake(ctx context.Context, run string, l *liveRun) (<-chan struct{}, bool) {
	if l != nil {
		return l.changed(), l.ended()
	}
	if !s.unended(ctx, run) {
		return nil, true
	}
	c := make(chan struct{})
	time.AfterFunc(remotePoll, func() { close(c) })
	return c, false
}

// idle waits for wake or poll (nil: no poll), writing a heartbeat comment
// at each beat; false when the client went away, or when the stream
// reached its maximum duration (it then ends with an error event saying
// how to rejoin).
func (s *Server) idle(ctx context.Context, sw *streamWriter, wake <-chan struct{}, poll <-chan time.Time, rejoin string) bool {
	for {
		select {
		case <-wake:
			return true
		case <-poll:
			return true
		case <-sw.beat.C:
			if !sw.heartbeat() {
				return false
			}
		case <-sw.expired:
			sw.expire(fmt.Sprintf("the stream reached its maximum duration of %s; the run goes on: %s", s.cfg.MaxStream, rejoin))
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// remotePoll is how often a stream polls the events of a run on another
// server.
const remotePoll = 200 * time.Millisecond

// unended reports whether run is pending or running, not a ghost (reclaim.go):
// on another server, or here once admitted.
func (s *Server) unended(ctx context.Context, run string) bool {
	rec, err := s.runs.Run(ctx, run)
	if err == nil {
		rec, err = s.reclaim(ctx, rec)
	}
	return err == nil && (rec.Status == store.RunPending || rec.Status == store.RunRunning)
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

// openStream starts an event stream on w, whose headers go out with its
// first flush (with the first events, when there are some at once); close
// it when done.
func (s *Server) openStream(w http.ResponseWriter) *streamWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sw := &streamWriter{w: w, rc: http.NewResponseController(w), beat: time.NewTicker(s.cfg.Heartbeat), timer: time.NewTimer(s.cfg.MaxStream)}
	sw.expired = sw.timer.C
	return sw
}

// begin writes the metadata event of l, a run admitted with its stream,
// with the stream's headers, then starts the run (one queued waits its
// turn): the client has its first event, from memory, before the run
// takes the CPU. It returns the event's Seq, where the relay goes on (0:
// the event was not saved, or the run is queued; the relay writes what
// was).
func (s *Server) begin(sw *streamWriter, l *liveRun) int64 {
	if l.launch == nil { // queued behind another run: the relay writes its events
		return 0
	}
	defer l.run()
	if l.meta.Seq == 0 {
		return 0
	}
	writeEvent(sw.w, seqID(l.rec.ID, l.meta.Seq), l.meta.Event, l.meta.Data)
	sw.flush()
	return l.meta.Seq
}

// close stops the stream's timers.
func (sw *streamWriter) close() {
	sw.beat.Stop()
	sw.timer.Stop()
}

func (sw *streamWriter) flush() bool { return sw.rc.Flush() == nil }

// heartbeat writes the keep-alive comment: a comment line alone, as a
// blank line after it would make SDKs that keep the last event id
// dispatch an empty event.
func (sw *streamWriter) heartbeat() bool {
	_, err := sw.w.Write([]byte(": heartbeat\n"))
	return err == nil && sw.flush()
}

// expire ends the stream with an error event saying why.
func (sw *streamWriter) expire(msg string) {
	data, _ := json.Marshal(streamEnded("stream_timeout", msg))
	writeEvent(sw.w, "", "error", data)
	sw.flush()
}

// deleted ends the stream of the thread a client knows as id, which was
// deleted, with an error event saying so.
func (sw *streamWriter) deleted(id string) {
	data, _ := json.Marshal(streamEnded("thread_deleted", fmt.Sprintf("thread %s was deleted; its stream ends", id)))
	writeEvent(sw.w, "", "error", data)
	sw.flush()
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
