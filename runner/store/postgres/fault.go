package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/runner-dev/runner/runner/store"
)

// fault is err wrapping the store fault it is, if any, so callers can
// answer 507 or 503: store.ErrFull for a full disk (disk_full),
// store.ErrUnavailable for a server that cannot be reached or written
// now (a lost or refused connection, a server shutting down or starting,
// out of resources, read-only, failing to write its files). Other errors
// (and nil) are returned as they are.
func fault(err error) error {
	if err == nil {
		return nil
	}
	pgErr, isPg := errors.AsType[*pgconn.PgError](err)
	_, connect := errors.AsType[*pgconn.ConnectError](err)
	switch {
	case isPg && pgErr.Code == "53100": // disk_full
		return fmt.Errorf("%w: %w", store.ErrFull, err)
	case isPg && (pgErr.Code == "25006" || // read_only_sql_transaction
		strings.HasPrefix(pgErr.Code, "08") || // connection exception
		strings.HasPrefix(pgErr.Code, "53") || // insufficient resources
		strings.HasPrefix(pgErr.Code, "58")), // system error (I/O)
		connect, lostConn(err):
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// pgProbe writes the heartbeat row.
const pgProbe = `INSERT INTO heartbeat (id, at) VALUES (1, $1)
ON CONFLICT (id) DO UPDATE SET at = excluded.at`

// Probe writes the store's heartbeat row: nil when the database can be
// written now, else an error naming the database and what to check.
func (s *pgStore) Probe(ctx context.Context) error {
	err := s.retry(ctx, func() error {
		_, err := s.pool.Exec(ctx, pgProbe, time.Now().UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("store: postgres %s: the database cannot be written (%w); check that the server is up and "+
			"not read-only (a standby, default_transaction_read_only) and that the user may write the schema's tables", s.where, fault(err))
	}
	return nil
}
