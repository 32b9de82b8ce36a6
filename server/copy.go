package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// copyThread is LangGraph's threads.copy: a new thread of the tenant that
// stands where the thread stands — or, with checkpoint_id, where it stood
// at that checkpoint (a fork) — with the same state, next node and
// pending interrupt and the same metadata, and a history of its own from
// there (Engine.Fork). thread_id names the copy (default: a new UUID).
// The original is not changed.
func (s *Server) copyThread(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	var q struct {
		ThreadID     string `json:"thread_id"`
		CheckpointID string `json:"checkpoint_id"`
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	cp, err := parseCheckpoint(q.CheckpointID)
	if err != nil {
		return err
	}
	g := s.threadGraph(r.Context(), rec)
	if g == nil {
		return problemf(http.StatusConflict, "thread %s has no state yet: there is nothing to copy", r.PathValue("thread"))
	}
	if q.ThreadID == "" {
		q.ThreadID = uuid.Must(uuid.NewV7()).String()
	} else if err := access.CheckThreadID(q.ThreadID); err != nil {
		return problemf(http.StatusUnprocessableEntity, "thread_id: %v", err)
	}
	meta, _ := json.Marshal(metadata(rec.Metadata))
	cpy := &store.ThreadRecord{ID: threadKey(r.Context(), q.ThreadID), Tenant: rec.Tenant, Metadata: meta}
	if err := s.runs.CreateThread(r.Context(), cpy); errors.Is(err, store.ErrConflict) {
		return problemf(http.StatusConflict, "thread %s exists; name another thread_id, or leave it out for a new one", q.ThreadID)
	} else if err != nil {
		return err
	}
	if _, err := (&runner.Engine{Store: s.cfg.Store}).Fork(r.Context(), g, rec.ID, cp, cpy.ID); err != nil {
		_ = s.runs.DeleteThread(r.Context(), cpy.ID)
		if errors.Is(err, store.ErrNotFound) {
			return problemf(http.StatusNotFound, "thread %s has no checkpoint %s", r.PathValue("thread"), q.CheckpointID)
		}
		return err
	}
	return s.writeThread(w, r, cpy)
}
