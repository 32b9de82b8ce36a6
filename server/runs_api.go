package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/runner-dev/runner/runner/store"
)

// threadRun returns the path's run if it belongs to the path's thread,
// which the request's principal may use (Server.thread).
func (s *Server) threadRun(r *http.Request) (*store.RunRecord, error) {
	thread, err := s.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return nil, err
	}
	rec, err := s.runs.Run(r.Context(), r.PathValue("run"))
	if err != nil || rec.Thread != thread.ID {
		return nil, problemf(http.StatusNotFound, "thread %s has no run %q", r.PathValue("thread"), r.PathValue("run"))
	}
	return s.reclaim(r.Context(), rec)
}

// listRuns lists a thread's runs, newest first (limit, offset, status).
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) error {
	thread, err := s.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	runs, err := s.runs.Runs(r.Context(), thread.ID)
	if err != nil {
		return err
	}
	for i := range runs {
		rec, err := s.reclaim(r.Context(), &runs[i])
		if err != nil {
			return err
		}
		runs[i] = *rec
	}
	status := r.URL.Query().Get("status")
	out := []map[string]any{}
	for _, rec := range slices.Backward(runs) {
		if status == "" || rec.Status == status {
			out = append(out, runJSON(&rec))
		}
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	writeJSON(w, http.StatusOK, page(out, limit, offset))
	return nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.threadRun(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, runJSON(rec))
	return nil
}

// deleteRun deletes a run that has ended, with its events.
func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.threadRun(r)
	if err != nil {
		return err
	}
	if s.liveRun(rec.ID) != nil {
		return problemf(http.StatusConflict, "run %s is %s; cancel it before deleting it", rec.ID, rec.Status)
	}
	if err := s.runs.DeleteRun(r.Context(), rec.ID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// joinRun waits for a run to end and returns the thread's values.
func (s *Server) joinRun(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.threadRun(r)
	if err != nil {
		return err
	}
	return s.answer(w, r, rec, s.liveRun(rec.ID), false)
}

// joinStream streams a run's events after Last-Event-ID, then live ones:
// those of the stream_mode query's modes (none, or empty: every mode).
// With cancel_on_disconnect the run is cancelled when the client leaves
// before it ends.
func (s *Server) joinStream(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.threadRun(r)
	if err != nil {
		return err
	}
	cancel, err := queryBool(r, "cancel_on_disconnect")
	if err != nil {
		return err
	}
	after, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	l := s.liveRun(rec.ID)
	s.stream(w, r, rec.ID, l, after, modeFilter(r.URL.Query()["stream_mode"]))
	if cancel && l != nil && r.Context().Err() != nil && !l.ended() {
		l.cancel(errCancelled)
	}
	return nil
}

// modeFilter keeps the events of the stream modes listed, with a run's
// metadata, error and end; nil (keep all) when none is listed.
func modeFilter(modes []string) func(event string) bool {
	modes = slices.DeleteFunc(slices.Clone(modes), func(m string) bool { return m == "" })
	if len(modes) == 0 {
		return nil
	}
	return func(event string) bool {
		if event == "metadata" || event == "error" || event == "end" {
			return true
		}
		for _, m := range modes {
			if event == m || strings.HasPrefix(event, m+"/") || m == "messages-tuple" && event == "messages" {
				return true
			}
		}
		return false
	}
}

// cancelRun cancels a pending or running run. With action interrupt (the
// default) it stops at its node, its thread resumable; with rollback its
// thread goes back to where it stood before the run, and the run is
// deleted. With wait=1 (or true) the answer waits for it.
func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.threadRun(r)
	if err != nil {
		return err
	}
	cause := errCancelled
	switch r.URL.Query().Get("action") {
	case "", "interrupt":
	case "rollback":
		cause = errRollback
	default:
		return problemf(http.StatusUnprocessableEntity, "unknown action %q", r.URL.Query().Get("action"))
	}
	wait, err := queryBool(r, "wait")
	if err != nil {
		return err
	}
	l := s.liveRun(rec.ID)
	if l == nil {
		return problemf(http.StatusConflict, "run %s has ended (%s)", rec.ID, rec.Status)
	}
	if s.dequeue(l) { // it never ran: nothing to undo
		l.final, l.undone = map[string]any{}, cause == errRollback
		s.finish(l, store.RunInterrupted)
	} else {
		l.cancel(cause)
	}
	if wait {
		select {
		case <-l.done:
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// queryBool reads a boolean query parameter as both SDKs send it: 1 or
// 0 (JS), true or false (Python); absent is false.
func queryBool(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); strings.ToLower(v) {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	default:
		return false, problemf(http.StatusUnprocessableEntity, "query parameter %s must be true or false (or 1 or 0), not %q", name, v)
	}
}

// dequeue removes l from its thread's queue; false when it is not queued.
func (s *Server) dequeue(l *liveRun) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queued[l.rec.Thread]
	i := slices.Index(q, l)
	if i < 0 {
		return false
	}
	s.queued[l.rec.Thread] = slices.Delete(q, i, i+1)
	return true
}
