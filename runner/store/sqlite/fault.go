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

// classify says which store fault a driver error is (nil: none) and
// whether the connection that returned it is to be replaced: one the
// pool opened while the file could not be written is read-only for good
// (SQLite falls back to read-only when it cannot open a file for
// writing), and one whose write failed may hold a transaction it could
// not end.
func classify(err error) (kind error, replace bool) {
	e, ok := errors.AsType[*sqlite.Error](err)
	if !ok {
		return nil, false
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return store.ErrFull, true
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return store.ErrUnavailable, true
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED: // another process holds the file past busy_timeout
		return store.ErrUnavailable, false
	}
	return nil, false
}

// fault is err wrapping the store fault it is, if any (store.ErrFull for
// a full disk, store.ErrUnavailable for a file that cannot be read or
// written or is locked), so callers can answer 507 or 503; other errors
// (and nil) are returned as they are.
func fault(err error) error {
	if kind, _ := classify(err); kind != nil {
		return fmt.Errorf("%w: %w", kind, err)
	}
	return err
}

// sqliteProbe writes the heartbeat row.
const sqliteProbe = `INSERT OR ROLLBACK INTO heartbeat (id, at) VALUES (1, ?1)
ON CONFLICT (id) DO UPDATE SET at = excluded.at`

// Probe writes the store's heartbeat row through the writer, as every
// write goes: nil when the database can be written now.
func (s *sqliteStore) Probe(ctx context.Context) error {
	if _, err := s.commitPut(ctx, &putReq{query: sqliteProbe, args: []any{time.Now().UnixNano()}}); err != nil {
		return fmt.Errorf("store: probe: %w", fault(err))
	}
	return nil
}
