package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/runner-dev/runner/runner/store"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// sqliteMigrations are the schema changes, sqliteMigrations[i] taking the
// schema from version i to i+1; the database's user_version pragma holds
// its version. A change to the schema is a new entry here, never an edit
// of an old one.
//
// Version 1: checkpoints holds one row per Put with the JSON blobs last,
// so reading the other columns never walks a large Snapshot;
// checkpoints_snapshots finds the newest snapshot at or before an id;
// threads, kept by a trigger in the Put's own statement, answers Threads
// without scanning checkpoints.
//
// Version 2: the API server's thread records, runs and run events
// (runs.go). Version 3: leases holds each leased thread's owner, token
// and expiry.
//
// Version 4: checkpoints becomes a rowid table, the blobs out of the key
// B-tree: a Put appends to the table's last page and adds a short entry
// to checkpoints_key, instead of inserting a whole row (splitting pages,
// overflowing large blobs) in the middle of a tree ordered by thread.
//
// Version 5: the threads row is written when a thread's status changes
// (or its pipeline), no longer at every step of a run: a running
// thread's steps and time are read from its newest checkpoint
// (sqliteSummaries), and a step's Put writes the checkpoint and its key,
// not the thread's row and its place in threads_updated as well.
//
// Version 6: checkpoints are keyed by (tkey, id), tkey a number
// thread_keys gives each thread at its first checkpoint, in order,
// instead of by the thread's id: the key entries of the threads running
// at once sit side by side on a few pages, where random thread ids put
// each on a page of its own, written again at every step (a third of the
// pages a group commit wrote).
//
// Version 7: threads_running, the index of the running threads, is keyed
// by the time a thread started running, not by its id: the entries a run
// adds and removes share the newest pages with those of the runs beside
// it, where by id each was a page of its own, written twice a run.
//
// Version 8: runs.last_seq is the number of a run's newest event, so an
// append reads where to number from in runs, not run_events (see
// sqliteAppend).
//
// Version 9: leases and threads are keyed by the thread's key, which a
// thread now gets at its first lease: the rows of the runs going on at
// once sit side by side on the newest pages, where by thread id a run
// wrote a page of its own at its lease's acquire and release and at its
// thread's start and end; and a Put finds the lease's token and the
// thread's row by a number. The thread ids of threads are an index of
// their own, written once, when a thread first starts. A deleted thread
// keeps its key while it has a lease row, so its token goes on counting
// if it starts again (an old run stays fenced out).
//
// Version 10: a run's events are appended a batch a row
// (run_event_batches, runs.go), in the order they are written, each
// event's name and data stored as what differs from the event before: a
// run's end wrote its eighteen events as eighteen rows keyed by run,
// among those of the runs still going on. run_events keeps the events
// appended before; they are read and deleted with the rest.
//
// Version 11: heartbeat holds the row a write probe (Probe) writes: the
// store answers ready only when it can be written.
//
// Version 12: the assistants clients create and their versions
// (assistants.go).
//
// Version 13: child threads' parents, and named tenants' id spaces
// (owners.go).
//
// Version 14: the approvals gates wait for (approvals.go).
//
// Version 15: the long-term memory store's items (items.go).
//
// Version 16: the crons, scheduled runs (crons.go).
//
// Version 17: the audit ledger (audit.go).
//
// Version 18: the outbox of webhook deliveries (webhooks.go).
//
// Version 19: when an approval escalates (approvals.go).
var sqliteMigrations = []string{`
CREATE TABLE checkpoints (
	thread      TEXT    NOT NULL,
	id          INTEGER NOT NULL,
	parent      INTEGER NOT NULL,
	step        INTEGER NOT NULL,
	node        TEXT    NOT NULL,
	next        TEXT    NOT NULL,
	status      TEXT    NOT NULL,
	pipeline    TEXT    NOT NULL,
	config_hash TEXT    NOT NULL,
	tenant      TEXT    NOT NULL,
	created_at  INTEGER NOT NULL, -- Unix nanoseconds
	interrupt   BLOB,
	meta        BLOB,
	writes      BLOB,
	snapshot    BLOB,
	PRIMARY KEY (thread, id)
) WITHOUT ROWID;
CREATE INDEX checkpoints_snapshots ON checkpoints (thread, id) WHERE snapshot IS NOT NULL;
CREATE TABLE threads (
	id         TEXT    NOT NULL PRIMARY KEY,
	pipeline   TEXT    NOT NULL,
	status     TEXT    NOT NULL,
	steps      INTEGER NOT NULL,
	last_id    INTEGER NOT NULL,
	updated_at INTEGER NOT NULL -- Unix nanoseconds
) WITHOUT ROWID;
CREATE INDEX threads_updated ON threads (updated_at DESC, id);
CREATE TRIGGER checkpoints_thread AFTER INSERT ON checkpoints BEGIN
	INSERT INTO threads (id, pipeline, status, steps, last_id, updated_at)
	VALUES (NEW.thread, NEW.pipeline, NEW.status, NEW.step, NEW.id, NEW.created_at)
	ON CONFLICT (id) DO UPDATE SET pipeline = excluded.pipeline,
		status = excluded.status, steps = excluded.steps,
		last_id = excluded.last_id, updated_at = excluded.updated_at;
END;
`, sqliteRunsSchema, `
CREATE TABLE leases (
	thread     TEXT    NOT NULL PRIMARY KEY,
	owner      TEXT    NOT NULL,
	token      INTEGER NOT NULL,
	expires_at INTEGER NOT NULL -- Unix nanoseconds
) WITHOUT ROWID;
`, `
CREATE TABLE checkpoints_v4 (
	seq         INTEGER PRIMARY KEY,
	thread      TEXT    NOT NULL,
	id          INTEGER NOT NULL,
	parent      INTEGER NOT NULL,
	step        INTEGER NOT NULL,
	node        TEXT    NOT NULL,
	next        TEXT    NOT NULL,
	status      TEXT    NOT NULL,
	pipeline    TEXT    NOT NULL,
	config_hash TEXT    NOT NULL,
	tenant      TEXT    NOT NULL,
	created_at  INTEGER NOT NULL, -- Unix nanoseconds
	interrupt   BLOB,
	meta        BLOB,
	writes      BLOB,
	snapshot    BLOB
);
INSERT INTO checkpoints_v4 (thread, id, parent, step, node, next, status, pipeline,
	config_hash, tenant, created_at, interrupt, meta, writes, snapshot)
SELECT thread, id, parent, step, node, next, status, pipeline,
	config_hash, tenant, created_at, interrupt, meta, writes, snapshot
FROM checkpoints ORDER BY thread, id;
DROP TRIGGER checkpoints_thread;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_v4 RENAME TO checkpoints;
CREATE UNIQUE INDEX checkpoints_key ON checkpoints (thread, id);
CREATE INDEX checkpoints_snapshots ON checkpoints (thread, id) WHERE snapshot IS NOT NULL;
CREATE TRIGGER checkpoints_thread AFTER INSERT ON checkpoints BEGIN
	INSERT INTO threads (id, pipeline, status, steps, last_id, updated_at)
	VALUES (NEW.thread, NEW.pipeline, NEW.status, NEW.step, NEW.id, NEW.created_at)
	ON CONFLICT (id) DO UPDATE SET pipeline = excluded.pipeline,
		status = excluded.status, steps = excluded.steps,
		last_id = excluded.last_id, updated_at = excluded.updated_at;
END;
`, `
DROP TRIGGER checkpoints_thread;
CREATE TRIGGER checkpoints_thread AFTER INSERT ON checkpoints
WHEN NEW.status != 'running' OR NOT EXISTS (SELECT 1 FROM threads
	WHERE id = NEW.thread AND status = 'running' AND pipeline = NEW.pipeline)
BEGIN
	INSERT INTO threads (id, pipeline, status, steps, last_id, updated_at)
	VALUES (NEW.thread, NEW.pipeline, NEW.status, NEW.step, NEW.id, NEW.created_at)
	ON CONFLICT (id) DO UPDATE SET pipeline = excluded.pipeline,
		status = excluded.status, steps = excluded.steps,
		last_id = excluded.last_id, updated_at = excluded.updated_at;
END;
CREATE INDEX threads_running ON threads (id) WHERE status = 'running';
`, `
CREATE TABLE thread_keys (
	key INTEGER PRIMARY KEY,
	id  TEXT NOT NULL UNIQUE
);
INSERT INTO thread_keys (id) SELECT thread FROM checkpoints GROUP BY thread ORDER BY min(seq);
ALTER TABLE checkpoints ADD COLUMN tkey INTEGER NOT NULL DEFAULT 0;
UPDATE checkpoints SET tkey = (SELECT key FROM thread_keys WHERE id = checkpoints.thread);
DROP INDEX checkpoints_key;
DROP INDEX checkpoints_snapshots;
CREATE UNIQUE INDEX checkpoints_key ON checkpoints (tkey, id);
CREATE INDEX checkpoints_snapshots ON checkpoints (tkey, id) WHERE snapshot IS NOT NULL;
`, `
DROP INDEX threads_running;
CREATE INDEX threads_running ON threads (updated_at) WHERE status = 'running';
`, `
ALTER TABLE runs ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET last_seq = coalesce((SELECT max(seq) FROM run_events WHERE run = runs.id), 0);
`, `
INSERT INTO thread_keys (id) SELECT thread FROM leases WHERE thread NOT IN (SELECT id FROM thread_keys) ORDER BY thread;
INSERT INTO thread_keys (id) SELECT id FROM threads WHERE id NOT IN (SELECT id FROM thread_keys) ORDER BY updated_at;
CREATE TABLE leases_v9 (
	tkey       INTEGER PRIMARY KEY, -- thread_keys.key
	owner      TEXT    NOT NULL,
	token      INTEGER NOT NULL,
	expires_at INTEGER NOT NULL -- Unix nanoseconds
);
INSERT INTO leases_v9 SELECT k.key, l.owner, l.token, l.expires_at FROM leases l JOIN thread_keys k ON k.id = l.thread;
DROP TABLE leases;
ALTER TABLE leases_v9 RENAME TO leases;
CREATE TABLE threads_v9 (
	tkey       INTEGER PRIMARY KEY, -- thread_keys.key
	id         TEXT    NOT NULL UNIQUE,
	pipeline   TEXT    NOT NULL,
	status     TEXT    NOT NULL,
	steps      INTEGER NOT NULL,
	last_id    INTEGER NOT NULL,
	updated_at INTEGER NOT NULL -- Unix nanoseconds
);
INSERT INTO threads_v9 SELECT k.key, t.id, t.pipeline, t.status, t.steps, t.last_id, t.updated_at
FROM threads t JOIN thread_keys k ON k.id = t.id;
DROP TRIGGER checkpoints_thread;
DROP TABLE threads;
ALTER TABLE threads_v9 RENAME TO threads;
CREATE INDEX threads_updated ON threads (updated_at DESC, id);
CREATE INDEX threads_running ON threads (updated_at) WHERE status = 'running';
CREATE TRIGGER checkpoints_thread AFTER INSERT ON checkpoints
WHEN NEW.status != 'running' OR NOT EXISTS (SELECT 1 FROM threads
	WHERE tkey = NEW.tkey AND status = 'running' AND pipeline = NEW.pipeline)
BEGIN
	INSERT INTO threads (tkey, id, pipeline, status, steps, last_id, updated_at)
	VALUES (NEW.tkey, NEW.thread, NEW.pipeline, NEW.status, NEW.step, NEW.id, NEW.created_at)
	ON CONFLICT (tkey) DO UPDATE SET pipeline = excluded.pipeline,
		status = excluded.status, steps = excluded.steps,
		last_id = excluded.last_id, updated_at = excluded.updated_at;
END;
`, sqliteEventBatchesSchema, `
CREATE TABLE heartbeat (
	id INTEGER PRIMARY KEY,
	at INTEGER NOT NULL -- Unix nanoseconds
);
`, sqliteAssistantsSchema, sqliteOwnersSchema, sqliteApprovalsSchema, sqliteItemsSchema, sqliteCronsSchema, sqliteAuditSchema, sqliteWebhooksSchema, sqliteEscalationSchema}

// sqlitePut inserts a checkpoint only if its ID (?2) is the thread's next
// and its lease token (?16) is 0 or the thread's: the checks, the insert
// and (by trigger) the threads row are one statement. The checks give the
// thread's key, NULL when one fails, and OR IGNORE skips a row without
// one (tkey is NOT NULL): a statement of one row of VALUES, not INSERT …
// SELECT, which SQLite runs through a temporary table first (as it does
// for every INSERT … SELECT into a table with a trigger), copying the
// checkpoint's blobs twice. The thread must have its key (sqliteAddKey,
// run first for a thread's first checkpoint, or at its first lease).
const sqlitePut = `
INSERT OR IGNORE INTO checkpoints (tkey, thread, id, parent, step, node, next, status, pipeline,
	config_hash, tenant, created_at, interrupt, meta, writes, snapshot)
VALUES ((SELECT k.key FROM thread_keys k WHERE k.id = ?1
	AND ?2 = 1 + coalesce((SELECT max(id) FROM checkpoints WHERE tkey = k.key), 0)
	AND (?16 = 0 OR ?16 = (SELECT token FROM leases WHERE tkey = k.key))),
	?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)`

// sqliteAddKey gives thread ?1 its key, if it has none.
const sqliteAddKey = `INSERT OR ROLLBACK INTO thread_keys (id) VALUES (?1) ON CONFLICT (id) DO NOTHING`

// sqliteKey is the key of thread ?1 (NULL for none), as a subquery.
const sqliteKey = `(SELECT key FROM thread_keys WHERE id = ?1)`

// sqliteLastID is the thread's newest checkpoint ID, 0 for none.
const sqliteLastID = `SELECT coalesce(max(id), 0) FROM checkpoints WHERE tkey = ` + sqliteKey

// sqliteLoad selects the checkpoints from the newest snapshot at or before
// ?2 (or the first checkpoint) up to ?2, in one statement so one read
// transaction sees them all.
const sqliteLoad = `SELECT ` + sqliteColumns + `, writes, snapshot FROM checkpoints
WHERE tkey = ` + sqliteKey + ` AND id <= ?2 AND id >= coalesce((
	SELECT id FROM checkpoints INDEXED BY checkpoints_snapshots
	WHERE tkey = ` + sqliteKey + ` AND id <= ?2 AND snapshot IS NOT NULL
	ORDER BY id DESC LIMIT 1), 1)
ORDER BY id`

// sqliteHistory selects a thread's checkpoints without writes and snapshot.
const sqliteHistory = `SELECT ` + sqliteColumns + ` FROM checkpoints WHERE tkey = ` + sqliteKey + ` ORDER BY id`

// sqliteColumns are the columns scanned by scanCheckpoint, in its order.
const sqliteColumns = `thread, id, parent, step, node, next, status,
	pipeline, config_hash, tenant, created_at, interrupt, meta`

// sqliteSummaries selects threads as store.Thread: a running thread's
// steps and time from its newest checkpoint, the others' from their row
// (written at their last change of status).
const sqliteSummaries = `SELECT t.id, t.pipeline, t.status,
	coalesce(c.step, t.steps) AS steps, coalesce(c.created_at, t.updated_at) AS updated_at
FROM threads t LEFT JOIN checkpoints c ON t.status = 'running' AND c.tkey = t.tkey
	AND c.id = (SELECT max(id) FROM checkpoints WHERE tkey = t.tkey)`

// sqliteThreads lists threads, newest first; ?1 < 0 means no limit: the
// first of those at rest, by threads_updated, merged with the running.
const sqliteThreads = `SELECT * FROM (
	SELECT * FROM (` + sqliteSummaries + ` WHERE t.status != 'running' ORDER BY t.updated_at DESC, t.id LIMIT ?1)
	UNION ALL
	SELECT * FROM (` + sqliteSummaries + ` WHERE t.status = 'running'))
ORDER BY updated_at DESC, id LIMIT ?1`

// sqliteThreadsAfter lists threads by ID after ?1; ?2 < 0 means no limit.
const sqliteThreadsAfter = sqliteSummaries + ` WHERE t.id > ?1 ORDER BY t.id LIMIT ?2`

// sqliteStore is the SQLite store.Store. Writes go through w, a pool of one
// connection, so they are serialized in the process without a lock of
// ours; Puts, lease writes, event appends and the writes of thread records
// and runs are committed in groups (batch.go). Reads use r, whose connections
// read concurrently under WAL.
type sqliteStore struct {
	path                  string
	w, r                  *sql.DB
	lastID, load, history *sql.Stmt
	threads, threadsAfter *sql.Stmt
	// the reads of a thread record, a run and a run's events
	threadRecord, run, events *sql.Stmt
	item                      *sql.Stmt // the read of an item
	wr                        writer    // the group commit's (batch.go)
	group                     store.Group[*putReq]
	ckpt                      *checkpointer
}

// openSQLite opens (creating if needed) the SQLite store at path.
func openSQLite(path string, opt options) (*sqliteStore, error) {
	if strings.HasPrefix(path, "file:") {
		path = "./" + path // a plain path, not a URI, for the driver
	}
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", opt.busyTimeout.Milliseconds())
	s := &sqliteStore{path: path}
	s.group = store.Group[*putReq]{Commit: s.commitBatch, Max: maxBatch}
	var err error
	s.w, err = sqlOpen(path+"?"+busy+"&_pragma=journal_mode(WAL)&_pragma=synchronous("+
		opt.sync+")&_pragma=wal_autocheckpoint("+autocheckpoint(opt)+")&_txlock=immediate", 1)
	if err != nil {
		return nil, explain(path, err)
	}
	if err := s.init(path, busy, opt); err != nil {
		s.Close()
		return nil, explain(path, err)
	}
	return s, nil
}

// sqlOpen opens a pool of at most conns connections to the driver DSN.
func sqlOpen(dsn string, conns int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, nil
}

// init migrates the schema, opens the read pool and prepares statements.
func (s *sqliteStore) init(path, busy string, opt options) error {
	if err := sqliteMigrate(s.w); err != nil {
		return err
	}
	var err error
	s.r, err = sqlOpen(path+"?"+busy+"&_pragma=query_only(1)", max(4, runtime.GOMAXPROCS(0)))
	if err != nil {
		return err
	}
	if background(opt) {
		if s.ckpt, err = startCheckpointer(path, busy); err != nil {
			return err
		}
	}
	prepare := func(db *sql.DB, query string) *sql.Stmt {
		stmt, perr := db.Prepare(query)
		err = errors.Join(err, perr)
		return stmt
	}
	s.lastID, s.load, s.history = prepare(s.r, sqliteLastID), prepare(s.r, sqliteLoad), prepare(s.r, sqliteHistory)
	s.threads, s.threadsAfter = prepare(s.r, sqliteThreads), prepare(s.r, sqliteThreadsAfter)
	s.threadRecord, s.run, s.events = prepare(s.r, sqliteThreadRecord), prepare(s.r, sqliteRun), prepare(s.r, sqliteEvents)
	s.item = prepare(s.r, sqliteItem)
	return err
}

// sqliteMigrate brings the schema of db to the newest version in one
// transaction; it refuses a schema newer than this build's.
func sqliteMigrate(db *sql.DB) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		return err
	}
	switch {
	case version == len(sqliteMigrations):
		return nil
	case version > len(sqliteMigrations):
		return fmt.Errorf("schema version %d is newer than this build's %d; use a newer runner", version, len(sqliteMigrations))
	}
	for v := version; v < len(sqliteMigrations); v++ {
		if _, err := tx.Exec(sqliteMigrations[v]); err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
		}
	}
	if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, len(sqliteMigrations))); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqliteStore) Put(ctx context.Context, cp *store.Checkpoint) error {
	if err := store.CheckPut(cp); err != nil {
		return err
	}
	req := &putReq{query: sqlitePut, args: []any{cp.Thread, cp.ID, cp.Parent, cp.Step, cp.Node,
		cp.Next, cp.Status, cp.Pipeline, cp.ConfigHash, cp.Tenant, cp.CreatedAt.UnixNano(),
		blob(cp.Interrupt), blob(cp.Meta), blob(cp.Writes), blob(cp.Snapshot), cp.Lease}}
	switch {
	case cp.ID == 1 && cp.ChildOf != "":
		req.before = &putReq{query: sqliteAddChild, args: []any{cp.Thread, cp.ChildOf}}
	case cp.ID == 1 && cp.Lease == 0: // a leased thread got its key with its lease
		req.before = &putReq{query: sqliteAddKey, args: []any{cp.Thread}}
	}
	if cp.Release {
		req.after = &putReq{query: sqliteRenew, args: []any{cp.Thread, cp.Lease, 0}}
	}
	if len(cp.Approvals) > 0 {
		req.then(approvalWrites(cp))
	}
	if len(cp.Audit) > 0 {
		req.then(auditWrites(cp.Audit))
	}
	if len(cp.Deliveries) > 0 {
		req.then(deliveryWrites(cp.Deliveries))
	}
	n, err := s.commitPut(ctx, req)
	if err != nil {
		return fmt.Errorf("store: put: thread %q checkpoint %d: %w", cp.Thread, cp.ID, fault(err))
	}
	if n == 1 {
		return nil
	}
	if err := s.fenced(ctx, cp); err != nil {
		return err
	}
	var last int64
	if err := s.lastID.QueryRowContext(ctx, cp.Thread).Scan(&last); err != nil {
		return fmt.Errorf("store: put: thread %q checkpoint %d: %w", cp.Thread, cp.ID, fault(err))
	}
	return store.ConflictError(cp.Thread, cp.ID, last)
}

func (s *sqliteStore) Load(ctx context.Context, thread string, id int64) ([]*store.Checkpoint, error) {
	upto := id
	if id == 0 {
		upto = math.MaxInt64
	}
	out, err := s.query(ctx, s.load, true, thread, upto)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 || id > 0 && out[len(out)-1].ID != id {
		return nil, store.NotFoundError(thread, id)
	}
	return out, nil
}

func (s *sqliteStore) History(ctx context.Context, thread string) ([]*store.Checkpoint, error) {
	out, err := s.query(ctx, s.history, false, thread)
	if err == nil && len(out) == 0 {
		err = store.NotFoundError(thread, 0)
	}
	return out, err
}

// query runs a checkpoint select; full when it also selects writes and
// snapshot.
func (s *sqliteStore) query(ctx context.Context, stmt *sql.Stmt, full bool, args ...any) ([]*store.Checkpoint, error) {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("store: thread %q: %w", args[0], fault(err))
	}
	defer rows.Close()
	var out []*store.Checkpoint
	for rows.Next() {
		cp, err := scanCheckpoint(rows, full)
		if err != nil {
			return nil, fmt.Errorf("store: thread %q: %w", args[0], fault(err))
		}
		out = append(out, cp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: thread %q: %w", args[0], fault(err))
	}
	return out, nil
}

// scanCheckpoint scans a row of sqliteColumns, then writes and snapshot
// when full.
func scanCheckpoint(rows *sql.Rows, full bool) (*store.Checkpoint, error) {
	var cp store.Checkpoint
	var created int64
	var interrupt, meta, writes, snapshot []byte
	dest := []any{&cp.Thread, &cp.ID, &cp.Parent, &cp.Step, &cp.Node, &cp.Next,
		&cp.Status, &cp.Pipeline, &cp.ConfigHash, &cp.Tenant, &created, &interrupt, &meta}
	if full {
		dest = append(dest, &writes, &snapshot)
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, err
	}
	cp.CreatedAt = time.Unix(0, created).UTC()
	cp.Interrupt, cp.Meta, cp.Writes, cp.Snapshot = interrupt, meta, writes, snapshot
	return &cp, nil
}

func (s *sqliteStore) Threads(ctx context.Context, limit int) ([]store.Thread, error) {
	return s.listThreads(ctx, s.threads, noLimit(limit))
}

func (s *sqliteStore) ThreadsAfter(ctx context.Context, after string, limit int) ([]store.Thread, error) {
	return s.listThreads(ctx, s.threadsAfter, after, noLimit(limit))
}

// noLimit is limit, or -1 (SQLite's no limit) when limit <= 0.
func noLimit(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}

// listThreads runs a query of threads with args.
func (s *sqliteStore) listThreads(ctx context.Context, stmt *sql.Stmt, args ...any) ([]store.Thread, error) {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("store: threads: %w", err)
	}
	defer rows.Close()
	var out []store.Thread
	for rows.Next() {
		var t store.Thread
		var updated int64
		if err := rows.Scan(&t.ID, &t.Pipeline, &t.Status, &t.Steps, &updated); err != nil {
			return nil, fmt.Errorf("store: threads: %w", err)
		}
		t.UpdatedAt = time.Unix(0, updated).UTC()
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: threads: %w", err)
	}
	return out, nil
}

func (s *sqliteStore) Delete(ctx context.Context, thread string) error {
	if _, err := s.History(ctx, thread); err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, sqliteDelete, thread); err != nil {
		return fmt.Errorf("store: delete: thread %q: %w", thread, fault(err))
	}
	return nil
}

// sqlitePrune removes the checkpoints below ?2, never the newest.
const sqlitePrune = `DELETE FROM checkpoints WHERE tkey = ` + sqliteKey + `
AND id < min(?2, (SELECT max(id) FROM checkpoints WHERE tkey = ` + sqliteKey + `))`

func (s *sqliteStore) Prune(ctx context.Context, thread string, keepFrom int64) (int, error) {
	if _, err := s.History(ctx, thread); err != nil {
		return 0, err
	}
	res, err := s.w.ExecContext(ctx, sqlitePrune, thread, keepFrom)
	if err != nil {
		return 0, fmt.Errorf("store: prune: thread %q: %w", thread, fault(err))
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Close closes the statements and both pools.
func (s *sqliteStore) Close() error {
	var err error
	if s.w != nil {
		err = s.onWriter(func(w *writer) error { w.close(); return nil })
	}
	for _, stmt := range []*sql.Stmt{s.lastID, s.load, s.history, s.threads, s.threadsAfter, s.threadRecord, s.run, s.events, s.item} {
		if stmt != nil {
			err = errors.Join(err, stmt.Close())
		}
	}
	if s.ckpt != nil {
		err = errors.Join(err, s.ckpt.close())
	}
	for _, db := range []*sql.DB{s.r, s.w} {
		if db != nil {
			err = errors.Join(err, db.Close())
		}
	}
	return err
}

// blob is b for the driver: NULL when empty.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
