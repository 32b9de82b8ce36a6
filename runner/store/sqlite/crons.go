package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// sqliteCronsSchema creates version 16's crons: the scheduled runs
// (store.CronStore); crons_due finds the ticks due.
const sqliteCronsSchema = `
CREATE TABLE crons (
	tenant           TEXT    NOT NULL,
	id               TEXT    NOT NULL,
	assistant        TEXT    NOT NULL,
	thread           TEXT    NOT NULL,
	schedule         TEXT    NOT NULL,
	timezone         TEXT    NOT NULL,
	payload          BLOB,
	metadata         BLOB,
	on_run_completed TEXT    NOT NULL,
	enabled          INTEGER NOT NULL,
	user_id          TEXT    NOT NULL,
	end_time         INTEGER NOT NULL, -- Unix nanoseconds, 0: none
	next_run         INTEGER NOT NULL,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL,
	PRIMARY KEY (tenant, id)
) WITHOUT ROWID;
CREATE INDEX crons_due ON crons (next_run) WHERE enabled = 1 AND next_run > 0;
`

// sqliteCrons are the cron store's statements.
var sqliteCrons = store.NewCronSQL(func(n int) string { return fmt.Sprintf("?%d", n) })

func (s *sqliteStore) PutCron(ctx context.Context, c *store.Cron) error {
	if err := store.CheckCron(c, time.Now()); err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, sqliteCrons.Put, store.CronArgs(c)...); err != nil {
		return fmt.Errorf("store: put cron %q: %w", c.ID, fault(err))
	}
	return nil
}

func (s *sqliteStore) Cron(ctx context.Context, tenant, id string) (*store.Cron, error) {
	list, err := s.crons(ctx, sqliteCrons.Get, tenant, id)
	if err == nil && len(list) == 0 {
		err = store.CronNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	return &list[0], nil
}

func (s *sqliteStore) Crons(ctx context.Context, tenant string) ([]store.Cron, error) {
	return s.crons(ctx, sqliteCrons.List, tenant)
}

func (s *sqliteStore) DueCrons(ctx context.Context, now time.Time) ([]store.Cron, error) {
	return s.crons(ctx, sqliteCrons.Due, now.UnixNano())
}

// crons reads the cron rows of query.
func (s *sqliteStore) crons(ctx context.Context, query string, args ...any) ([]store.Cron, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: crons: %w", fault(err))
	}
	defer rows.Close()
	var out []store.Cron
	for rows.Next() {
		c, err := store.ScanCron(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("store: crons: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func (s *sqliteStore) DeleteCron(ctx context.Context, tenant, id string) error {
	res, err := s.w.ExecContext(ctx, sqliteCrons.Delete, tenant, id)
	return oneRow(res, err, "cron "+id)
}

func (s *sqliteStore) ClaimTick(ctx context.Context, tenant, id string, tick, next time.Time) (bool, error) {
	res, err := s.w.ExecContext(ctx, sqliteCrons.Claim, tenant, id, store.Nanos(tick), store.Nanos(next))
	return claimed(res, err, id)
}

// claimed reports whether the claim of a tick of cron id changed its row.
func claimed(res sql.Result, err error, id string) (bool, error) {
	if err != nil {
		return false, fmt.Errorf("store: claim a tick of cron %q: %w", id, fault(err))
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
