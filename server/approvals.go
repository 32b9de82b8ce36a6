package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// approval is an approval record as the API shows it, with thread_id, the
// id its tenant knows the thread by (the root thread, for a gate in a
// subgraph), to resume or read it with.
type approval struct {
	store.Approval
	ThreadID string `json:"thread_id"`
}

// approvalPage is a page of GET /approvals: next, when set, is the cursor
// of the page after it.
type approvalPage struct {
	Approvals []approval `json:"approvals"`
	Next      string     `json:"next,omitempty"`
}

// approvals is the store's approval records, or a 501 when it keeps none.
func (s *Server) approvals() (store.ApprovalStore, error) {
	if as, ok := s.cfg.Store.(store.ApprovalStore); ok {
		return as, nil
	}
	return nil, problemf(http.StatusNotImplemented, "this store keeps no approval records")
}

// viewApproval is a as the API shows it.
func viewApproval(a *store.Approval) approval {
	return approval{Approval: *a, ThreadID: access.ThreadID(access.Root(a.Thread))}
}

// listApprovals answers GET /approvals: the approvals of the caller's
// tenant that its principal and roles may decide (pending ones unless
// status says otherwise), across threads and agents, filtered by agent,
// rule and age (created_after, created_before: RFC 3339), newest first
// (order=oldest: oldest first), limit a page (default 50, at most 1,000),
// after the cursor a page's next gave.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) error {
	as, err := s.approvals()
	if err != nil {
		return err
	}
	p, v := principal(r.Context()), r.URL.Query()
	q := store.ApprovalQuery{Tenant: p.Tenant, Status: v.Get("status"), Agent: v.Get("agent"), Rule: v.Get("rule"),
		Reviewers: p.ReviewerKeys(), Oldest: v.Get("order") == "oldest", Limit: 50}
	if q.Status == "" {
		q.Status = store.ApprovalPending
	}
	if l := v.Get("limit"); l != "" {
		if q.Limit, err = strconv.Atoi(l); err != nil || q.Limit < 1 || q.Limit > 1000 {
			return fieldProblem("limit", "a number of approvals from 1 to 1000, not %q", l)
		}
	}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"created_after", &q.CreatedAfter}, {"created_before", &q.CreatedBefore}} {
		if t := v.Get(f.name); t != "" {
			if *f.dst, err = time.Parse(time.RFC3339Nano, t); err != nil {
				return fieldProblem(f.name, "an RFC 3339 time, like 2026-11-28T09:00:00Z, not %q", t)
			}
		}
	}
	if c := v.Get("after"); c != "" {
		if q.After, err = parseCursor(c); err != nil {
			return fieldProblem("after", "the next of a page, not %q", c)
		}
	}
	list, err := as.Approvals(r.Context(), q)
	if err != nil {
		return err
	}
	page := approvalPage{Approvals: make([]approval, len(list))}
	for i, a := range list {
		page.Approvals[i] = viewApproval(a)
	}
	if len(list) == q.Limit {
		c := store.CursorOf(list[len(list)-1])
		page.Next = fmt.Sprintf("%d_%s", c.CreatedAt.UnixNano(), c.ID)
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// parseCursor reads a page's next: "UNIXNANO_ID".
func parseCursor(s string) (*store.Cursor, error) {
	n, id, ok := strings.Cut(s, "_")
	ns, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, fmt.Errorf("bad cursor %q", s)
	}
	return &store.Cursor{CreatedAt: time.Unix(0, ns).UTC(), ID: id}, nil
}

// approval is the approval id of the caller's tenant; another tenant's
// is as unknown as one that does not exist.
func (s *Server) approval(ctx context.Context, id string) (*store.Approval, error) {
	as, err := s.approvals()
	if err != nil {
		return nil, err
	}
	a, err := as.Approval(ctx, id)
	if err == nil && a.Tenant != principal(ctx).Tenant {
		err = store.ApprovalNotFound(id)
	}
	return a, err
}

// getApproval answers GET /approvals/{id}.
func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) error {
	a, err := s.approval(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, viewApproval(a))
	return nil
}

// decideApproval answers POST /approvals/{id}/decide: the body is the
// verdict, in any form command.resume takes; the thread the approval
// paused resumes with it as the caller's principal, through the same
// checks (403 for a principal who may not decide it), and the answer is
// the run's outcome as POST /execute gives it (status, state, interrupt).
// An approval no longer pending is a 409.
func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	a, err := s.approval(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	if a.Status != store.ApprovalPending {
		return problemf(http.StatusConflict, "approval %s is %s: there is nothing to decide", a.ID, a.Status)
	}
	var verdict any
	if err := decodeBody(r, &verdict); err != nil {
		return err
	}
	thread := access.ThreadID(access.Root(a.Thread))
	body, _ := json.Marshal(map[string]any{"assistant_id": a.Agent, "command": map[string]any{"resume": verdict}})
	out, err := s.runAndWait(ctx, thread, a.Agent, body, "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
