package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// threadStream is LangGraph's thread stream: the events of whatever runs
// on the thread, one run after another as they come, until the client
// goes away. Each event's id is run_id:seq, so Last-Event-ID resumes
// after it: the rest of that run, then the runs created after it.
// Without one it joins the thread's current run from its start, or
// waits for the next.
func (s *Server) threadStream(w http.ResponseWriter, r *http.Request) error {
	ctx, thread := r.Context(), r.PathValue("thread")
	if _, err := s.record(ctx, thread); err != nil {
		return err
	}
	for _, m := range r.URL.Query()["stream_mode"] {
		if m != "" && m != "run_modes" {
			return problemf(http.StatusUnprocessableEntity,
				"thread stream_mode %q is not supported: runner streams run_modes, the runs' own events (lifecycle and state_update events are not kept)", m)
		}
	}
	run, after := parseThreadEventID(r.Header.Get("Last-Event-ID"))
	if run != "" {
		if rec, err := s.runs.Run(ctx, run); err == nil && rec.Thread != thread {
			return problemf(http.StatusNotFound, "thread %s has no run %q", thread, run)
		}
	}
	rc := startSSE(w)
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	last := ""
	if run == "" {
		if run = s.currentRun(thread); run == "" { // the next run created from now
			last = uuid.Must(uuid.NewV7()).String()
		}
	}
	for {
		if run == "" {
			wake := s.threadChanged(thread)
			if run = s.runAfter(ctx, thread, last); run == "" {
				if !s.idle(ctx, w, beat, wake) {
					return nil
				}
				continue
			}
		}
		if !s.relay(ctx, w, rc, beat, relayed{run: run, l: s.liveRun(run), after: after, idOf: threadEventID}) {
			return nil
		}
		last, run, after = run, "", 0
	}
}

// threadEventID is an event's id in a thread stream: run_id:seq.
func threadEventID(run string, seq int64) string { return run + ":" + strconv.FormatInt(seq, 10) }

// parseThreadEventID reads a thread stream's Last-Event-ID; an id that is
// not one is ignored.
func parseThreadEventID(id string) (string, int64) {
	run, seq, ok := strings.Cut(id, ":")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || err != nil || run == "" {
		return "", 0
	}
	return run, n
}

// currentRun is the thread's running run, else the first it has queued.
func (s *Server) currentRun(thread string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.active[thread]; l != nil {
		return l.rec.ID
	}
	if q := s.queued[thread]; len(q) > 0 {
		return q[0].rec.ID
	}
	return ""
}

// runAfter is the thread's first run created after run (run ids are
// UUIDv7s, ordered by time).
func (s *Server) runAfter(ctx context.Context, thread, run string) string {
	runs, err := s.runs.Runs(ctx, thread)
	if err != nil {
		return ""
	}
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		if r.ID > run {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return slices.Min(ids)
}

// threadChanged returns a channel closed when a run of thread is next
// admitted.
func (s *Server) threadChanged(thread string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.admitted[thread]
	if c == nil {
		c = make(chan struct{})
		s.admitted[thread] = c
	}
	return c
}

// runAdmitted wakes the thread streams of thread; s.mu is held.
func (s *Server) runAdmitted(thread string) {
	if c := s.admitted[thread]; c != nil {
		close(c)
		delete(s.admitted, thread)
	}
}
