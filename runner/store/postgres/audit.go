package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runner-dev/runner/runner/store"
)

// pgAuditSchema creates version 10's tables: the audit ledger
// (store.AuditStore), each tenant's chain of records by seq, and the
// head of each chain, whose row lock serializes a tenant's appends
// across replicas. Nothing deletes their rows.
const pgAuditSchema = `
CREATE TABLE audit (
	tenant    text   NOT NULL,
	seq       bigint NOT NULL,
	prev_hash text   NOT NULL,
	hash      text   NOT NULL,
	time      bigint NOT NULL,
	record    bytea  NOT NULL,
	PRIMARY KEY (tenant, seq)
);
CREATE TABLE audit_heads (
	tenant text   NOT NULL PRIMARY KEY,
	seq    bigint NOT NULL,
	hash   text   NOT NULL
);
`

// pgAuditHead makes the head row of tenant $1's chain, if it has none:
// appends lock it (pgAuditSteps).
const pgAuditHead = `INSERT INTO audit_heads (tenant, seq, hash) VALUES ($1, 0, '') ON CONFLICT DO NOTHING`

// pgAuditSteps are the steps of a statement that appends, when the
// condition %[3]s holds, records to the chain of tenant $%[1]d: their
// JSON and times are the arrays $%[2]d and $%[2]d+1. The head's row,
// locked, gives the newest record's seq and hash as committed (FOR
// UPDATE reads the newest version), each record is numbered and hashed
// after the one before it (store.AuditHash), and the head moves to the
// last. The statement says WITH RECURSIVE.
const pgAuditSteps = `
head AS (SELECT seq, hash FROM audit_heads WHERE tenant = $%[1]d FOR UPDATE),
recs AS (SELECT r.ord, r.record, r.time FROM unnest($%[2]d::text[], $%[4]d::bigint[]) WITH ORDINALITY AS r(record, time, ord)),
chain AS (
	SELECT 0::bigint AS ord, seq, hash, ''::text AS prev, 0::bigint AS time, ''::text AS record FROM head
	UNION ALL
	SELECT r.ord, c.seq + 1, encode(sha256(convert_to(c.hash || '|' || (c.seq + 1)::text || '|' || r.record, 'UTF8')), 'hex'),
		c.hash, r.time, r.record
	FROM chain c JOIN recs r ON r.ord = c.ord + 1),
aud AS (
	INSERT INTO audit (tenant, seq, prev_hash, hash, time, record)
	SELECT $%[1]d, seq, prev, hash, time, convert_to(record, 'UTF8') FROM chain WHERE ord > 0 AND %[3]s),
moved AS (
	UPDATE audit_heads h SET seq = c.seq, hash = c.hash
	FROM (SELECT seq, hash FROM chain ORDER BY ord DESC LIMIT 1) c
	WHERE h.tenant = $%[1]d AND %[3]s)`

// auditSteps are pgAuditSteps for tenant $n, the records' JSON $n+1 and
// times $n+2, under cond.
func auditSteps(n int, cond string) string {
	return fmt.Sprintf(pgAuditSteps, n, n+1, cond, n+2)
}

// auditArgs are the arguments of auditSteps: the tenant, the records'
// JSON, their times.
func auditArgs(tenant string, recs []*store.AuditRecord) []any {
	records, times := make([]string, len(recs)), make([]int64, len(recs))
	for i, r := range recs {
		records[i], times[i] = string(r.Record), r.Time.UnixNano()
	}
	return []any{tenant, records, times}
}

// recursive makes a statement's WITH a WITH RECURSIVE.
func recursive(sql string) string {
	return strings.Replace(sql, "WITH ", "WITH RECURSIVE ", 1)
}

// auditHead makes sure tenant's chain has its head row, once a process.
func (s *pgStore) auditHead(ctx context.Context, tenant string) error {
	if _, ok := s.heads.Load(tenant); ok {
		return nil
	}
	err := s.retry(ctx, func() error {
		_, err := s.pool.Exec(ctx, pgAuditHead, tenant)
		return err
	})
	if err == nil {
		s.heads.Store(tenant, true)
	}
	return err
}

func (s *pgStore) AppendAudit(ctx context.Context, recs ...*store.AuditRecord) error {
	if len(recs) == 0 {
		return nil
	}
	tenant := recs[0].Tenant
	if err := store.CheckAudit(tenant, recs); err != nil {
		return fmt.Errorf("store: audit: %w", err)
	}
	if err := s.auditHead(ctx, tenant); err != nil {
		return fmt.Errorf("store: audit: %w", fault(err))
	}
	sql := "WITH RECURSIVE " + strings.TrimPrefix(auditSteps(1, "true"), "\n") + " SELECT 1"
	// A lost reply is not retried: the records may have been appended.
	if res := s.group.Do(write{sql, auditArgs(tenant, recs)}); res.Err != nil {
		return fmt.Errorf("store: audit: %w", fault(res.Err))
	}
	return nil
}

func (s *pgStore) Audit(ctx context.Context, q store.AuditQuery) ([]*store.AuditRecord, error) {
	args := store.Args{Mark: "$"}
	sql := q.SQL(args.Add)
	var out []*store.AuditRecord
	err := s.retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, sql, args.List...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.AuditRecord, error) {
			var r store.AuditRecord
			var at int64
			err := row.Scan(&r.Tenant, &r.Seq, &r.PrevHash, &r.Hash, &at, &r.Record)
			r.Time = time.Unix(0, at).UTC()
			return &r, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: audit: %w", fault(err))
	}
	return out, nil
}
