package server

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// getState returns a thread's state at its newest checkpoint or the one
// named in the path.
func (s *Server) getState(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	cp, err := parseCheckpoint(r.PathValue("checkpoint"))
	if err != nil {
		return err
	}
	ts, err := s.state(r.Context(), rec, cp)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, stateJSON(ts, rec.ID))
	return nil
}

// updateState writes values to a thread as if as_node had returned them
// (Engine.Update); checkpoint_id, when given, must be the newest.
func (s *Server) updateState(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	var q struct {
		Values       map[string]any `json:"values"`
		AsNode       string         `json:"as_node"`
		CheckpointID string         `json:"checkpoint_id"`
		Checkpoint   *struct {
			CheckpointID string `json:"checkpoint_id"`
		} `json:"checkpoint"`
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	if q.Checkpoint != nil && q.CheckpointID == "" {
		q.CheckpointID = q.Checkpoint.CheckpointID
	}
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	if s.busy(rec.ID) {
		return problemf(http.StatusConflict, "thread %s has a run running or pending; its state cannot be edited now", r.PathValue("thread"))
	}
	ts, err := s.state(r.Context(), rec, 0)
	if err != nil {
		return err
	}
	if ts == nil {
		return problemf(http.StatusConflict, "thread %s has no state yet: start a run first", r.PathValue("thread"))
	}
	if cp, err := parseCheckpoint(q.CheckpointID); err != nil {
		return err
	} else if cp != 0 && cp != ts.Checkpoint {
		return problemf(http.StatusConflict, "checkpoint %d is not thread %s's newest (%d): runner edits a thread where it stands", cp, r.PathValue("thread"), ts.Checkpoint)
	}
	values, _ := runner.NormalizeJSON(q.Values).(map[string]any)
	e := &runner.Engine{Store: s.cfg.Store}
	ts, err = e.Update(r.Context(), s.threadGraph(r.Context(), rec), rec.ID, inValues(values), q.AsNode)
	if err != nil {
		return inputProblem(err, "values")
	}
	writeJSON(w, http.StatusOK, map[string]any{"checkpoint": checkpointRef(rec.ID, ts.Checkpoint)})
	return nil
}

// history lists a thread's states, newest first: limit (default 10) of
// them, before a checkpoint if given.
func (s *Server) history(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	q, err := historyQuery(r)
	if err != nil {
		return err
	}
	before, err := parseCheckpoint(checkpointIn(q.Before))
	if err != nil {
		return err
	}
	out := []any{}
	hist, err := s.cfg.Store.History(r.Context(), rec.ID)
	if errors.Is(err, store.ErrNotFound) {
		writeJSON(w, http.StatusOK, out)
		return nil
	} else if err != nil {
		return err
	}
	if q.Limit <= 0 {
		q.Limit = 10
	}
	for _, cp := range slices.Backward(hist) {
		if len(out) >= q.Limit {
			break
		}
		if before != 0 && cp.ID >= before {
			continue
		}
		ts, err := s.state(r.Context(), rec, cp.ID)
		if errors.Is(err, store.ErrNotFound) { // pruned: what is left cannot rebuild it
			break
		} else if err != nil {
			return err
		}
		out = append(out, stateJSON(ts, rec.ID))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// historyRequest is what a history request asks for: at most Limit
// states (default 10), older than the checkpoint Before.
type historyRequest struct {
	Limit  int `json:"limit"`
	Before any `json:"before"`
}

// historyQuery reads a history request from a POST's body or, as
// LangGraph serves it too, a GET's query (limit, before).
func historyQuery(r *http.Request) (q historyRequest, err error) {
	if r.Method == http.MethodPost {
		return q, decodeBody(r, &q)
	}
	v := r.URL.Query()
	if l := v.Get("limit"); l != "" {
		if q.Limit, err = strconv.Atoi(l); err != nil || q.Limit < 0 {
			return q, fieldProblem("limit", "a number of checkpoints, not %q", l)
		}
	}
	if b := v.Get("before"); b != "" {
		q.Before = b
	}
	return q, nil
}

// checkpointIn reads a checkpoint id given as a string, {checkpoint_id}
// or {configurable: {checkpoint_id}}.
func checkpointIn(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if c, ok := x["configurable"].(map[string]any); ok {
			x = c
		}
		id, _ := x["checkpoint_id"].(string)
		return id
	}
	return ""
}
