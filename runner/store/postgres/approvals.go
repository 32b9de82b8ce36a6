package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runner-dev/runner/runner/store"
)

// pgApprovalsSchema creates version 7's table: the approvals gates wait
// for (store.ApprovalStore), written with the checkpoints that open,
// vote on and decide them. An inbox is read by tenant and status in the
// order approvals opened.
const pgApprovalsSchema = `
CREATE TABLE approvals (
	id         text   NOT NULL PRIMARY KEY,
	tenant     text   NOT NULL,
	thread     text   NOT NULL,
	agent      text   NOT NULL,
	rule       text   NOT NULL,
	status     text   NOT NULL,
	reviewers  text[] NOT NULL,
	created_at bigint NOT NULL,
	updated_at bigint NOT NULL,
	expires_at bigint,
	record     bytea
);
CREATE INDEX approvals_inbox ON approvals (tenant, status, created_at, id);
CREATE INDEX approvals_thread ON approvals (thread);
CREATE INDEX approvals_expiring ON approvals (expires_at) WHERE status = 'pending';
`

// pgEscalationSchema is version 12: when an approval's gate widens who
// may decide it (store.Approval.EscalateAt), NULL for never or done.
const pgEscalationSchema = `
ALTER TABLE approvals ADD COLUMN escalate_at bigint;
CREATE INDEX approvals_escalating ON approvals (escalate_at) WHERE status = 'pending';
`

// pgClaimEscalation moves pending approval $1's escalate_at from $2 to $3.
const pgClaimEscalation = `UPDATE approvals SET escalate_at = $3 WHERE id = $1 AND status = 'pending' AND escalate_at = $2`

// pgApprovalsStep is the step of pgPut that writes, if it inserted the
// checkpoint, the approvals of $%d (approvalRows) too, each keeping the
// created_at of the one it replaces.
const pgApprovalsStep = `,
appr AS (
	INSERT INTO approvals (id, tenant, thread, agent, rule, status, reviewers, created_at, updated_at, expires_at, record,
		escalate_at)
	SELECT a.id, a.tenant, a.thread, a.agent, a.rule, a.status, a.reviewers, a.created_at, a.updated_at, a.expires_at,
		decode(a.record, 'base64'), a.escalate_at
	FROM jsonb_to_recordset($%d::jsonb) AS a(id text, tenant text, thread text, agent text, rule text, status text,
		reviewers text[], created_at bigint, updated_at bigint, expires_at bigint, record text, escalate_at bigint)
	WHERE EXISTS (SELECT FROM ins)
	ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, thread = excluded.thread, agent = excluded.agent,
		rule = excluded.rule, status = excluded.status, reviewers = excluded.reviewers,
		updated_at = excluded.updated_at, expires_at = excluded.expires_at, record = excluded.record,
		escalate_at = excluded.escalate_at)`

// approvalRow is an approval as pgPutApprovals reads it.
type approvalRow struct {
	ID         string   `json:"id"`
	Tenant     string   `json:"tenant"`
	Thread     string   `json:"thread"`
	Agent      string   `json:"agent"`
	Rule       string   `json:"rule"`
	Status     string   `json:"status"`
	Reviewers  []string `json:"reviewers"`
	CreatedAt  int64    `json:"created_at"`
	UpdatedAt  int64    `json:"updated_at"`
	ExpiresAt  *int64   `json:"expires_at"`
	Record     []byte   `json:"record"` // base64
	EscalateAt *int64   `json:"escalate_at"`
}

// nanos is t in Unix nanoseconds, nil for the zero time.
func nanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

// fromNanos is the time of a column of Unix nanoseconds, zero for NULL.
func fromNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

// approvalRows is as as the JSON pgApprovalsStep reads.
func approvalRows(as []*store.Approval) []byte {
	rows := make([]approvalRow, len(as))
	for i, a := range as {
		rows[i] = approvalRow{ID: a.ID, Tenant: a.Tenant, Thread: a.Thread, Agent: a.Agent, Rule: a.Rule, Status: a.Status,
			Reviewers: a.Reviewers, CreatedAt: a.CreatedAt.UnixNano(), UpdatedAt: a.UpdatedAt.UnixNano(), Record: blob(a.Record),
			ExpiresAt: nanos(a.ExpiresAt), EscalateAt: nanos(a.EscalateAt)}
		if rows[i].Reviewers == nil {
			rows[i].Reviewers = []string{}
		}
	}
	b, _ := json.Marshal(rows) // strings, numbers and bytes
	return b
}

// pgDeleteApprovals removes the approvals of thread $1's family.
const pgDeleteApprovals = pgFamily + `DELETE FROM approvals WHERE thread IN (SELECT id FROM family)`

// pgApprovalColumns are the columns scanApproval reads, in its order.
const pgApprovalColumns = `id, tenant, thread, agent, rule, status, reviewers, created_at, updated_at, expires_at, record, escalate_at`

func (s *pgStore) Approval(ctx context.Context, id string) (*store.Approval, error) {
	out, err := s.approvals(ctx, `SELECT `+pgApprovalColumns+` FROM approvals WHERE id = $1`, id)
	if err == nil && len(out) == 0 {
		err = store.ApprovalNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func (s *pgStore) ClaimEscalation(ctx context.Context, id string, due, until time.Time) (bool, error) {
	var n int64
	err := s.retry(ctx, func() error {
		tag, err := s.pool.Exec(ctx, pgClaimEscalation, id, due.UnixNano(), until.UnixNano())
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: claiming approval %s's escalation: %w", id, fault(err))
	}
	return n > 0, nil
}

func (s *pgStore) Approvals(ctx context.Context, q store.ApprovalQuery) ([]*store.Approval, error) {
	args := store.Args{Mark: "$"}
	meets := func(keys []string) string { return "reviewers && " + args.Add(keys) + "::text[]" }
	return s.approvals(ctx, `SELECT `+pgApprovalColumns+` FROM approvals `+q.SQL(args.Add, meets), args.List...)
}

// approvals runs a select of pgApprovalColumns, once more if the
// connection was lost.
func (s *pgStore) approvals(ctx context.Context, sql string, args ...any) ([]*store.Approval, error) {
	var out []*store.Approval
	err := s.retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scanApproval)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: approvals: %w", fault(err))
	}
	return out, nil
}

// scanApproval scans a row of pgApprovalColumns.
func scanApproval(row pgx.CollectableRow) (*store.Approval, error) {
	var a store.Approval
	var created, updated int64
	var expires, escalate *int64
	if err := row.Scan(&a.ID, &a.Tenant, &a.Thread, &a.Agent, &a.Rule, &a.Status, &a.Reviewers, &created, &updated, &expires, &a.Record,
		&escalate); err != nil {
		return nil, err
	}
	a.CreatedAt, a.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	a.ExpiresAt, a.EscalateAt = fromNanos(expires), fromNanos(escalate)
	return &a, nil
}
