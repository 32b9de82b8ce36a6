package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// sqliteRunsSchema creates version 2's tables: the API server's thread
// records, runs and each run's event log (store.RunStore).
const sqliteRunsSchema = `
CREATE TABLE thread_records (
	id         TEXT    NOT NULL PRIMARY KEY,
	tenant     TEXT    NOT NULL,
	metadata   BLOB,
	created_at INTEGER NOT NULL, -- Unix nanoseconds
	updated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX thread_records_tenant ON thread_records (tenant, created_at DESC, id);
CREATE TABLE runs (
	id                 TEXT    NOT NULL PRIMARY KEY,
	thread             TEXT    NOT NULL,
	tenant             TEXT    NOT NULL,
	assistant          TEXT    NOT NULL,
	status             TEXT    NOT NULL,
	multitask_strategy TEXT    NOT NULL,
	idempotency_key    TEXT    NOT NULL,
	kwargs             BLOB,
	metadata           BLOB,
	created_at         INTEGER NOT NULL,
	updated_at         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX runs_thread ON runs (thread, created_at, id);
CREATE INDEX runs_status ON runs (status);
CREATE UNIQUE INDEX runs_idempotency ON runs (tenant, idempotency_key) WHERE idempotency_key != '';
CREATE TABLE run_events (
	run        TEXT    NOT NULL,
	seq        INTEGER NOT NULL,
	event      TEXT    NOT NULL,
	data       BLOB,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (run, seq)
) WITHOUT ROWID;
`

const runColumns = `id, thread, tenant, assistant, status, multitask_strategy, idempotency_key,
	kwargs, metadata, created_at, updated_at`

// The writes of thread records and runs that join the group commit
// (batch.go): each changes one row, or none when its record exists
// (a create) or does not (an update).
const (
	sqliteCreateThread = `INSERT OR ROLLBACK INTO thread_records (id, tenant, metadata, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (id) DO NOTHING`
	sqliteUpdateThread = `UPDATE OR ROLLBACK thread_records SET metadata = ?2, updated_at = ?3 WHERE id = ?1`
	sqliteCreateRun    = `INSERT OR ROLLBACK INTO runs (` + runColumns + `)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON CONFLICT (id) DO NOTHING`
	sqliteSetRunStatus = `UPDATE OR ROLLBACK runs SET status = ?2, updated_at = ?3 WHERE id = ?1`
)

// The reads of a thread record, a run and a run's events after a
// sequence number: prepared once, as the API reads them at every run and
// stream.
const (
	sqliteThreadRecord = `SELECT id, tenant, metadata, created_at, updated_at FROM thread_records WHERE id = ?1`
	sqliteRun          = `SELECT ` + runColumns + ` FROM runs WHERE id = ?1`
	sqliteEvents       = `SELECT seq, event, data, created_at FROM run_events WHERE run = ?1 AND seq > ?2 ORDER BY seq`
)

// groupedRow commits query with args in the group commit; a write that
// changed no row is ErrNotFound for what.
func (s *sqliteStore) groupedRow(ctx context.Context, what, query string, args ...any) error {
	n, err := s.commitPut(ctx, &putReq{query: query, args: args})
	if err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("store: %s: %w", what, store.ErrNotFound)
	}
	return nil
}

func (s *sqliteStore) CreateThread(ctx context.Context, t *store.ThreadRecord) error {
	if err := store.CheckThreadRecord(t, time.Now()); err != nil {
		return err
	}
	err := s.groupedRow(ctx, "create thread "+t.ID, sqliteCreateThread, threadArgs(t)...)
	if errors.Is(err, store.ErrNotFound) {
		return store.ConflictRecord("thread", t.ID)
	}
	return err
}

func (s *sqliteStore) Thread(ctx context.Context, id string) (*store.ThreadRecord, error) {
	var t store.ThreadRecord
	var created, updated int64
	var meta []byte
	err := s.threadRecord.QueryRowContext(ctx, id).Scan(&t.ID, &t.Tenant, &meta, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.RecordNotFound("thread", id)
	} else if err != nil {
		return nil, fmt.Errorf("store: thread %q: %w", id, err)
	}
	t.Metadata, t.CreatedAt, t.UpdatedAt = raw(meta), time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return &t, nil
}

func (s *sqliteStore) UpdateThread(ctx context.Context, t *store.ThreadRecord) error {
	updated := t.UpdatedAt
	if updated.IsZero() {
		updated = time.Now()
	}
	return s.groupedRow(ctx, "thread "+t.ID, sqliteUpdateThread, t.ID, blob(t.Metadata), updated.UnixNano())
}

func (s *sqliteStore) DeleteThread(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `
		DELETE FROM run_events WHERE run IN (SELECT id FROM runs WHERE thread = ?1);
		DELETE FROM runs WHERE thread = ?1;
		DELETE FROM thread_records WHERE id = ?1;`, id)
	return oneRow(res, err, "thread "+id)
}

func (s *sqliteStore) ThreadRecords(ctx context.Context, tenant string) ([]store.ThreadRecord, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, tenant, metadata, created_at, updated_at FROM thread_records
		WHERE tenant = ?1 ORDER BY created_at DESC, id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("store: thread records: %w", err)
	}
	defer rows.Close()
	var out []store.ThreadRecord
	for rows.Next() {
		var t store.ThreadRecord
		var created, updated int64
		var meta []byte
		if err := rows.Scan(&t.ID, &t.Tenant, &meta, &created, &updated); err != nil {
			return nil, fmt.Errorf("store: thread records: %w", err)
		}
		t.Metadata, t.CreatedAt, t.UpdatedAt = raw(meta), time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
		out = append(out, t)
	}
	return out, rows.Err()
}

func (s *sqliteStore) CreateRun(ctx context.Context, r *store.RunRecord, thread *store.ThreadRecord) (*store.RunRecord, bool, error) {
	if err := store.CheckRunRecord(r, thread, time.Now()); err != nil {
		return nil, false, err
	}
	if r.IdempotencyKey == "" {
		return s.createRunGrouped(ctx, r, thread)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, fmt.Errorf("store: create run %s: %w", r.ID, err)
	}
	defer tx.Rollback()
	old, err := scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE tenant = ?1 AND idempotency_key = ?2`,
		r.Tenant, r.IdempotencyKey))
	if err == nil {
		return old, false, nil
	} else if !errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("store: create run %s: %w", r.ID, err)
	}
	if thread != nil {
		res, err := tx.ExecContext(ctx, sqliteCreateThread, threadArgs(thread)...)
		if err := oneRow(res, err, "create thread "+thread.ID); errors.Is(err, store.ErrNotFound) {
			return nil, false, store.ConflictRecord("thread", thread.ID)
		} else if err != nil {
			return nil, false, err
		}
	}
	res, err := tx.ExecContext(ctx, sqliteCreateRun, runArgs(r)...)
	if err := oneRow(res, err, "create run "+r.ID); errors.Is(err, store.ErrNotFound) {
		return nil, false, store.ConflictRecord("run", r.ID)
	} else if err != nil {
		return nil, false, err
	}
	if err := tx.Commit(); err != nil {
		return nil, false, fmt.Errorf("store: create run %s: %w", r.ID, err)
	}
	return createdRun(r), true, nil
}

// createRunGrouped creates a run without an idempotency key, and its
// thread if not nil first, in the group commit.
func (s *sqliteStore) createRunGrouped(ctx context.Context, r *store.RunRecord, thread *store.ThreadRecord) (*store.RunRecord, bool, error) {
	req := &putReq{query: sqliteCreateRun, args: runArgs(r)}
	if thread != nil {
		req = &putReq{query: sqliteCreateThread, args: threadArgs(thread), after: req}
	}
	n, err := s.commitPut(ctx, req)
	switch {
	case errors.Is(err, errAfter): // the thread was new, the run's ID not
		return nil, false, store.ConflictRecord("run", r.ID)
	case err != nil:
		return nil, false, fmt.Errorf("store: create run %s: %w", r.ID, err)
	case n == 0 && thread != nil:
		return nil, false, store.ConflictRecord("thread", thread.ID)
	case n == 0:
		return nil, false, store.ConflictRecord("run", r.ID)
	}
	return createdRun(r), true, nil
}

// threadArgs are the arguments of sqliteCreateThread for t.
func threadArgs(t *store.ThreadRecord) []any {
	return []any{t.ID, t.Tenant, blob(t.Metadata), t.CreatedAt.UnixNano(), t.UpdatedAt.UnixNano()}
}

// runArgs are the arguments of sqliteCreateRun for r.
func runArgs(r *store.RunRecord) []any {
	return []any{r.ID, r.Thread, r.Tenant, r.Assistant, r.Status, r.MultitaskStrategy, r.IdempotencyKey,
		blob(r.Kwargs), blob(r.Metadata), r.CreatedAt.UnixNano(), r.UpdatedAt.UnixNano()}
}

// createdRun is the run r as the store keeps it: its times to the
// nanosecond, in UTC.
func createdRun(r *store.RunRecord) *store.RunRecord {
	c := *r
	c.CreatedAt, c.UpdatedAt = time.Unix(0, r.CreatedAt.UnixNano()).UTC(), time.Unix(0, r.UpdatedAt.UnixNano()).UTC()
	return &c
}

func (s *sqliteStore) Run(ctx context.Context, id string) (*store.RunRecord, error) {
	r, err := scanRun(s.run.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.RecordNotFound("run", id)
	} else if err != nil {
		return nil, fmt.Errorf("store: run %q: %w", id, err)
	}
	return r, nil
}

func (s *sqliteStore) Runs(ctx context.Context, thread string) ([]store.RunRecord, error) {
	return s.queryRuns(ctx, `SELECT `+runColumns+` FROM runs WHERE thread = ?1 ORDER BY created_at, id`, thread)
}

func (s *sqliteStore) RunsWithStatus(ctx context.Context, statuses ...string) ([]store.RunRecord, error) {
	if len(statuses) == 0 {
		return nil, nil
	}
	args := make([]any, len(statuses))
	for i, st := range statuses {
		args[i] = st
	}
	marks := strings.Repeat(",?", len(statuses))[1:]
	return s.queryRuns(ctx, `SELECT `+runColumns+` FROM runs WHERE status IN (`+marks+`) ORDER BY created_at, id`, args...)
}

func (s *sqliteStore) queryRuns(ctx context.Context, query string, args ...any) ([]store.RunRecord, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: runs: %w", err)
	}
	defer rows.Close()
	var out []store.RunRecord
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("store: runs: %w", err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// scanRun scans a row of runColumns.
func scanRun(row interface{ Scan(...any) error }) (*store.RunRecord, error) {
	var r store.RunRecord
	var created, updated int64
	var kwargs, meta []byte
	if err := row.Scan(&r.ID, &r.Thread, &r.Tenant, &r.Assistant, &r.Status, &r.MultitaskStrategy,
		&r.IdempotencyKey, &kwargs, &meta, &created, &updated); err != nil {
		return nil, err
	}
	r.Kwargs, r.Metadata = raw(kwargs), raw(meta)
	r.CreatedAt, r.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return &r, nil
}

func (s *sqliteStore) SetRunStatus(ctx context.Context, id, status string) error {
	return s.groupedRow(ctx, "run "+id, sqliteSetRunStatus, id, status, time.Now().UnixNano())
}

func (s *sqliteStore) DeleteRun(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM run_events WHERE run = ?1; DELETE FROM runs WHERE id = ?1;`, id)
	return oneRow(res, err, "run "+id)
}

// sqliteBatch is the most events one statement appends (a statement
// prepared for its size); a larger batch is appended in chunks, all in
// one write of the group commit (batch.go).
const sqliteBatch = 64

// sqliteAppend returns the statement appending n events, numbered after
// the run's newest (runs.last_seq, which sqliteAppended then moves past
// them), from ?3 on; writes are serialized, so two appends never share a
// number. Its parameters are the run, the time, the offset, then each
// event's name and data. It appends nothing for an unknown run. It reads
// the base from runs, not run_events: SQLite runs an INSERT … SELECT that
// reads its own table through a temporary table.
func sqliteAppend(n int) string {
	var b strings.Builder
	b.WriteString(`WITH batch(i, event, data) AS (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, ?%d, ?%d)", i+1, 2*i+4, 2*i+5)
	}
	b.WriteString(`)
INSERT OR ROLLBACK INTO run_events (run, seq, event, data, created_at)
SELECT ?1, r.last_seq + ?3 + i, event, data, ?2 FROM runs r, batch WHERE r.id = ?1`)
	return b.String()
}

// sqliteAppended moves run ?1's last_seq past the ?2 events appended;
// sqliteEnded also sets its status ?3 at time ?4. Each returns the new
// last_seq, no row for an unknown run.
const (
	sqliteAppended = `UPDATE OR ROLLBACK runs SET last_seq = last_seq + ?2 WHERE id = ?1 RETURNING last_seq`
	sqliteEnded    = `UPDATE OR ROLLBACK runs SET last_seq = last_seq + ?2, status = ?3, updated_at = ?4 WHERE id = ?1 RETURNING last_seq`
)

func (s *sqliteStore) AppendEvents(ctx context.Context, run string, events []store.EventInput) (int64, error) {
	if len(events) == 0 {
		return 0, nil
	}
	return s.appendEvents(ctx, run, events, "")
}

func (s *sqliteStore) EndRun(ctx context.Context, id, status string, events []store.EventInput) error {
	if len(events) == 0 {
		return s.SetRunStatus(ctx, id, status)
	}
	_, err := s.appendEvents(ctx, id, events, status)
	return err
}

// appendEvents appends events (at least one) to run's and, unless status
// is "", sets the run's status, in one write of the group commit: a
// statement for each sqliteBatch events, then sqliteAppended (or
// sqliteEnded). It returns the last event's Seq.
func (s *sqliteStore) appendEvents(ctx context.Context, run string, events []store.EventInput, status string) (int64, error) {
	now := time.Now().UnixNano()
	var req *putReq
	for off := 0; off < len(events); off += sqliteBatch {
		chunk := events[off:min(off+sqliteBatch, len(events))]
		req = &putReq{query: sqliteAppend(len(chunk)), args: appendArgs(run, chunk, now, off), before: req}
	}
	req = &putReq{query: sqliteAppended, args: []any{run, len(events)}, returning: true, before: req}
	if status != "" {
		req.query, req.args = sqliteEnded, append(req.args, status, now)
	}
	seq, err := s.commitPut(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("store: run %q: append events: %w", run, err)
	}
	if seq == 0 {
		return 0, store.RecordNotFound("run", run)
	}
	return seq, nil
}

// appendArgs are the parameters of sqliteAppend.
func appendArgs(run string, events []store.EventInput, now int64, off int) []any {
	args := make([]any, 0, 3+2*len(events))
	args = append(args, run, now, off)
	for _, ev := range events {
		args = append(args, ev.Event, blob(ev.Data))
	}
	return args
}

func (s *sqliteStore) Events(ctx context.Context, run string, after int64) ([]store.RunEvent, error) {
	rows, err := s.events.QueryContext(ctx, run, after)
	if err != nil {
		return nil, fmt.Errorf("store: run %q: events: %w", run, err)
	}
	defer rows.Close()
	var out []store.RunEvent
	for rows.Next() {
		ev := store.RunEvent{Run: run}
		var data []byte
		var created int64
		if err := rows.Scan(&ev.Seq, &ev.Event, &data, &created); err != nil {
			return nil, fmt.Errorf("store: run %q: events: %w", run, err)
		}
		ev.Data, ev.CreatedAt = raw(data), time.Unix(0, created).UTC()
		out = append(out, ev)
	}
	return out, rows.Err()
}

// oneRow turns an Exec that changed no row into ErrNotFound for what.
func oneRow(res sql.Result, err error, what string) error {
	if err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	} else if n == 0 {
		return fmt.Errorf("store: %s: %w", what, store.ErrNotFound)
	}
	return nil
}

// raw is a scanned blob as JSON: nil when empty.
func raw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}
