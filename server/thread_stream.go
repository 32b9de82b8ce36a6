package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/runner-dev/runner/runner/store"
)

// threadStream is LangGraph's thread stream: the events of whatever runs
// on the thread, one run after another as they come, until the client
// goes away. Each event's id is run_id:seq, so Last-Event-ID resumes
// after it: the rest of that run, then the runs created after it.
// Without one it joins the thread's runs that have not ended — the
// current one from its start — then those that come.
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
	var ended map[string]bool // the runs not to stream: those that ended before the stream began
	if run == "" {
		var err error
		if ended, err = s.endedRuns(ctx, thread); err != nil {
			return err
		}
	}
	sw := s.openStream(w)
	defer sw.close()
	sw.flush() // the client has the headers while the stream waits
	last := ""
	for {
		if run == "" {
			wake := s.threadChanged(thread)
			if run = s.runAfter(ctx, thread, last, ended); run == "" {
				if !s.idle(ctx, sw, wake, "open the thread's stream again") {
					return nil
				}
				continue
			}
		}
		if !s.relay(ctx, sw, relayed{run: run, l: s.liveRun(run), after: after, idOf: threadEventID}) {
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

// endedRuns are the ids of the thread's runs that have ended.
func (s *Server) endedRuns(ctx context.Context, thread string) (map[string]bool, error) {
	runs, err := s.runs.Runs(ctx, thread)
	if err != nil {
		return nil, err
	}
	ended := map[string]bool{}
	for _, r := range runs {
		if r.Status != store.RunPending && r.Status != store.RunRunning {
			ended[r.ID] = true
		}
	}
	return ended, nil
}

// runAfter is the thread's first run created after run (run ids are
// UUIDv7s, ordered by time; "": its first) that is not in skip.
func (s *Server) runAfter(ctx context.Context, thread, run string, skip map[string]bool) string {
	runs, err := s.runs.Runs(ctx, thread)
	if err != nil {
		return ""
	}
	next := ""
	for _, r := range runs {
		if r.ID > run && !skip[r.ID] && (next == "" || r.ID < next) {
			next = r.ID
		}
	}
	return next
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
