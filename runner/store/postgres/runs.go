package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/runner-dev/runner/runner/store"
)

// pgRunsSchema creates version 3's tables: the API server's thread
// records, runs and each run's event log (store.RunStore). A run's events
// go with it (ON DELETE CASCADE).
const pgRunsSchema = `
CREATE TABLE thread_records (
	id         text   NOT NULL PRIMARY KEY,
	tenant     text   NOT NULL,
	metadata   bytea,
	created_at bigint NOT NULL,
	updated_at bigint NOT NULL
);
CREATE INDEX thread_records_tenant ON thread_records (tenant, created_at DESC, id);
CREATE TABLE runs (
	id                 text   NOT NULL PRIMARY KEY,
	thread             text   NOT NULL,
	tenant             text   NOT NULL,
	assistant          text   NOT NULL,
	status             text   NOT NULL,
	multitask_strategy text   NOT NULL,
	idempotency_key    text   NOT NULL,
	kwargs             bytea,
	metadata           bytea,
	created_at         bigint NOT NULL,
	updated_at         bigint NOT NULL,
	last_seq           bigint NOT NULL DEFAULT 0
);
CREATE INDEX runs_thread ON runs (thread, created_at, id);
CREATE INDEX runs_status ON runs (status);
CREATE UNIQUE INDEX runs_idempotency ON runs (tenant, idempotency_key) WHERE idempotency_key <> '';
CREATE TABLE run_events (
	run        text   NOT NULL REFERENCES runs ON DELETE CASCADE,
	seq        bigint NOT NULL,
	event      text   NOT NULL,
	data       bytea,
	created_at bigint NOT NULL,
	PRIMARY KEY (run, seq)
);
`

// Thread record statements.
const (
	pgThreadColumns      = `id, tenant, metadata, created_at, updated_at`
	pgCreateThread       = `INSERT INTO thread_records (` + pgThreadColumns + `) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`
	pgThreadRecord       = `SELECT ` + pgThreadColumns + ` FROM thread_records WHERE id = $1`
	pgThreadRecords      = `SELECT ` + pgThreadColumns + ` FROM thread_records WHERE tenant = $1 ORDER BY created_at DESC, id`
	pgUpdateThread       = `UPDATE thread_records SET metadata = $2, updated_at = $3 WHERE id = $1`
	pgDeleteThreadRuns   = `DELETE FROM runs WHERE thread = $1`
	pgDeleteThreadRecord = `DELETE FROM thread_records WHERE id = $1`
)

// Run statements.
const (
	pgRunColumns = `id, thread, tenant, assistant, status, multitask_strategy, idempotency_key,
	kwargs, metadata, created_at, updated_at`
	pgCreateRun = `INSERT INTO runs (` + pgRunColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`
	// pgCreateRunThread is pgCreateRun with the record of the run's new
	// thread ($12-$16) inserted first, in one statement: no row when the
	// thread exists or the tenant has a run of the idempotency key, a
	// unique violation (nothing written) when the run's ID or key is
	// taken meanwhile.
	pgCreateRunThread = `WITH t AS (
	INSERT INTO thread_records (` + pgThreadColumns + `) SELECT $12, $13, $14, $15, $16
	WHERE $7 = '' OR NOT EXISTS (SELECT FROM runs WHERE tenant = $3 AND idempotency_key = $7)
	ON CONFLICT (id) DO NOTHING RETURNING id)
	INSERT INTO runs (` + pgRunColumns + `) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 FROM t`
	pgRunByKey       = `SELECT ` + pgRunColumns + ` FROM runs WHERE tenant = $1 AND idempotency_key = $2`
	pgRun            = `SELECT ` + pgRunColumns + ` FROM runs WHERE id = $1`
	pgRuns           = `SELECT ` + pgRunColumns + ` FROM runs WHERE thread = $1 ORDER BY created_at, id`
	pgRunsWithStatus = `SELECT ` + pgRunColumns + ` FROM runs WHERE status = ANY($1) ORDER BY created_at, id`
	pgSetRunStatus   = `UPDATE runs SET status = $2, updated_at = $3 WHERE id = $1`
	pgDeleteRun      = `DELETE FROM runs WHERE id = $1`
)

// pgAppend numbers a batch of events ($3 their names, $4 their data)
// after the run's last, taking the run's row lock: concurrent appends to
// one run queue on it, each batch numbered after the one before. When $5
// is not NULL it also sets the run's status to it (EndRun). It returns
// the last one's number, or no row for an unknown run.
const pgAppend = `
WITH r AS (UPDATE runs SET last_seq = last_seq + cardinality($3::text[]),
	status = coalesce($5, status), updated_at = CASE WHEN $5 IS NULL THEN updated_at ELSE $2 END
	WHERE id = $1 RETURNING last_seq),
ins AS (
	INSERT INTO run_events (run, seq, event, data, created_at)
	SELECT $1, r.last_seq - cardinality($3::text[]) + e.i, e.event, e.data, $2
	FROM r, unnest($3::text[], $4::bytea[]) WITH ORDINALITY AS e(event, data, i)
)
SELECT last_seq FROM r`

// pgLastEvent is the seq, event, data and time of run $1's newest event.
const pgLastEvent = `SELECT seq, event, data, created_at FROM run_events WHERE run = $1 ORDER BY seq DESC LIMIT 1`

// pgEvents are run $1's events after seq $2.
const pgEvents = `SELECT seq, event, data, created_at FROM run_events WHERE run = $1 AND seq > $2 ORDER BY seq`

func (s *pgStore) CreateThread(ctx context.Context, t *store.ThreadRecord) error {
	if err := store.CheckThreadRecord(t, time.Now()); err != nil {
		return err
	}
	insert := func() (bool, error) {
		tag, err := s.pool.Exec(ctx, pgCreateThread, t.ID, t.Tenant, blob(t.Metadata),
			t.CreatedAt.UnixNano(), t.UpdatedAt.UnixNano())
		return tag.RowsAffected() == 1, err
	}
	ok, err := insert()
	if err != nil && s.lost(ctx, err) {
		// The lost insert may have committed: then the record is ours.
		if ok, err = insert(); err == nil && !ok {
			ok = s.sameThread(ctx, t)
		}
	}
	if err != nil {
		return fmt.Errorf("store: create thread %q: %w", t.ID, fault(err))
	}
	if !ok {
		return store.ConflictRecord("thread", t.ID)
	}
	return nil
}

// sameThread reports whether the stored record of t.ID is t, as a create
// whose reply was lost wrote it.
func (s *pgStore) sameThread(ctx context.Context, t *store.ThreadRecord) bool {
	got, err := s.Thread(ctx, t.ID)
	return err == nil && got.CreatedAt.Equal(t.CreatedAt) && got.Tenant == t.Tenant
}

func (s *pgStore) Thread(ctx context.Context, id string) (*store.ThreadRecord, error) {
	var t *store.ThreadRecord
	err := s.retry(ctx, func() error {
		var err error
		t, err = scanThreadRecord(s.pool.QueryRow(ctx, pgThreadRecord, id))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.RecordNotFound("thread", id)
	} else if err != nil {
		return nil, fmt.Errorf("store: thread %q: %w", id, fault(err))
	}
	return t, nil
}

func (s *pgStore) UpdateThread(ctx context.Context, t *store.ThreadRecord) error {
	updated := t.UpdatedAt
	if updated.IsZero() {
		updated = time.Now()
	}
	return s.execOne(ctx, "thread", t.ID, false, pgUpdateThread, t.ID, blob(t.Metadata), updated.UnixNano())
}

func (s *pgStore) DeleteThread(ctx context.Context, id string) error {
	del := func() (bool, error) {
		var n int64
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, pgDeleteThreadRuns, id); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, pgDeleteThreadRecord, id)
			n = tag.RowsAffected()
			return err
		})
		return n == 1, err
	}
	return s.settle(ctx, "thread", id, true, del)
}

func (s *pgStore) ThreadRecords(ctx context.Context, tenant string) ([]store.ThreadRecord, error) {
	var out []store.ThreadRecord
	err := s.retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, pgThreadRecords, tenant)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ThreadRecord, error) {
			t, err := scanThreadRecord(row)
			if err != nil {
				return store.ThreadRecord{}, err
			}
			return *t, nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: thread records: %w", err)
	}
	return out, nil
}

// scanThreadRecord scans a row of pgThreadColumns.
func scanThreadRecord(row pgx.Row) (*store.ThreadRecord, error) {
	var t store.ThreadRecord
	var created, updated int64
	if err := row.Scan(&t.ID, &t.Tenant, &t.Metadata, &created, &updated); err != nil {
		return nil, err
	}
	t.CreatedAt, t.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return &t, nil
}

func (s *pgStore) CreateRun(ctx context.Context, r *store.RunRecord, thread *store.ThreadRecord) (*store.RunRecord, bool, error) {
	if err := store.CheckRunRecord(r, thread, time.Now()); err != nil {
		return nil, false, err
	}
	run, created, err := s.createRun(ctx, r, thread, false)
	if err != nil && s.lost(ctx, err) {
		run, created, err = s.createRun(ctx, r, thread, true)
	}
	if err != nil && !errors.Is(err, store.ErrConflict) {
		err = fmt.Errorf("store: create run %s: %w", r.ID, fault(err))
	}
	return run, created, err
}

// createRun inserts r, and thread first if not nil, unless its ID, its
// tenant's idempotency key or the thread's ID is taken; for a key taken
// it returns the run of that key, not created. After a lost connection
// (retried), a run of r's ID and creation time is r itself, inserted by
// the attempt whose reply was lost.
func (s *pgStore) createRun(ctx context.Context, r *store.RunRecord, thread *store.ThreadRecord, retried bool) (*store.RunRecord, bool, error) {
	args := []any{r.ID, r.Thread, r.Tenant, r.Assistant, r.Status, r.MultitaskStrategy, r.IdempotencyKey,
		blob(r.Kwargs), blob(r.Metadata), r.CreatedAt.UnixNano(), r.UpdatedAt.UnixNano()}
	query := pgCreateRun
	if thread != nil {
		query = pgCreateRunThread
		args = append(args, thread.ID, thread.Tenant, blob(thread.Metadata), thread.CreatedAt.UnixNano(), thread.UpdatedAt.UnixNano())
	}
	tag, err := s.pool.Exec(ctx, query, args...)
	taken := uniqueViolation(err) // the run's ID, its key or the thread's ID, by another request
	switch {
	case taken:
	case err != nil:
		return nil, false, err
	case tag.RowsAffected() == 1:
		return storedRun(r), true, nil
	}
	if retried {
		if old, err := s.Run(ctx, r.ID); err == nil && old.CreatedAt.Equal(r.CreatedAt) && old.Thread == r.Thread {
			return old, true, nil
		}
	}
	if r.IdempotencyKey != "" {
		old, err := scanRun(s.pool.QueryRow(ctx, pgRunByKey, r.Tenant, r.IdempotencyKey))
		if err == nil {
			return old, false, nil
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return nil, false, err
		}
	}
	if thread != nil && !taken {
		return nil, false, store.ConflictRecord("thread", thread.ID)
	}
	return nil, false, store.ConflictRecord("run", r.ID)
}

// storedRun is r as the store returns it: times in UTC, to the nanosecond.
func storedRun(r *store.RunRecord) *store.RunRecord {
	c := *r
	c.CreatedAt, c.UpdatedAt = time.Unix(0, r.CreatedAt.UnixNano()).UTC(), time.Unix(0, r.UpdatedAt.UnixNano()).UTC()
	return &c
}

func (s *pgStore) Run(ctx context.Context, id string) (*store.RunRecord, error) {
	var r *store.RunRecord
	err := s.retry(ctx, func() error {
		var err error
		r, err = scanRun(s.pool.QueryRow(ctx, pgRun, id))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.RecordNotFound("run", id)
	} else if err != nil {
		return nil, fmt.Errorf("store: run %q: %w", id, fault(err))
	}
	return r, nil
}

func (s *pgStore) Runs(ctx context.Context, thread string) ([]store.RunRecord, error) {
	return s.queryRuns(ctx, pgRuns, thread)
}

func (s *pgStore) RunsWithStatus(ctx context.Context, statuses ...string) ([]store.RunRecord, error) {
	if len(statuses) == 0 {
		return nil, nil
	}
	return s.queryRuns(ctx, pgRunsWithStatus, statuses)
}

// queryRuns runs a select of pgRunColumns, once more if the connection
// was lost.
func (s *pgStore) queryRuns(ctx context.Context, sql string, args ...any) ([]store.RunRecord, error) {
	var out []store.RunRecord
	err := s.retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.RunRecord, error) {
			r, err := scanRun(row)
			if err != nil {
				return store.RunRecord{}, err
			}
			return *r, nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: runs: %w", err)
	}
	return out, nil
}

// scanRun scans a row of pgRunColumns.
func scanRun(row pgx.Row) (*store.RunRecord, error) {
	var r store.RunRecord
	var created, updated int64
	if err := row.Scan(&r.ID, &r.Thread, &r.Tenant, &r.Assistant, &r.Status, &r.MultitaskStrategy,
		&r.IdempotencyKey, &r.Kwargs, &r.Metadata, &created, &updated); err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return &r, nil
}

func (s *pgStore) SetRunStatus(ctx context.Context, id, status string) error {
	return s.execOne(ctx, "run", id, false, pgSetRunStatus, id, status, time.Now().UnixNano())
}

func (s *pgStore) DeleteRun(ctx context.Context, id string) error {
	return s.execOne(ctx, "run", id, true, pgDeleteRun, id)
}

// execOne runs a statement that changes the record kind id, and returns
// store.ErrNotFound when it changed none; see settle for deletes.
func (s *pgStore) execOne(ctx context.Context, kind, id string, deletes bool, sql string, args ...any) error {
	return s.settle(ctx, kind, id, deletes, func() (bool, error) {
		tag, err := s.pool.Exec(ctx, sql, args...)
		return tag.RowsAffected() > 0, err
	})
}

// settle runs f, a change of the record kind id that reports whether it
// found the record, again if the connection was lost; store.ErrNotFound
// when it did not find it. A delete retried after a lost connection
// that finds nothing succeeds: the lost attempt deleted the record.
func (s *pgStore) settle(ctx context.Context, kind, id string, deletes bool, f func() (bool, error)) error {
	found, err := f()
	if err != nil && s.lost(ctx, err) {
		if found, err = f(); err == nil && !found && deletes {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("store: %s %q: %w", kind, id, fault(err))
	}
	if !found {
		return store.RecordNotFound(kind, id)
	}
	return nil
}

func (s *pgStore) AppendEvents(ctx context.Context, run string, events []store.EventInput) (int64, error) {
	if len(events) == 0 {
		return 0, nil
	}
	return s.appendEvents(ctx, run, events, nil)
}

func (s *pgStore) EndRun(ctx context.Context, id, status string, events []store.EventInput) error {
	if len(events) == 0 {
		return s.SetRunStatus(ctx, id, status)
	}
	_, err := s.appendEvents(ctx, id, events, &status)
	return err
}

// appendEvents appends events (at least one) to run's and, unless status
// is nil, sets the run's status in the same statement; it returns the
// last event's Seq.
func (s *pgStore) appendEvents(ctx context.Context, run string, events []store.EventInput, status *string) (int64, error) {
	now := time.Now().UnixNano()
	seq, err := s.append(ctx, run, events, now, status)
	if err != nil && s.lost(ctx, err) {
		seq, err = s.retryAppend(ctx, run, events, now, status)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, store.RecordNotFound("run", run)
	} else if err != nil {
		return 0, fmt.Errorf("store: run %q: append events: %w", run, fault(err))
	}
	return seq, nil
}

// append runs pgAppend.
func (s *pgStore) append(ctx context.Context, run string, events []store.EventInput, now int64, status *string) (int64, error) {
	names, data := make([]string, len(events)), make([][]byte, len(events))
	for i, ev := range events {
		names[i], data[i] = ev.Event, blob(ev.Data)
	}
	var seq int64
	err := s.pool.QueryRow(ctx, pgAppend, run, now, names, data, status).Scan(&seq)
	return seq, err
}

// retryAppend appends events again after their connection was lost,
// unless the run's newest event is the batch's last: the lost append
// committed (a batch is one statement: all of it or none).
func (s *pgStore) retryAppend(ctx context.Context, run string, events []store.EventInput, now int64, status *string) (int64, error) {
	var last store.RunEvent
	var created int64
	want := events[len(events)-1]
	err := s.pool.QueryRow(ctx, pgLastEvent, run).Scan(&last.Seq, &last.Event, &last.Data, &created)
	switch {
	case err == nil && created == now && last.Event == want.Event && string(last.Data) == string(blob(want.Data)):
		return last.Seq, nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return 0, err
	}
	return s.append(ctx, run, events, now, status)
}

func (s *pgStore) Events(ctx context.Context, run string, after int64) ([]store.RunEvent, error) {
	var out []store.RunEvent
	err := s.retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, pgEvents, run, after)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.RunEvent, error) {
			ev := store.RunEvent{Run: run}
			var created int64
			err := row.Scan(&ev.Seq, &ev.Event, &ev.Data, &created)
			ev.CreatedAt = time.Unix(0, created).UTC()
			return ev, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: run %q: events: %w", run, fault(err))
	}
	return out, nil
}
