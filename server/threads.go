package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"time"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// createThread creates an empty thread: with if_exists "do_nothing" an
// existing one of the tenant is returned, else it is a 409. The id is the
// tenant's own (access.ThreadKey): one another tenant uses is created
// anew here, as an unknown one is.
func (s *Server) createThread(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		ThreadID string         `json:"thread_id"`
		Metadata map[string]any `json:"metadata"`
		IfExists string         `json:"if_exists"`
		Steps    []any          `json:"supersteps"`
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	if len(q.Steps) > 0 {
		return problemf(http.StatusUnprocessableEntity, "supersteps are not supported: start a run, then edit its state with POST /threads/{id}/state")
	}
	if q.ThreadID == "" {
		q.ThreadID = uuid.Must(uuid.NewV7()).String()
	} else if err := access.CheckThreadID(q.ThreadID); err != nil {
		return problemf(http.StatusUnprocessableEntity, "thread_id: %v", err)
	}
	meta, _ := json.Marshal(orMap(q.Metadata))
	p := principal(r.Context())
	rec := &store.ThreadRecord{ID: access.ThreadKey(p.Tenant, q.ThreadID), Tenant: p.Tenant, Metadata: meta}
	err := s.runs.CreateThread(r.Context(), rec)
	if errors.Is(err, store.ErrConflict) {
		old, rerr := s.thread(r.Context(), q.ThreadID)
		if rerr != nil || q.IfExists != "do_nothing" {
			return problemf(http.StatusConflict, "thread %s exists", q.ThreadID)
		}
		rec, err = old, nil
	}
	if err != nil {
		return err
	}
	return s.writeThread(w, r, rec)
}

func (s *Server) getThread(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	return s.writeThread(w, r, rec)
}

// writeThread answers with the thread rec.
func (s *Server) writeThread(w http.ResponseWriter, r *http.Request, rec *store.ThreadRecord) error {
	out, err := s.threadJSON(r.Context(), rec)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// patchThread merges metadata into the thread's.
func (s *Server) patchThread(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	var q struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	meta := metadata(rec.Metadata)
	for k, v := range runner.NormalizeJSON(q.Metadata).(map[string]any) {
		meta[k] = v
	}
	rec.Metadata, _ = json.Marshal(meta)
	rec.UpdatedAt = time.Now()
	if err := s.runs.UpdateThread(r.Context(), rec); err != nil {
		return err
	}
	return s.writeThread(w, r, rec)
}

// deleteThread removes a thread that no run of is running or pending:
// its record, runs, events and checkpoints, with the child threads it
// recorded as its own; its streams end.
func (s *Server) deleteThread(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.thread(r.Context(), r.PathValue("thread"))
	if err != nil {
		return err
	}
	if s.busy(rec.ID) {
		return problemf(http.StatusConflict, "thread %s has a run running or pending; cancel it first", r.PathValue("thread"))
	}
	if err := s.runs.DeleteThread(r.Context(), rec.ID); err != nil {
		return err
	}
	if err := s.cfg.Store.Delete(r.Context(), rec.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	s.threadDeleted(rec.ID)
	s.changes.publish(principal(r.Context()).Tenant, threadChange{Thread: r.PathValue("thread"), Reason: "deleted"})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// searchThreads lists the tenant's threads that match status, metadata
// and values (each a subset of the thread's) and were created in the
// window created_after..created_before (RFC 3339, each optional), newest
// first, a page of limit (default 10) from offset. Only the threads the
// page needs are read beyond their records: those it shows, and with a
// status or values filter those it looks at.
func (s *Server) searchThreads(w http.ResponseWriter, r *http.Request) error {
	var q struct {
		Status        string         `json:"status"`
		Metadata      map[string]any `json:"metadata"`
		Values        map[string]any `json:"values"`
		IDs           []string       `json:"ids"`
		CreatedAfter  *time.Time     `json:"created_after"`
		CreatedBefore *time.Time     `json:"created_before"`
		Limit         int            `json:"limit"`
		Offset        int            `json:"offset"`
	}
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	if err := checkPage(q.Limit, q.Offset); err != nil {
		return err
	}
	if q.Limit == 0 {
		q.Limit = 10
	}
	p := principal(r.Context())
	recs, err := s.runs.ThreadRecords(r.Context(), p.Tenant)
	if err != nil {
		return err
	}
	byState := q.Status != "" || len(q.Values) > 0
	out := []map[string]any{}
	for i := 0; i < len(recs) && len(out) < q.Limit; i++ {
		rec := &recs[i]
		if access.Authorize(p, rec.ID, rec.Tenant) != nil || len(q.IDs) > 0 && !contains(q.IDs, access.ThreadID(rec.ID)) ||
			len(q.Metadata) > 0 && !subset(q.Metadata, metadata(rec.Metadata)) ||
			q.CreatedAfter != nil && !rec.CreatedAt.After(*q.CreatedAfter) || q.CreatedBefore != nil && !rec.CreatedAt.Before(*q.CreatedBefore) {
			continue
		}
		if !byState && q.Offset > 0 {
			q.Offset--
			continue
		}
		t, err := s.threadJSON(r.Context(), rec)
		if err != nil {
			return err
		}
		if q.Status != "" && t["status"] != q.Status || !subset(q.Values, t["values"].(map[string]any)) {
			continue
		}
		if q.Offset > 0 {
			q.Offset--
			continue
		}
		out = append(out, t)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// subset reports whether every key of want has its value in have.
func subset(want, have map[string]any) bool {
	want, _ = runner.NormalizeJSON(want).(map[string]any)
	for k, v := range want {
		if !reflect.DeepEqual(v, have[k]) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func orMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return runner.NormalizeJSON(m).(map[string]any)
}
