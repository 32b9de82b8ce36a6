package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
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

// sqliteEventBatchesSchema creates version 10's run_event_batches: a row
// for each append of a run's events (encodeEvents), in the order the
// appends commit (its rowid), so the appends of the runs going on at once
// share the newest pages; run_event_batches_run finds a run's from an
// event on.
const sqliteEventBatchesSchema = `
CREATE TABLE run_event_batches (
	id         INTEGER PRIMARY KEY,
	run        TEXT    NOT NULL,
	first_seq  INTEGER NOT NULL,
	last_seq   INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	events     BLOB    NOT NULL
);
CREATE INDEX run_event_batches_run ON run_event_batches (run, last_seq);
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
	sqliteEvents       = `SELECT seq, seq, event, data, created_at FROM run_events WHERE run = ?1 AND seq > ?2
UNION ALL
SELECT first_seq, last_seq, NULL, events, created_at FROM run_event_batches WHERE run = ?1 AND last_seq > ?2
ORDER BY 1`
)

// groupedRow commits query with args in the group commit; a write that
// changed no row is ErrNotFound for what.
func (s *sqliteStore) groupedRow(ctx context.Context, what, query string, args ...any) error {
	n, err := s.commitPut(ctx, &putReq{query: query, args: args})
	if err != nil {
		return fmt.Errorf("store: %s: %w", what, fault(err))
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
		return nil, fmt.Errorf("store: thread %q: %w", id, fault(err))
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
		DELETE FROM run_event_batches WHERE run IN (SELECT id FROM runs WHERE thread = ?1);
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
	return out, fault(rows.Err())
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
		return nil, false, fmt.Errorf("store: create run %s: %w", r.ID, fault(err))
	}
	defer tx.Rollback()
	old, err := scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE tenant = ?1 AND idempotency_key = ?2`,
		r.Tenant, r.IdempotencyKey))
	if err == nil {
		return old, false, nil
	} else if !errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("store: create run %s: %w", r.ID, fault(err))
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
		return nil, false, fmt.Errorf("store: create run %s: %w", r.ID, fault(err))
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
		return nil, false, fmt.Errorf("store: create run %s: %w", r.ID, fault(err))
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
		return nil, fmt.Errorf("store: run %q: %w", id, fault(err))
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
	return out, fault(rows.Err())
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
	res, err := s.w.ExecContext(ctx, `DELETE FROM run_events WHERE run = ?1; DELETE FROM run_event_batches WHERE run = ?1;
		DELETE FROM runs WHERE id = ?1;`, id)
	return oneRow(res, err, "run "+id)
}

// sqliteAppend appends a batch of ?3 events (?4, encodeEvents) to run
// ?1 at time ?2, numbered after the run's newest (runs.last_seq, which
// sqliteAppended then moves past them); writes are serialized, so two
// appends never share a number. It appends nothing for an unknown run.
const sqliteAppend = `INSERT OR ROLLBACK INTO run_event_batches (run, first_seq, last_seq, created_at, events)
SELECT ?1, last_seq + 1, last_seq + ?3, ?2, ?4 FROM runs WHERE id = ?1`

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
// is "", sets the run's status, in one write of the group commit: the
// batch's row (sqliteAppend), then sqliteAppended (or sqliteEnded). It
// returns the last event's Seq.
func (s *sqliteStore) appendEvents(ctx context.Context, run string, events []store.EventInput, status string) (int64, error) {
	now := time.Now().UnixNano()
	req := &putReq{query: sqliteAppended, args: []any{run, len(events)}, returning: true,
		before: &putReq{query: sqliteAppend, args: []any{run, now, len(events), encodeEvents(events)}}}
	if status != "" {
		req.query, req.args = sqliteEnded, append(req.args, status, now)
	}
	seq, err := s.commitPut(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("store: run %q: append events: %w", run, fault(err))
	}
	if seq == 0 {
		return 0, store.RecordNotFound("run", run)
	}
	return seq, nil
}

// encodeEvents encodes events as a batch: each event's name, then its
// data, each as the bytes it shares at its start and its end with the
// previous event's (a uvarint each), then the length (a uvarint) and the
// bytes of the rest — a run's values events, alike but for a number,
// take a few bytes each.
func encodeEvents(events []store.EventInput) []byte {
	var b []byte
	for i, ev := range events {
		var prev store.EventInput
		if i > 0 {
			prev = events[i-1]
		}
		b = appendShared(b, prev.Event, ev.Event)
		b = appendShared(b, prev.Data, ev.Data)
	}
	return b
}

// appendShared appends cur as encodeEvents encodes it after prev.
func appendShared[T string | json.RawMessage](b []byte, prev, cur T) []byte {
	p := 0
	for p < len(prev) && p < len(cur) && prev[p] == cur[p] {
		p++
	}
	q := 0
	for q < len(prev)-p && q < len(cur)-p && prev[len(prev)-1-q] == cur[len(cur)-1-q] {
		q++
	}
	b = binary.AppendUvarint(b, uint64(p))
	b = binary.AppendUvarint(b, uint64(q))
	b = binary.AppendUvarint(b, uint64(len(cur)-p-q))
	return append(b, cur[p:len(cur)-q]...)
}

// decodeEvents appends to out the events of run in batch b
// (encodeEvents), numbered first to last, that come after seq after,
// created at at.
func decodeEvents(out []store.RunEvent, run string, first, last, after int64, b []byte, at time.Time) ([]store.RunEvent, error) {
	var name, data []byte
	seq := first
	for ; len(b) > 0 && seq <= last; seq++ {
		var ok bool
		if name, b, ok = cutShared(b, name); ok {
			data, b, ok = cutShared(b, data)
		}
		if !ok {
			return out, fmt.Errorf("store: run %q: the batch of events from %d is cut short at %d", run, first, seq)
		}
		if seq > after {
			out = append(out, store.RunEvent{Run: run, Seq: seq, Event: string(name), Data: raw(data), CreatedAt: at})
		}
	}
	if len(b) > 0 || seq != last+1 {
		return out, fmt.Errorf("store: run %q: the batch of events %d to %d holds events %d to %d", run, first, last, first, seq-1)
	}
	return out, nil
}

// cutShared cuts a field encoded after prev (appendShared) off b; ok is
// false if b does not hold one. The field is a new slice.
func cutShared(b, prev []byte) (field, rest []byte, ok bool) {
	var n [3]uint64
	for i := range n {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, nil, false
		}
		n[i], b = v, b[k:]
	}
	p, q, m := n[0], n[1], n[2]
	if p > uint64(len(prev)) || q > uint64(len(prev))-p || m > uint64(len(b)) {
		return nil, nil, false
	}
	field = make([]byte, 0, p+m+q)
	field = append(append(append(field, prev[:p]...), b[:m]...), prev[uint64(len(prev))-q:]...)
	return field, b[m:], true
}

func (s *sqliteStore) Events(ctx context.Context, run string, after int64) ([]store.RunEvent, error) {
	rows, err := s.events.QueryContext(ctx, run, after)
	if err != nil {
		return nil, fmt.Errorf("store: run %q: events: %w", run, fault(err))
	}
	defer rows.Close()
	var out []store.RunEvent
	for rows.Next() {
		var first, last, created int64
		var event sql.NullString // an event of run_events; NULL for a batch
		var data []byte
		if err := rows.Scan(&first, &last, &event, &data, &created); err != nil {
			return nil, fmt.Errorf("store: run %q: events: %w", run, fault(err))
		}
		at := time.Unix(0, created).UTC()
		if event.Valid {
			out = append(out, store.RunEvent{Run: run, Seq: first, Event: event.String, Data: raw(data), CreatedAt: at})
		} else if out, err = decodeEvents(out, run, first, last, after, data, at); err != nil {
			return nil, err
		}
	}
	return out, fault(rows.Err())
}

// oneRow turns an Exec that changed no row into ErrNotFound for what.
func oneRow(res sql.Result, err error, what string) error {
	if err != nil {
		return fmt.Errorf("store: %s: %w", what, fault(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: %s: %w", what, fault(err))
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
