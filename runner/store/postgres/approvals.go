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

// pgApprovalsStep is the step of pgPut that writes, if it inserted the
// checkpoint, the approvals of $%d (approvalRows) too, each keeping the
// created_at of the one it replaces.
const pgApprovalsStep = `,
appr AS (
	INSERT INTO approvals (id, tenant, thread, agent, rule, status, reviewers, created_at, updated_at, expires_at, record)
	SELECT a.id, a.tenant, a.thread, a.agent, a.rule, a.status, a.reviewers, a.created_at, a.updated_at, a.expires_at,
		decode(a.record, 'base64')
	FROM jsonb_to_recordset($%d::jsonb) AS a(id text, tenant text, thread text, agent text, rule text, status text,
		reviewers text[], created_at bigint, updated_at bigint, expires_at bigint, record text)
	WHERE EXISTS (SELECT FROM ins)
	ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, thread = excluded.thread, agent = excluded.agent,
		rule = excluded.rule, status = excluded.status, reviewers = excluded.reviewers,
		updated_at = excluded.updated_at, expires_at = excluded.expires_at, record = excluded.record)`

// approvalRow is an approval as pgPutApprovals reads it.
type approvalRow struct {
	ID        string   `json:"id"`
	Tenant    string   `json:"tenant"`
	Thread    string   `json:"thread"`
	Agent     string   `json:"agent"`
	Rule      string   `json:"rule"`
	Status    string   `json:"status"`
	Reviewers []string `json:"reviewers"`
	CreatedAt int64    `json:"created_at"`
	UpdatedAt int64    `json:"updated_at"`
	ExpiresAt *int64   `json:"expires_at"`
	Record    []byte   `json:"record"` // base64
}

// approvalRows is as as the JSON pgApprovalsStep reads.
func approvalRows(as []*store.Approval) []byte {
	rows := make([]approvalRow, len(as))
	for i, a := range as {
		rows[i] = approvalRow{ID: a.ID, Tenant: a.Tenant, Thread: a.Thread, Agent: a.Agent, Rule: a.Rule, Status: a.Status,
			Reviewers: a.Reviewers, CreatedAt: a.CreatedAt.UnixNano(), UpdatedAt: a.UpdatedAt.UnixNano(), Record: blob(a.Record)}
		if rows[i].Reviewers == nil {
			rows[i].Reviewers = []string{}
		}
		if !a.ExpiresAt.IsZero() {
			n := a.ExpiresAt.UnixNano()
			rows[i].ExpiresAt = &n
		}
	}
	b, _ := json.Marshal(rows) // strings, numbers and bytes
	return b
}

// pgDeleteApprovals removes the approvals of thread $1's family.
const pgDeleteApprovals = pgFamily + `DELETE FROM approvals WHERE thread IN (SELECT id FROM family)`

// pgApprovalColumns are the columns scanApproval reads, in its order.
const pgApprovalColumns = `id, tenant, thread, agent, rule, status, reviewers, created_at, updated_at, expires_at, record`

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

func (s *pgStore) Approvals(ctx context.Context, q store.ApprovalQuery) ([]*store.Approval, error) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	meets := func(keys []string) string { return "reviewers && " + arg(keys) + "::text[]" }
	return s.approvals(ctx, `SELECT `+pgApprovalColumns+` FROM approvals `+q.SQL(arg, meets), args...)
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
	var expires *int64
	if err := row.Scan(&a.ID, &a.Tenant, &a.Thread, &a.Agent, &a.Rule, &a.Status, &a.Reviewers, &created, &updated, &expires, &a.Record); err != nil {
		return nil, err
	}
	a.CreatedAt, a.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	if expires != nil {
		a.ExpiresAt = time.Unix(0, *expires).UTC()
	}
	return &a, nil
}
