package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runner-dev/runner/runner/store"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteFault is what a driver error says of the database: which store
// fault it is, whether the connection that returned it is to be replaced,
// and what to check.
type sqliteFault struct {
	kind    error
	replace bool
	check   string
}

// unwritableCheck is what to check of a database that cannot be written.
const unwritableCheck = "make the file, its -wal and -shm files and its directory writable by this process's user, " +
	"and check that the disk is neither full nor mounted read-only"

// faults are the SQLite result codes (primary) that are store faults. A
// connection whose write failed with one that may last is replaced: one
// the pool opened while the file could not be written is read-only for
// good (SQLite falls back to read-only when it cannot open a file for
// writing), and one whose write failed may hold a transaction it could
// not end.
var faults = map[int]sqliteFault{
	sqlite3.SQLITE_FULL:     {store.ErrFull, true, "the disk is full: make room on it"},
	sqlite3.SQLITE_READONLY: {store.ErrUnavailable, true, unwritableCheck},
	sqlite3.SQLITE_IOERR:    {store.ErrUnavailable, true, unwritableCheck},
	sqlite3.SQLITE_CANTOPEN: {store.ErrUnavailable, true, unwritableCheck},
	sqlite3.SQLITE_PERM:     {store.ErrUnavailable, true, unwritableCheck},
	sqlite3.SQLITE_BUSY:     {store.ErrUnavailable, false, "another process holds the database locked longer than busy_timeout"},
	sqlite3.SQLITE_LOCKED:   {store.ErrUnavailable, false, "another process holds the database locked longer than busy_timeout"},
}

// classify is the fault a driver error is, if it is one.
func classify(err error) (sqliteFault, bool) {
	e, ok := errors.AsType[*sqlite.Error](err)
	if !ok {
		return sqliteFault{}, false
	}
	f, ok := faults[e.Code()&0xff]
	return f, ok
}

// fault is err wrapping the store fault it is, if any (store.ErrFull for
// a full disk, store.ErrUnavailable for a file that cannot be read or
// written or is locked), so callers can answer 507 or 503; other errors
// (and nil) are returned as they are.
func fault(err error) error {
	if f, ok := classify(err); ok {
		return fmt.Errorf("%w: %w", f.kind, err)
	}
	return err
}

// explain is err of the database at path, saying what to check when it
// is a fault.
func explain(path string, err error) error {
	if f, ok := classify(err); ok {
		return fmt.Errorf("store: sqlite %s: %w; %s", path, fault(err), f.check)
	}
	return fmt.Errorf("store: sqlite %s: %w", path, err)
}

// sqliteProbe writes the heartbeat row.
const sqliteProbe = `INSERT OR ROLLBACK INTO heartbeat (id, at) VALUES (1, ?1)
ON CONFLICT (id) DO UPDATE SET at = excluded.at`

// Probe writes the store's heartbeat row through the writer, as every
// write goes: nil when the database can be written now, else an error
// naming the file and what to check.
func (s *sqliteStore) Probe(ctx context.Context) error {
	if _, err := s.commitPut(ctx, &putReq{query: sqliteProbe, args: []any{time.Now().UnixNano()}}); err != nil {
		return explain(s.path, err)
	}
	return nil
}
