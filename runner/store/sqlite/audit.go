package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// sqliteAuditSchema is version 17: the audit ledger (store.AuditStore),
// each tenant's chain of records by seq. Nothing deletes its rows.
const sqliteAuditSchema = `
CREATE TABLE audit (
	tenant    TEXT    NOT NULL,
	seq       INTEGER NOT NULL,
	prev_hash TEXT    NOT NULL,
	hash      TEXT    NOT NULL,
	time      INTEGER NOT NULL, -- Unix nanoseconds
	record    BLOB    NOT NULL,
	PRIMARY KEY (tenant, seq)
) WITHOUT ROWID;
`

// sqliteAuditHead reads the newest record of tenant ?1's chain.
const sqliteAuditHead = `SELECT seq, hash FROM audit WHERE tenant = ?1 ORDER BY seq DESC LIMIT 1`

// sqliteAppendAudit appends a record chained by the writer (writer.chain).
const sqliteAppendAudit = `INSERT OR ROLLBACK INTO audit (tenant, seq, prev_hash, hash, time, record)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)`

// auditWrites are the appends of recs, chained one after another: each
// is numbered and hashed when the writer runs it, after the head of its
// tenant's chain in the same transaction (the one writer serializes
// appends).
func auditWrites(recs []*store.AuditRecord) *putReq {
	var first, last *putReq
	for _, r := range recs {
		w := &putReq{query: sqliteAppendAudit, audit: r}
		if first == nil {
			first = w
		} else {
			last.after = w
		}
		last = w
	}
	return first
}

// chain sets the arguments of req, an append of req.audit, to follow the
// head of its tenant's chain.
func (w *writer) chain(req *putReq) error {
	stmt, err := w.stmt(sqliteAuditHead)
	if err != nil {
		return err
	}
	rows, err := stmt.(driver.StmtQueryContext).QueryContext(context.Background(), []driver.NamedValue{{Ordinal: 1, Value: req.audit.Tenant}})
	if err != nil {
		return err
	}
	defer rows.Close()
	row := make([]driver.Value, 2)
	var seq int64
	var prev string
	switch err := rows.Next(row); {
	case err == nil:
		seq, _ = row[0].(int64)
		prev, _ = row[1].(string)
	case err != io.EOF:
		return err
	}
	r := *req.audit
	r.Chain(seq, prev)
	req.args = []any{r.Tenant, r.Seq, r.PrevHash, r.Hash, r.Time.UnixNano(), []byte(r.Record)}
	return nil
}

func (s *sqliteStore) AppendAudit(ctx context.Context, recs ...*store.AuditRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if err := store.CheckAudit(recs[0].Tenant, recs); err != nil {
		return fmt.Errorf("store: audit: %w", err)
	}
	if _, err := s.commitPut(ctx, auditWrites(recs)); err != nil {
		return fmt.Errorf("store: audit: %w", fault(err))
	}
	return nil
}

func (s *sqliteStore) Audit(ctx context.Context, q store.AuditQuery) ([]*store.AuditRecord, error) {
	args := store.Args{Mark: "?"}
	query := q.SQL(args.Add)
	rows, err := s.r.QueryContext(ctx, query, args.List...)
	if err != nil {
		return nil, fmt.Errorf("store: audit: %w", fault(err))
	}
	defer rows.Close()
	var out []*store.AuditRecord
	for rows.Next() {
		var r store.AuditRecord
		var at int64
		if err := rows.Scan(&r.Tenant, &r.Seq, &r.PrevHash, &r.Hash, &at, &r.Record); err != nil {
			return nil, fmt.Errorf("store: audit: %w", fault(err))
		}
		r.Time = time.Unix(0, at).UTC()
		out = append(out, &r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: audit: %w", fault(err))
	}
	return out, nil
}
