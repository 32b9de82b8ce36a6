package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// threadStream is LangGraph's thread stream: the events of whatever runs
// on the thread, one run after another as they come, until the client
// goes away or the thread is deleted. Each event's id is run_id:seq, so
// Last-Event-ID resumes after it: the rest of that run, then the runs
// created after it. Without one it joins the thread's runs that have not
// ended — the current one from its start — then those that come.
func (s *Server) threadStream(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	rec, err := s.thread(ctx, r.PathValue("thread"))
	if err != nil {
		return err
	}
	thread := rec.ID
	for _, m := range r.URL.Query()["stream_mode"] {
		if m != "" && m != "run_modes" {
			return problemf(http.StatusUnprocessableEntity,
				"thread stream_mode %q is not supported: runner streams run_modes, the runs' own events (lifecycle and state_update events are not kept)", m)
		}
	}
	run, after := parseThreadEventID(r.Header.Get("Last-Event-ID"))
	if run != "" {
		if rr, err := s.runs.Run(ctx, run); err == nil && rr.Thread != thread {
			return problemf(http.StatusNotFound, "thread %s has no run %q", r.PathValue("thread"), run)
		}
	}
	var ended map[string]bool // the runs not to stream: those that ended before the stream began
	if run == "" {
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
			run = s.runAfter(ctx, thread, last, ended)
			if s.gone(ctx, rec) { // checked after the run was picked: it is the thread's, not a new one's
				sw.deleted(r.PathValue("thread"))
				return nil
			}
			if run == "" {
				if !s.idle(ctx, sw, wake, time.After(s.cfg.Heartbeat), "open the thread's stream again") {
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

// gone reports whether the thread whose record was rec is not the one its
// id names any more, for the request's principal: deleted (and perhaps
// created again), or no longer its to use. A store that cannot answer is
// not taken for a deletion.
func (s *Server) gone(ctx context.Context, rec *store.ThreadRecord) bool {
	cur, err := s.runs.Thread(ctx, rec.ID)
	if errors.Is(err, store.ErrNotFound) {
		return true
	}
	return err == nil && (!cur.CreatedAt.Equal(rec.CreatedAt) || access.Authorize(principal(ctx), cur.ID, cur.Tenant) != nil)
}

// threadDeleted wakes the streams of the deleted thread: they find it
// gone and end.
func (s *Server) threadDeleted(thread string) {
	s.mu.Lock()
	s.runAdmitted(thread)
	s.mu.Unlock()
	s.convs.wake(thread)
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
// admitted, or the thread is deleted.
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
