package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Approval statuses.
const (
	// ApprovalPending waits for decisions (a quorum may have some).
	ApprovalPending = "pending"
	// ApprovalDecided has a decision on every call it holds.
	ApprovalDecided = "decided"
	// ApprovalExpired took its rule's on_expire decision, unanswered.
	ApprovalExpired = "expired"
	// ApprovalCancelled will not be decided: its thread went on without
	// it (command.goto).
	ApprovalCancelled = "cancelled"
)

// Approval is the durable record of an approval a gate waits for, one
// tenant's: the runtime's decide path writes it with the checkpoint that
// opens it, each that records a vote toward its quorum and the one that
// decides it (Checkpoint.Approvals), so the record and the thread never
// disagree. Delete of its thread removes it.
type Approval struct {
	// ID is stable from the gate's opening to its decision.
	ID     string `json:"id"`
	Tenant string `json:"tenant,omitempty"`
	// Thread is the thread the gate paused (a child thread's id, for a
	// gate in a subgraph); Agent the graph it runs, Rule the gate's rule.
	Thread string `json:"thread"`
	Agent  string `json:"agent"`
	Rule   string `json:"rule"`
	Status string `json:"status"`
	// Reviewers are the index keys of who may decide: "role:cfo",
	// "principal:alice", "*" for anyone of the tenant.
	Reviewers []string `json:"reviewers"`
	// CreatedAt is when the gate opened: an upsert keeps the stored one.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// ExpiresAt is when an unanswered gate takes its on_expire decision
	// (zero: never).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// EscalateAt is when an unanswered gate widens who may decide it (its
	// rule's escalate); zero: never, or done. A sweep claims the
	// escalation with ClaimEscalation, and the checkpoint that escalates
	// the gate clears it.
	EscalateAt time.Time `json:"escalate_at,omitzero"`
	// Record is the approval as the runtime keeps it, a JSON object: the
	// calls held, who may decide each, the votes and the decisions.
	Record json.RawMessage `json:"record"`
}

// ApprovalQuery selects approvals: all of them for its zero value but
// Tenant (the default tenant's).
type ApprovalQuery struct {
	// Tenant is whose approvals; AllTenants selects every tenant's.
	Tenant     string
	AllTenants bool
	// Status, Agent, Rule, when set, must match.
	Status, Agent, Rule string
	// Reviewers, when not nil, selects the approvals with one of these
	// index keys (a principal's access.Principal.ReviewerKeys).
	Reviewers []string
	// CreatedAfter and CreatedBefore bound when the approval opened;
	// ExpiresBefore selects those expiring before it, EscalateBefore those
	// due to escalate before it. Zero: unbounded.
	CreatedAfter, CreatedBefore, ExpiresBefore, EscalateBefore time.Time
	// Oldest orders by CreatedAt oldest first (default newest first),
	// ties by ID the same way.
	Oldest bool
	// After, when set, is the cursor of a page: the approvals that come
	// after it in the order.
	After *Cursor
	// Limit caps the approvals returned (<= 0: all).
	Limit int
}

// Cursor is a place in a list of approvals: an approval's CreatedAt and
// ID.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// ApprovalStore reads the approval records the runtime writes with its
// checkpoints. Implementations are safe for concurrent use.
type ApprovalStore interface {
	// Approval returns the approval id; ErrNotFound for an unknown one.
	Approval(ctx context.Context, id string) (*Approval, error)
	// Approvals lists the approvals q selects, in its order.
	Approvals(ctx context.Context, q ApprovalQuery) ([]*Approval, error)
	// ClaimEscalation moves the EscalateAt of pending approval id from
	// due to until, and reports whether it did (false: it was not pending
	// or not due at due — another sweep claimed it, or it escalated). Of
	// several sweeps, one claims an escalation; a claim lapses at until,
	// when the approval is due again unless the checkpoint that escalates
	// it cleared EscalateAt.
	ClaimEscalation(ctx context.Context, id string, due, until time.Time) (bool, error)
}

// Selects reports whether q selects a, cursor and limit aside.
func (q *ApprovalQuery) Selects(a *Approval) bool {
	switch {
	case !q.AllTenants && a.Tenant != q.Tenant,
		q.Status != "" && a.Status != q.Status,
		q.Agent != "" && a.Agent != q.Agent,
		q.Rule != "" && a.Rule != q.Rule,
		q.Reviewers != nil && !slices.ContainsFunc(a.Reviewers, func(k string) bool { return slices.Contains(q.Reviewers, k) }),
		!q.CreatedAfter.IsZero() && !a.CreatedAt.After(q.CreatedAfter),
		!q.CreatedBefore.IsZero() && !a.CreatedAt.Before(q.CreatedBefore),
		!q.ExpiresBefore.IsZero() && (a.ExpiresAt.IsZero() || !a.ExpiresAt.Before(q.ExpiresBefore)),
		!q.EscalateBefore.IsZero() && (a.EscalateAt.IsZero() || !a.EscalateAt.Before(q.EscalateBefore)):
		return false
	}
	return q.After == nil || q.Compare(a, q.After) > 0
}

// Compare orders a against cursor c in q's order: negative when a comes
// first.
func (q *ApprovalQuery) Compare(a *Approval, c *Cursor) int {
	n := cmp.Or(a.CreatedAt.Compare(c.CreatedAt), cmp.Compare(a.ID, c.ID))
	if q.Oldest {
		return n
	}
	return -n
}

// CursorOf is the cursor of a page that ends with a.
func CursorOf(a *Approval) *Cursor { return &Cursor{CreatedAt: a.CreatedAt, ID: a.ID} }

// ApprovalNotFound is the error for an unknown approval id.
func ApprovalNotFound(id string) error {
	return fmt.Errorf("store: approval %q: %w", id, ErrNotFound)
}

// cloneApproval copies a's slices and JSON, its times in UTC.
func cloneApproval(a *Approval) *Approval {
	c := *a
	c.CreatedAt, c.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	if !a.ExpiresAt.IsZero() {
		c.ExpiresAt = a.ExpiresAt.UTC()
	}
	if !a.EscalateAt.IsZero() {
		c.EscalateAt = a.EscalateAt.UTC()
	}
	c.Reviewers = slices.Clone(a.Reviewers)
	c.Record = slices.Clone(a.Record)
	return &c
}

// memApprovals is the memory store's approvals, under its mutex.
type memApprovals struct {
	approvals map[string]*Approval
}

// upsert writes a, keeping the CreatedAt of the record it replaces; the
// memory's mutex is held.
func (m *memApprovals) upsert(a *Approval) {
	c := cloneApproval(a)
	if old := m.approvals[a.ID]; old != nil {
		c.CreatedAt = old.CreatedAt
	}
	m.approvals[a.ID] = c
}

func (m *memory) Approval(_ context.Context, id string) (*Approval, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	a := m.approvals[id]
	if a == nil {
		return nil, ApprovalNotFound(id)
	}
	return cloneApproval(a), nil
}

func (m *memory) ClaimEscalation(_ context.Context, id string, due, until time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.approvals[id]
	if a == nil || a.Status != ApprovalPending || a.EscalateAt.IsZero() || !a.EscalateAt.Equal(due) {
		return false, nil
	}
	a.EscalateAt = until.UTC()
	return true, nil
}

func (m *memory) Approvals(_ context.Context, q ApprovalQuery) ([]*Approval, error) {
	m.mu.RLock()
	var out []*Approval
	for _, a := range m.approvals {
		if q.Selects(a) {
			out = append(out, cloneApproval(a))
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Approval) int { return q.Compare(a, CursorOf(b)) })
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// SQL is q as the condition and order of a SQL select of approvals, for
// the SQL backends: "WHERE … ORDER BY … LIMIT …" over the columns tenant,
// status, agent, rule, reviewers, created_at, expires_at, escalate_at
// (Unix nanoseconds) and id. arg adds an argument and returns its placeholder;
// meets returns the condition that a row's reviewers hold one of keys.
func (q *ApprovalQuery) SQL(arg func(any) string, meets func(keys []string) string) string {
	var where []string
	is := func(column string, v any) { where = append(where, column+" = "+arg(v)) }
	if !q.AllTenants {
		is("tenant", q.Tenant)
	}
	for _, f := range [][2]string{{"status", q.Status}, {"agent", q.Agent}, {"rule", q.Rule}} {
		if f[1] != "" {
			is(f[0], f[1])
		}
	}
	if q.Reviewers != nil {
		where = append(where, meets(q.Reviewers))
	}
	if !q.CreatedAfter.IsZero() {
		where = append(where, "created_at > "+arg(q.CreatedAfter.UnixNano()))
	}
	if !q.CreatedBefore.IsZero() {
		where = append(where, "created_at < "+arg(q.CreatedBefore.UnixNano()))
	}
	if !q.ExpiresBefore.IsZero() {
		where = append(where, "expires_at < "+arg(q.ExpiresBefore.UnixNano()))
	}
	if !q.EscalateBefore.IsZero() {
		where = append(where, "escalate_at < "+arg(q.EscalateBefore.UnixNano()))
	}
	order, after := "DESC", "<"
	if q.Oldest {
		order, after = "ASC", ">"
	}
	if q.After != nil {
		where = append(where, fmt.Sprintf("(created_at, id) %s (%s, %s)", after, arg(q.After.CreatedAt.UnixNano()), arg(q.After.ID)))
	}
	sql := ""
	if len(where) > 0 {
		sql = "WHERE " + strings.Join(where, " AND ")
	}
	sql += fmt.Sprintf(" ORDER BY created_at %s, id %s", order, order)
	if q.Limit > 0 {
		sql += " LIMIT " + arg(q.Limit)
	}
	return sql
}
