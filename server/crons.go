package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// The crons group of the API: scheduled runs, the tenant's own, as
// LangGraph's /runs/crons serves them. A cron on a thread runs on it at
// each tick; a stateless cron runs on a thread of its own each tick,
// deleted when the run ends unless on_run_completed is keep. The runs a
// cron starts are made by the scheduler (scheduler.go).

// cronJSON is a cron as the API answers it (the SDK's Cron).
type cronJSON struct {
	CronID         string          `json:"cron_id"`
	AssistantID    string          `json:"assistant_id"`
	ThreadID       *string         `json:"thread_id"`
	OnRunCompleted string          `json:"on_run_completed,omitempty"`
	EndTime        *time.Time      `json:"end_time"`
	Schedule       string          `json:"schedule"`
	Timezone       *string         `json:"timezone"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	Payload        json.RawMessage `json:"payload"`
	UserID         *string         `json:"user_id"`
	NextRunDate    *time.Time      `json:"next_run_date"`
	Metadata       json.RawMessage `json:"metadata"`
	Enabled        bool            `json:"enabled"`
}

// cronView is c as the API answers it.
func cronView(c *store.Cron) cronJSON {
	orNil := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	when := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	obj := func(raw json.RawMessage) json.RawMessage {
		if len(raw) == 0 {
			return json.RawMessage(`{}`)
		}
		return raw
	}
	return cronJSON{CronID: c.ID, AssistantID: c.Assistant, ThreadID: orNil(c.Thread), OnRunCompleted: c.OnRunCompleted,
		EndTime: when(c.EndTime), Schedule: c.Schedule, Timezone: orNil(c.Timezone), CreatedAt: c.CreatedAt,
		UpdatedAt: c.UpdatedAt, Payload: obj(c.Payload), UserID: orNil(c.UserID), NextRunDate: when(c.NextRun),
		Metadata: obj(c.Metadata), Enabled: c.Enabled}
}

// cronRequest is what creating or updating a cron takes: the cron's own
// fields (nil: not given; EndTime "null": none), the rest being the
// request of the runs it starts.
type cronRequest struct {
	Schedule       *string         `json:"schedule"`
	Timezone       *string         `json:"timezone"`
	EndTime        json.RawMessage `json:"end_time"`
	OnRunCompleted *string         `json:"on_run_completed"`
	Enabled        *bool           `json:"enabled"`
	// payload are the other fields given, not null: the runs' request.
	payload map[string]json.RawMessage
}

// decodeCron reads a cron request's body.
func decodeCron(r *http.Request) (*cronRequest, error) {
	var fields map[string]json.RawMessage
	if err := decodeBody(r, &fields); err != nil {
		return nil, err
	}
	q := &cronRequest{payload: map[string]json.RawMessage{}}
	own := map[string]any{"schedule": &q.Schedule, "timezone": &q.Timezone, "end_time": &q.EndTime,
		"on_run_completed": &q.OnRunCompleted, "enabled": &q.Enabled}
	for k, v := range fields {
		dst, ok := own[k]
		switch {
		case ok && k == "end_time":
			q.EndTime = v
		case ok:
			if err := json.Unmarshal(v, dst); err != nil {
				return nil, problemf(http.StatusUnprocessableEntity, "%s: %v", k, err)
			}
		case hasJSON(v):
			q.payload[k] = v
		}
	}
	return q, nil
}

// cronStore is the server's cron store, or a 501 when its store keeps none.
func (s *Server) cronStore() (store.CronStore, error) {
	if s.crons == nil {
		return nil, problemf(http.StatusNotImplemented, "the server's store keeps no crons: serve with the memory, SQLite or PostgreSQL store")
	}
	return s.crons, nil
}

// createCron creates a cron on the path's thread, or a stateless one:
// POST /threads/{thread}/runs/crons and POST /runs/crons.
func (s *Server) createCron(w http.ResponseWriter, r *http.Request) error {
	crons, err := s.cronStore()
	if err != nil {
		return err
	}
	ctx := r.Context()
	q, err := decodeCron(r)
	if err != nil {
		return err
	}
	thread := r.PathValue("thread")
	if thread != "" {
		if err := s.cronThread(ctx, thread, q); err != nil {
			return err
		}
	}
	if q.Schedule == nil {
		return problemf(http.StatusUnprocessableEntity, "schedule is required: a cron expression such as \"0 18 * * *\"")
	}
	p, now := principal(ctx), s.cfg.Clock.Now().UTC()
	c := &store.Cron{ID: uuid.Must(uuid.NewV7()).String(), Tenant: p.Tenant, Thread: thread, UserID: p.Name,
		Enabled: true, CreatedAt: now, UpdatedAt: now}
	if thread == "" {
		c.OnRunCompleted = "delete"
	}
	if err := s.applyCron(ctx, c, q, now); err != nil {
		return err
	}
	if err := crons.PutCron(ctx, c); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, cronView(c))
	return nil
}

// cronThread checks the thread a cron is made on: the caller's own, or,
// when the cron's runs ask for if_not_exists create, any thread id — the
// first tick's run creates the thread, its tenant's, as a run does (and a
// later tick again, should it be deleted).
func (s *Server) cronThread(ctx context.Context, thread string, q *cronRequest) error {
	var ifNotExists string
	_ = json.Unmarshal(q.payload["if_not_exists"], &ifNotExists)
	if ifNotExists != "create" {
		_, err := s.thread(ctx, thread)
		return err
	}
	if err := access.CheckThreadID(thread); err != nil {
		return fieldProblem("thread_id", "%v", err)
	}
	return nil
}

// updateCron changes a cron: PATCH /runs/crons/{cron_id}. Its next tick
// is read again from the schedule.
func (s *Server) updateCron(w http.ResponseWriter, r *http.Request) error {
	crons, err := s.cronStore()
	if err != nil {
		return err
	}
	ctx := r.Context()
	q, err := decodeCron(r)
	if err != nil {
		return err
	}
	c, err := crons.Cron(ctx, principal(ctx).Tenant, r.PathValue("cron_id"))
	if err != nil {
		return err
	}
	now := s.cfg.Clock.Now().UTC()
	if err := s.applyCron(ctx, c, q, now); err != nil {
		return err
	}
	c.UpdatedAt = now
	if err := crons.PutCron(ctx, c); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, cronView(c))
	return nil
}

// applyCron writes the fields q gives into c, checks what the cron then
// holds (its schedule, time zone and run request, 422 at the field) and
// sets its next tick after now.
func (s *Server) applyCron(ctx context.Context, c *store.Cron, q *cronRequest, now time.Time) error {
	if q.Schedule != nil {
		c.Schedule = *q.Schedule
	}
	if q.Timezone != nil {
		c.Timezone = *q.Timezone
	}
	if q.Enabled != nil {
		c.Enabled = *q.Enabled
	}
	if q.OnRunCompleted != nil {
		if c.Thread != "" || !slices.Contains([]string{"delete", "keep"}, *q.OnRunCompleted) {
			return problemf(http.StatusUnprocessableEntity, "on_run_completed is %q; a stateless cron takes delete or keep, a thread's none", *q.OnRunCompleted)
		}
		c.OnRunCompleted = *q.OnRunCompleted
	}
	if q.EndTime != nil {
		c.EndTime = time.Time{}
		if hasJSON(q.EndTime) {
			if err := json.Unmarshal(q.EndTime, &c.EndTime); err != nil {
				return problemf(http.StatusUnprocessableEntity, "end_time: want an RFC 3339 time such as \"2026-12-31T18:00:00Z\": %v", err)
			}
		}
	}
	payload := map[string]json.RawMessage{}
	if len(c.Payload) > 0 {
		_ = json.Unmarshal(c.Payload, &payload)
	}
	maps.Copy(payload, q.payload)
	if err := json.Unmarshal(payload["assistant_id"], &c.Assistant); err != nil {
		return problemf(http.StatusUnprocessableEntity, "assistant_id is required: the assistant or graph the cron runs")
	}
	c.Payload, _ = json.Marshal(payload)
	if q.payload["metadata"] != nil {
		c.Metadata = q.payload["metadata"]
	}
	if err := s.checkRunPayload(ctx, c.Payload); err != nil {
		return err
	}
	sched, err := runner.ParseSchedule(c.Schedule, c.Timezone)
	if err != nil {
		return problemf(http.StatusUnprocessableEntity, "%v", err)
	}
	c.NextRun = nextTick(sched, c.EndTime, now)
	return nil
}

// nextTick is the schedule's first tick after now, or zero when that is
// after end (not zero).
func nextTick(sched runner.Schedule, end, now time.Time) time.Time {
	next := sched.Next(now)
	if !end.IsZero() && next.After(end) {
		return time.Time{}
	}
	return next
}

// checkRunPayload checks the request of a cron's runs as a run's request
// is checked: its assistant, its fields and its configuration.
func (s *Server) checkRunPayload(ctx context.Context, payload json.RawMessage) error {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/runs", bytes.NewReader(payload))
	if err != nil {
		return err
	}
	q, err := parseRunRequest(r)
	if err != nil {
		return err
	}
	if q.Webhook != "" {
		return fieldProblem("webhook", "is not supported on crons; configure runner.yaml's webhooks for run.completed and run.failed")
	}
	a, err := s.resolve(ctx, q.AssistantID)
	if err != nil {
		return err
	}
	if err := q.forGraph(a.g); err != nil {
		return err
	}
	_, err = a.configFor(q)
	return err
}

// deleteCron removes a cron: DELETE /runs/crons/{cron_id}.
func (s *Server) deleteCron(w http.ResponseWriter, r *http.Request) error {
	crons, err := s.cronStore()
	if err != nil {
		return err
	}
	if err := crons.DeleteCron(r.Context(), principal(r.Context()).Tenant, r.PathValue("cron_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// cronQuery selects crons: by assistant, thread, whether enabled and
// metadata; sorted by sort_by (created_at when empty) in sort_order
// (desc when empty); select names the fields answered (all when empty).
type cronQuery struct {
	AssistantID string         `json:"assistant_id"`
	ThreadID    string         `json:"thread_id"`
	Enabled     *bool          `json:"enabled"`
	Metadata    map[string]any `json:"metadata"`
	Limit       int            `json:"limit"`
	Offset      int            `json:"offset"`
	SortBy      string         `json:"sort_by"`
	SortOrder   string         `json:"sort_order"`
	Select      []string       `json:"select"`
}

// cronSorts orders crons by each field sort_by takes.
var cronSorts = map[string]func(a, b *cronJSON) int{
	"cron_id":       func(a, b *cronJSON) int { return cmp.Compare(a.CronID, b.CronID) },
	"assistant_id":  func(a, b *cronJSON) int { return cmp.Compare(a.AssistantID, b.AssistantID) },
	"thread_id":     func(a, b *cronJSON) int { return cmp.Compare(deref(a.ThreadID), deref(b.ThreadID)) },
	"created_at":    func(a, b *cronJSON) int { return a.CreatedAt.Compare(b.CreatedAt) },
	"updated_at":    func(a, b *cronJSON) int { return a.UpdatedAt.Compare(b.UpdatedAt) },
	"next_run_date": func(a, b *cronJSON) int { return deref(a.NextRunDate).Compare(deref(b.NextRunDate)) },
}

// deref is *p, or T's zero value for nil.
func deref[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// matchingCrons lists the tenant's crons the request's query selects, in
// its order.
func (s *Server) matchingCrons(r *http.Request) ([]cronJSON, cronQuery, error) {
	var q cronQuery
	if err := decodeBody(r, &q); err != nil {
		return nil, q, err
	}
	crons, err := s.cronStore()
	if err != nil {
		return nil, q, err
	}
	by := cronSorts[cmp.Or(q.SortBy, "created_at")]
	if by == nil || !slices.Contains([]string{"", "asc", "desc"}, q.SortOrder) {
		return nil, q, problemf(http.StatusUnprocessableEntity, "sort_by %q, sort_order %q: sort by one of %v, asc or desc",
			q.SortBy, q.SortOrder, slices.Sorted(maps.Keys(cronSorts)))
	}
	list, err := crons.Crons(r.Context(), principal(r.Context()).Tenant)
	if err != nil {
		return nil, q, err
	}
	var out []cronJSON
	for i := range list {
		c := cronView(&list[i])
		var meta map[string]any
		_ = json.Unmarshal(c.Metadata, &meta)
		if (q.AssistantID == "" || q.AssistantID == c.AssistantID) && (q.ThreadID == "" || q.ThreadID == deref(c.ThreadID)) &&
			(q.Enabled == nil || *q.Enabled == c.Enabled) && subset(q.Metadata, meta) {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b cronJSON) int {
		if q.SortOrder == "asc" {
			return by(&a, &b)
		}
		return by(&b, &a)
	})
	return out, q, nil
}

// searchCrons answers a page of the crons a query selects, with the
// fields it selects: POST /runs/crons/search.
func (s *Server) searchCrons(w http.ResponseWriter, r *http.Request) error {
	list, q, err := s.matchingCrons(r)
	if err != nil {
		return err
	}
	out := []map[string]any{}
	for _, c := range page(list, q.Limit, q.Offset) {
		var m map[string]any
		b, _ := json.Marshal(c)
		_ = json.Unmarshal(b, &m)
		if len(q.Select) > 0 {
			for k := range m {
				if !slices.Contains(q.Select, k) {
					delete(m, k)
				}
			}
		}
		out = append(out, m)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// countCrons counts the crons a query selects: POST /runs/crons/count.
func (s *Server) countCrons(w http.ResponseWriter, r *http.Request) error {
	list, _, err := s.matchingCrons(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, len(list))
	return nil
}
