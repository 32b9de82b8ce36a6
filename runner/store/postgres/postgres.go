// Package postgres is the PostgreSQL store.Store: many processes on many
// machines share one database, each thread's checkpoints kept in order by
// the database itself.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/runner-dev/runner/runner/store"
)

// openTimeout bounds connecting and migrating in Open.
const openTimeout = 30 * time.Second

// Open opens the PostgreSQL store at url, a postgres:// or postgresql://
// connection URL, and brings its schema up to date. The URL's query takes
// libpq's parameters (sslmode=disable, connect_timeout=10, ...), pgxpool's
// (pool_max_conns=10, ...) and server settings such as search_path=runner,
// the schema the store's tables live in.
func Open(url string) (store.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	where := redact(url)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("store: postgres %s: %w", where, fault(err))
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return migrate(ctx, tx) }); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: postgres %s: %w", where, fault(err))
	}
	s := &pgStore{pool: pool, where: where}
	s.group = store.Group[write]{Commit: s.commit, Max: maxGroup}
	return s, nil
}

// redact is url without its password, for error messages.
func redact(url string) string {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return "(unparsable URL)"
	}
	return fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

// pgStore is the PostgreSQL store.Store on a pool of connections; Puts
// are committed in groups (group.go).
type pgStore struct {
	pool  *pgxpool.Pool
	where string // the database, for errors (redact)
	group store.Group[write]
	heads sync.Map // the tenants whose audit chain has its head row
}

// A Put's statement — pgPutSteps, the steps of its approvals and audit
// records if any, pgPutThread — inserts a checkpoint only if its ID ($2) is the thread's next and
// its lease token ($16) is 0 or the thread's, upserts the thread's row
// (a new one with its parent, $18), and, if it inserted and $17 says so,
// releases the lease, in one statement; a concurrent Put of the same ID fails on the primary key,
// and the lease row stays locked until the Put commits, so a takeover
// waits for it. It affects one row when it inserted.
//
// pgPutSteps are its first steps: the checkpoint's insert and the
// lease's release.
const pgPutSteps = `
WITH ins AS (
	INSERT INTO checkpoints (thread, id, parent, step, node, next, status, pipeline,
		config_hash, tenant, created_at, interrupt, meta, writes, snapshot)
	SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15
	WHERE $2 = 1 + coalesce((SELECT max(id) FROM checkpoints WHERE thread = $1), 0)
	AND ($16 = 0 OR $16 = (SELECT token FROM leases WHERE thread = $1 FOR SHARE))
	RETURNING thread, pipeline, status, step, id, created_at),
rel AS (
	UPDATE leases SET expires_at = 0
	WHERE $17::boolean AND thread = $1 AND token = $16 AND EXISTS (SELECT FROM ins))`

// pgPutThread is a Put's last step: the thread's row.
const pgPutThread = `
INSERT INTO threads (id, pipeline, status, steps, last_id, updated_at, parent)
SELECT *, nullif($18, '') FROM ins
ON CONFLICT (id) DO UPDATE SET pipeline = excluded.pipeline, status = excluded.status,
	steps = excluded.steps, last_id = excluded.last_id, updated_at = excluded.updated_at`

// pgLastID is the thread's newest checkpoint ID, 0 for none.
const pgLastID = `SELECT coalesce(max(id), 0) FROM checkpoints WHERE thread = $1`

// pgSame is whether checkpoint $2 of thread $1 has created_at $3 and
// writes $4: whether a Put whose reply was lost stored it.
const pgSame = `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE thread = $1 AND id = $2
	AND created_at = $3 AND writes IS NOT DISTINCT FROM $4)`

func (s *pgStore) Put(ctx context.Context, cp *store.Checkpoint) error {
	if err := store.CheckPut(cp); err != nil {
		return err
	}
	err := s.put(ctx, cp)
	if err != nil && s.lost(ctx, err) {
		err = s.retryPut(ctx, cp)
	}
	if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrFenced) {
		return fmt.Errorf("store: put: thread %q checkpoint %d: %w", cp.Thread, cp.ID, fault(err))
	}
	return err
}

// put runs a Put's statement; a Put whose ID is not next is a store.ErrConflict, one
// under a lease taken over a store.ErrFenced.
func (s *pgStore) put(ctx context.Context, cp *store.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := write{pgPutSteps, []any{cp.Thread, cp.ID, cp.Parent, cp.Step, cp.Node,
		cp.Next, cp.Status, cp.Pipeline, cp.ConfigHash, cp.Tenant, cp.CreatedAt.UnixNano(),
		blob(cp.Interrupt), blob(cp.Meta), blob(cp.Writes), blob(cp.Snapshot), cp.Lease, cp.Release, cp.ChildOf}}
	if len(cp.Approvals) > 0 {
		w.args = append(w.args, approvalRows(cp.Approvals))
		w.sql += fmt.Sprintf(pgApprovalsStep, len(w.args))
	}
	if len(cp.Audit) > 0 {
		if err := s.auditHead(ctx, cp.Tenant); err != nil {
			return err
		}
		w.sql = recursive(w.sql) + "," + auditSteps(len(w.args)+1, "EXISTS (SELECT FROM ins)")
		w.args = append(w.args, auditArgs(cp.Tenant, cp.Audit)...)
	}
	if len(cp.Deliveries) > 0 {
		w.sql += pgDeliveriesStep(len(w.args) + 1)
		w.args = append(w.args, deliveryArgs(cp.Deliveries)...)
	}
	w.sql += pgPutThread
	res := s.group.Do(w)
	switch {
	case uniqueViolation(res.Err):
	case res.Err != nil:
		return res.Err
	case res.N == 1:
		return nil
	}
	if err := s.fenced(ctx, cp); err != nil {
		return err
	}
	var last int64
	if err := s.pool.QueryRow(ctx, pgLastID, cp.Thread).Scan(&last); err != nil {
		return err
	}
	return store.ConflictError(cp.Thread, cp.ID, last)
}

// retryPut puts cp again after its connection was lost; if cp's ID is
// taken by cp itself (the lost Put had committed) it is a success.
func (s *pgStore) retryPut(ctx context.Context, cp *store.Checkpoint) error {
	err := s.put(ctx, cp)
	if !errors.Is(err, store.ErrConflict) {
		return err
	}
	var same bool
	if qerr := s.pool.QueryRow(ctx, pgSame, cp.Thread, cp.ID, cp.CreatedAt.UnixNano(),
		blob(cp.Writes)).Scan(&same); qerr != nil || !same {
		return err
	}
	return nil
}

// uniqueViolation reports whether err is PostgreSQL's unique_violation.
func uniqueViolation(err error) bool {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pgErr.Code == "23505"
}

// lostConn reports whether err is the loss of the connection or of its
// backend (terminated, server restarting), after which a statement is
// worth one more try on another connection of the pool.
func lostConn(err error) bool {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		return strings.HasPrefix(pgErr.Code, "57P") // operator intervention
	}
	_, netErr := errors.AsType[net.Error](err)
	return pgconn.SafeToRetry(err) || netErr ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// pgLoad selects the checkpoints from the newest snapshot at or before $2
// (or the first checkpoint) up to $2, in one statement so they come from
// one snapshot of the database.
const pgLoad = `SELECT ` + pgColumns + `, writes, snapshot FROM checkpoints
WHERE thread = $1 AND id <= $2 AND id >= coalesce((
	SELECT id FROM checkpoints
	WHERE thread = $1 AND id <= $2 AND snapshot IS NOT NULL
	ORDER BY id DESC LIMIT 1), 1)
ORDER BY id`

// pgHistory selects a thread's checkpoints without writes and snapshot.
const pgHistory = `SELECT ` + pgColumns + ` FROM checkpoints WHERE thread = $1 ORDER BY id`

// pgColumns are the columns scanned by scanCheckpoint, in its order.
const pgColumns = `thread, id, parent, step, node, next, status,
	pipeline, config_hash, tenant, created_at, interrupt, meta`

func (s *pgStore) Load(ctx context.Context, thread string, id int64) ([]*store.Checkpoint, error) {
	upto := id
	if id == 0 {
		upto = math.MaxInt64
	}
	out, err := s.query(ctx, pgLoad, true, thread, upto)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 || id > 0 && out[len(out)-1].ID != id {
		return nil, store.NotFoundError(thread, id)
	}
	return out, nil
}

func (s *pgStore) History(ctx context.Context, thread string) ([]*store.Checkpoint, error) {
	out, err := s.query(ctx, pgHistory, false, thread)
	if err == nil && len(out) == 0 {
		err = store.NotFoundError(thread, 0)
	}
	return out, err
}

// query runs a checkpoint select, once more if the connection was lost;
// full when it also selects writes and snapshot.
func (s *pgStore) query(ctx context.Context, sql string, full bool, args ...any) ([]*store.Checkpoint, error) {
	var out []*store.Checkpoint
	err := s.retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.Checkpoint, error) {
			return scanCheckpoint(row, full)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: thread %q: %w", args[0], fault(err))
	}
	return out, nil
}

// retry runs f, and again if it lost its connection; its error wraps the
// store fault it is, if any (fault).
func (s *pgStore) retry(ctx context.Context, f func() error) error {
	err := f()
	if err != nil && s.lost(ctx, err) {
		err = f()
	}
	return fault(err)
}

// lost reports whether err, while ctx goes on, is the loss of a
// connection, worth one more try. A backend ended by a restart, a
// failover or an administrator rarely ends alone, so the pool drops its
// other connections too (those in use when they come back): the try
// after a loss gets a new connection, not another dead one.
func (s *pgStore) lost(ctx context.Context, err error) bool {
	if ctx.Err() != nil || !lostConn(err) {
		return false
	}
	s.pool.Reset()
	return true
}

// scanCheckpoint scans a row of pgColumns, then writes and snapshot when
// full.
func scanCheckpoint(row pgx.Row, full bool) (*store.Checkpoint, error) {
	var cp store.Checkpoint
	var created int64
	dest := []any{&cp.Thread, &cp.ID, &cp.Parent, &cp.Step, &cp.Node, &cp.Next,
		&cp.Status, &cp.Pipeline, &cp.ConfigHash, &cp.Tenant, &created, &cp.Interrupt, &cp.Meta}
	if full {
		dest = append(dest, &cp.Writes, &cp.Snapshot)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	cp.CreatedAt = time.Unix(0, created).UTC()
	return &cp, nil
}

// pgThreads lists threads, newest first; a NULL $1 means no limit.
const pgThreads = `SELECT id, pipeline, status, steps, updated_at FROM threads
ORDER BY updated_at DESC, id LIMIT $1`

func (s *pgStore) Threads(ctx context.Context, limit int) ([]store.Thread, error) {
	return s.listThreads(ctx, pgThreads, pgLimit(limit))
}

// pgThreadsAfter lists threads by ID after $1; a NULL $2 means no limit.
const pgThreadsAfter = `SELECT id, pipeline, status, steps, updated_at FROM threads
WHERE id > $1 ORDER BY id LIMIT $2`

func (s *pgStore) ThreadsAfter(ctx context.Context, after string, limit int) ([]store.Thread, error) {
	return s.listThreads(ctx, pgThreadsAfter, after, pgLimit(limit))
}

// pgLimit is limit, or NULL (no limit) when limit <= 0.
func pgLimit(limit int) *int {
	if limit <= 0 {
		return nil
	}
	return &limit
}

// listThreads runs a query of threads with args.
func (s *pgStore) listThreads(ctx context.Context, query string, args ...any) ([]store.Thread, error) {
	var out []store.Thread
	err := s.retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Thread, error) {
			var t store.Thread
			var updated int64
			err := row.Scan(&t.ID, &t.Pipeline, &t.Status, &t.Steps, &updated)
			t.UpdatedAt = time.Unix(0, updated).UTC()
			return t, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: threads: %w", err)
	}
	return out, nil
}

// pgExists is whether thread $1 has a checkpoint.
const pgExists = `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE thread = $1)`

// Delete runs in one transaction, once more if the connection was lost;
// a retry that finds the thread gone succeeds, as the lost attempt
// committed.
func (s *pgStore) Delete(ctx context.Context, thread string) error {
	del := func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if err := exists(ctx, tx, thread); err != nil {
				return err
			}
			for _, q := range []string{pgDeleteApprovals, pgDeleteCheckpoints, pgEndLeases, pgDeleteThreads} {
				if _, err := tx.Exec(ctx, q, thread); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := del()
	if err != nil && s.lost(ctx, err) {
		if err = del(); errors.Is(err, store.ErrNotFound) {
			return nil
		}
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("store: delete: thread %q: %w", thread, fault(err))
	}
	return err
}

// exists returns store.ErrNotFound for a thread without checkpoints.
func exists(ctx context.Context, tx pgx.Tx, thread string) error {
	var ok bool
	if err := tx.QueryRow(ctx, pgExists, thread).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return store.NotFoundError(thread, 0)
	}
	return nil
}

// pgPrune removes the checkpoints below $2, never the newest.
const pgPrune = `DELETE FROM checkpoints WHERE thread = $1
AND id < least($2, (SELECT max(id) FROM checkpoints WHERE thread = $1))`

// Prune runs in one transaction, once more if the connection was lost
// (then the count is the retry's: 0 if the lost attempt committed).
func (s *pgStore) Prune(ctx context.Context, thread string, keepFrom int64) (int, error) {
	var n int64
	err := s.retry(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if err := exists(ctx, tx, thread); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, pgPrune, thread, keepFrom)
			n = tag.RowsAffected()
			return err
		})
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("store: prune: thread %q: %w", thread, fault(err))
	}
	return int(n), err
}

// Close closes the pool, waiting for connections in use to be released.
func (s *pgStore) Close() error {
	s.pool.Close()
	return nil
}

// blob is b for the driver: NULL when empty.
func blob(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
