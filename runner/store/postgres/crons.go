package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/runner-dev/runner/runner/store"
)

// pgCronsSchema creates version 9's crons: the scheduled runs
// (store.CronStore); crons_due finds the ticks due.
const pgCronsSchema = `
CREATE TABLE crons (
	tenant           text    NOT NULL,
	id               text    NOT NULL,
	assistant        text    NOT NULL,
	thread           text    NOT NULL,
	schedule         text    NOT NULL,
	timezone         text    NOT NULL,
	payload          bytea,
	metadata         bytea,
	on_run_completed text    NOT NULL,
	enabled          integer NOT NULL,
	user_id          text    NOT NULL,
	end_time         bigint  NOT NULL,
	next_run         bigint  NOT NULL,
	created_at       bigint  NOT NULL,
	updated_at       bigint  NOT NULL,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX crons_due ON crons (next_run) WHERE enabled = 1 AND next_run > 0;
`

// pgCrons are the cron store's statements.
var pgCrons = store.NewCronSQL(func(n int) string { return fmt.Sprintf("$%d", n) })

func (s *pgStore) PutCron(ctx context.Context, c *store.Cron) error {
	if err := store.CheckCron(c, time.Now()); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, pgCrons.Put, store.CronArgs(c)...); err != nil {
		return fmt.Errorf("store: put cron %q: %w", c.ID, fault(err))
	}
	return nil
}

func (s *pgStore) Cron(ctx context.Context, tenant, id string) (*store.Cron, error) {
	list, err := s.crons(ctx, pgCrons.Get, tenant, id)
	if err == nil && len(list) == 0 {
		err = store.CronNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	return &list[0], nil
}

func (s *pgStore) Crons(ctx context.Context, tenant string) ([]store.Cron, error) {
	return s.crons(ctx, pgCrons.List, tenant)
}

func (s *pgStore) DueCrons(ctx context.Context, now time.Time) ([]store.Cron, error) {
	return s.crons(ctx, pgCrons.Due, now.UnixNano())
}

// crons reads the cron rows of query.
func (s *pgStore) crons(ctx context.Context, query string, args ...any) ([]store.Cron, error) {
	var out []store.Cron
	err := s.retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Cron, error) {
			return store.ScanCron(row.Scan)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: crons: %w", fault(err))
	}
	return out, nil
}

func (s *pgStore) DeleteCron(ctx context.Context, tenant, id string) error {
	tag, err := s.pool.Exec(ctx, pgCrons.Delete, tenant, id)
	switch {
	case err != nil:
		return fmt.Errorf("store: cron %q: %w", id, fault(err))
	case tag.RowsAffected() == 0:
		return store.CronNotFound(id)
	}
	return nil
}

func (s *pgStore) ClaimTick(ctx context.Context, tenant, id string, tick, next time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, pgCrons.Claim, tenant, id, store.Nanos(tick), store.Nanos(next))
	if err != nil {
		return false, fmt.Errorf("store: claim a tick of cron %q: %w", id, fault(err))
	}
	return tag.RowsAffected() == 1, nil
}
