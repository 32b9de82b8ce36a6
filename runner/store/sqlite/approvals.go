package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// sqliteApprovalsSchema is version 14: the approvals gates wait for
// (store.ApprovalStore), written with the checkpoints that open, vote on
// and decide them. reviewers is a JSON array of index keys; an inbox is
// read by tenant and status in the order approvals opened.
const sqliteApprovalsSchema = `
CREATE TABLE approvals (
	id         TEXT    NOT NULL PRIMARY KEY,
	tenant     TEXT    NOT NULL,
	thread     TEXT    NOT NULL,
	agent      TEXT    NOT NULL,
	rule       TEXT    NOT NULL,
	status     TEXT    NOT NULL,
	reviewers  TEXT    NOT NULL, -- a JSON array
	created_at INTEGER NOT NULL, -- Unix nanoseconds
	updated_at INTEGER NOT NULL,
	expires_at INTEGER,          -- NULL: never
	record     BLOB
) WITHOUT ROWID;
CREATE INDEX approvals_inbox ON approvals (tenant, status, created_at, id);
CREATE INDEX approvals_thread ON approvals (thread);
CREATE INDEX approvals_expiring ON approvals (expires_at) WHERE status = 'pending';
`

// sqliteEscalationSchema is version 19: when an approval's gate widens
// who may decide it (store.Approval.EscalateAt), NULL for never or done.
const sqliteEscalationSchema = `
ALTER TABLE approvals ADD COLUMN escalate_at INTEGER;
CREATE INDEX approvals_escalating ON approvals (escalate_at) WHERE status = 'pending';
`

// sqliteClaimEscalation moves pending approval ?1's escalate_at from ?2
// to ?3.
const sqliteClaimEscalation = `UPDATE approvals SET escalate_at = ?3 WHERE id = ?1 AND status = 'pending' AND escalate_at = ?2`

// sqlitePutApproval writes an approval, keeping the created_at of the one
// it replaces.
const sqlitePutApproval = `INSERT OR ROLLBACK INTO approvals
	(id, tenant, thread, agent, rule, status, reviewers, created_at, updated_at, expires_at, record, escalate_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, thread = excluded.thread, agent = excluded.agent,
	rule = excluded.rule, status = excluded.status, reviewers = excluded.reviewers,
	updated_at = excluded.updated_at, expires_at = excluded.expires_at, record = excluded.record,
	escalate_at = excluded.escalate_at`

// sqliteApprovalColumns are the columns scanApproval reads, in its order.
const sqliteApprovalColumns = `id, tenant, thread, agent, rule, status, reviewers, created_at, updated_at, expires_at, record, escalate_at`

// sqliteDeleteApprovals removes the approvals of thread ?1's family.
const sqliteDeleteApprovals = sqliteFamily + `DELETE FROM approvals WHERE thread IN
	(SELECT id FROM thread_keys WHERE key IN (SELECT key FROM family));
`

// approvalWrites are the writes of cp's approvals, chained after the
// write of cp itself (putReq.after): in its transaction, if it inserted.
func approvalWrites(cp *store.Checkpoint) *putReq {
	var first, last *putReq
	for _, a := range cp.Approvals {
		reviewers, _ := json.Marshal(a.Reviewers) // a list of strings
		w := &putReq{query: sqlitePutApproval, args: []any{a.ID, a.Tenant, a.Thread, a.Agent, a.Rule, a.Status,
			string(reviewers), a.CreatedAt.UnixNano(), a.UpdatedAt.UnixNano(), nanos(a.ExpiresAt), blob(a.Record), nanos(a.EscalateAt)}}
		if first == nil {
			first = w
		} else {
			last.after = w
		}
		last = w
	}
	return first
}

// nanos is t in Unix nanoseconds, NULL for the zero time.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// fromNanos is the time of a column of Unix nanoseconds, zero for NULL.
func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// then chains w after req's last write after.
func (req *putReq) then(w *putReq) {
	for req.after != nil {
		req = req.after
	}
	req.after = w
}

func (s *sqliteStore) Approval(ctx context.Context, id string) (*store.Approval, error) {
	out, err := s.approvals(ctx, `SELECT `+sqliteApprovalColumns+` FROM approvals WHERE id = ?1`, id)
	if err == nil && len(out) == 0 {
		err = store.ApprovalNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func (s *sqliteStore) ClaimEscalation(ctx context.Context, id string, due, until time.Time) (bool, error) {
	n, err := s.commitPut(ctx, &putReq{query: sqliteClaimEscalation, args: []any{id, due.UnixNano(), until.UnixNano()}})
	if err != nil {
		return false, fmt.Errorf("store: claiming approval %s's escalation: %w", id, fault(err))
	}
	return n > 0, nil
}

func (s *sqliteStore) Approvals(ctx context.Context, q store.ApprovalQuery) ([]*store.Approval, error) {
	args := store.Args{Mark: "?"}
	meets := func(keys []string) string {
		list, _ := json.Marshal(keys)
		return "EXISTS (SELECT 1 FROM json_each(reviewers) r WHERE r.value IN (SELECT value FROM json_each(" + args.Add(string(list)) + ")))"
	}
	return s.approvals(ctx, `SELECT `+sqliteApprovalColumns+` FROM approvals `+q.SQL(args.Add, meets), args.List...)
}

// approvals runs a select of sqliteApprovalColumns.
func (s *sqliteStore) approvals(ctx context.Context, query string, args ...any) ([]*store.Approval, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: approvals: %w", fault(err))
	}
	defer rows.Close()
	var out []*store.Approval
	for rows.Next() {
		var a store.Approval
		var reviewers string
		var created, updated int64
		var expires, escalate sql.NullInt64
		if err := rows.Scan(&a.ID, &a.Tenant, &a.Thread, &a.Agent, &a.Rule, &a.Status, &reviewers, &created, &updated, &expires, &a.Record, &escalate); err != nil {
			return nil, fmt.Errorf("store: approvals: %w", fault(err))
		}
		if err := json.Unmarshal([]byte(reviewers), &a.Reviewers); err != nil {
			return nil, fmt.Errorf("store: approval %s: its reviewers: %w", a.ID, err)
		}
		a.CreatedAt, a.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
		a.ExpiresAt, a.EscalateAt = fromNanos(expires), fromNanos(escalate)
		out = append(out, &a)
	}
	if err := rows.Err(); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: approvals: %w", fault(err))
	}
	return out, nil
}
