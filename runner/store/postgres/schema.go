package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrations are the schema changes, migrations[i] taking the schema from
// version i to i+1; the schema's version is the row of schema_version. A
// change to the schema is a new entry here, never an edit of an old one.
//
// Version 1: checkpoints holds one row per Put with the blobs last, so
// reading the other columns never walks a large snapshot;
// checkpoints_snapshots finds the newest snapshot at or before an id;
// threads, kept by the Put's own statement, answers Threads without
// scanning checkpoints. Times are Unix nanoseconds (timestamptz keeps only
// microseconds).
//
// Version 2: leases holds each leased thread's owner, token and expiry.
//
// Version 3: the API server's thread records, runs and each run's event
// log (runs.go); runs.last_seq numbers a run's events, its row lock
// serializing concurrent appends.
//
// Version 4: heartbeat holds the row a write probe (Probe) writes: a
// server answers ready only when its store can be written.
//
// Version 5: the assistants clients create and their versions
// (assistants.go).
//
// Version 6: child threads' parents, and named tenants' id spaces
// (owners.go).
//
// Version 7: the approvals gates wait for (approvals.go).
//
// Version 8: the long-term memory store's items (items.go).
//
// Version 9: the crons, scheduled runs (crons.go).
//
// Version 10: the audit ledger (audit.go).
//
// Version 11: the outbox of webhook deliveries (webhooks.go).
//
// Version 12: when an approval escalates (approvals.go).
var migrations = []string{`
CREATE TABLE checkpoints (
	thread      text    NOT NULL,
	id          bigint  NOT NULL,
	parent      bigint  NOT NULL,
	step        integer NOT NULL,
	node        text    NOT NULL,
	next        text    NOT NULL,
	status      text    NOT NULL,
	pipeline    text    NOT NULL,
	config_hash text    NOT NULL,
	tenant      text    NOT NULL,
	created_at  bigint  NOT NULL,
	interrupt   bytea,
	meta        bytea,
	writes      bytea,
	snapshot    bytea,
	PRIMARY KEY (thread, id)
);
CREATE INDEX checkpoints_snapshots ON checkpoints (thread, id) WHERE snapshot IS NOT NULL;
CREATE TABLE threads (
	id         text    NOT NULL PRIMARY KEY,
	pipeline   text    NOT NULL,
	status     text    NOT NULL,
	steps      integer NOT NULL,
	last_id    bigint  NOT NULL,
	updated_at bigint  NOT NULL
);
CREATE INDEX threads_updated ON threads (updated_at DESC, id);
`, `
CREATE TABLE leases (
	thread     text   NOT NULL PRIMARY KEY,
	owner      text   NOT NULL,
	token      bigint NOT NULL,
	expires_at bigint NOT NULL
);
`, pgRunsSchema, `
CREATE TABLE heartbeat (
	id integer NOT NULL PRIMARY KEY,
	at bigint  NOT NULL
);
`, pgAssistantsSchema, pgOwnersSchema, pgApprovalsSchema, pgItemsSchema, pgCronsSchema, pgAuditSchema, pgWebhooksSchema, pgEscalationSchema}

// migrateLock is the key of the advisory lock that serializes migrations
// of processes opening one database at once.
const migrateLock = 0x72756e6e6572 // "runner"

// migrate brings the schema in the connection's search_path to the newest
// version in one transaction; it refuses a schema newer than this build's.
func migrate(ctx context.Context, db pgx.Tx) error {
	if _, err := db.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return err
	}
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)`); err != nil {
		return err
	}
	var version int
	err := db.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&version)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if _, err := db.Exec(ctx, `INSERT INTO schema_version VALUES (0)`); err != nil {
			return err
		}
	case err != nil:
		return err
	case version > len(migrations):
		return fmt.Errorf("schema version %d is newer than this build's %d; use a newer runner", version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		if _, err := db.Exec(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
		}
	}
	_, err = db.Exec(ctx, `UPDATE schema_version SET version = $1`, len(migrations))
	return err
}
