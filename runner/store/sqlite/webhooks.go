package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// sqliteWebhooksSchema is version 18: the outbox of webhook deliveries
// (store.WebhookStore); due ones are found by status and next_at.
const sqliteWebhooksSchema = `
CREATE TABLE webhooks (
	id          TEXT    NOT NULL PRIMARY KEY,
	tenant      TEXT    NOT NULL,
	hook        TEXT    NOT NULL,
	event       TEXT    NOT NULL,
	url         TEXT    NOT NULL,
	body        BLOB    NOT NULL,
	status      TEXT    NOT NULL,
	attempts    INTEGER NOT NULL,
	next_at     INTEGER NOT NULL, -- Unix nanoseconds
	last_status INTEGER NOT NULL,
	last_error  TEXT    NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX webhooks_due ON webhooks (next_at) WHERE status = 'pending';
CREATE INDEX webhooks_log ON webhooks (tenant, created_at, id);
`

// sqliteDeliveryColumns are the columns scanDelivery reads, in its order.
const sqliteDeliveryColumns = `id, tenant, hook, event, url, body, status, attempts, next_at, last_status, last_error, created_at, updated_at`

const sqliteEnqueue = `INSERT OR ROLLBACK INTO webhooks (` + sqliteDeliveryColumns + `)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`

const sqliteSettle = `UPDATE OR ROLLBACK webhooks SET status = ?2, attempts = ?3, next_at = ?4, last_status = ?5,
	last_error = ?6, updated_at = ?7 WHERE id = ?1`

// sqliteClaim moves the next_at of the ?3 deliveries due first at ?1 to
// ?2, returning them.
const sqliteClaim = `UPDATE webhooks SET next_at = ?2 WHERE id IN
	(SELECT id FROM webhooks WHERE status = 'pending' AND next_at <= ?1 ORDER BY next_at, id LIMIT ?3)
RETURNING ` + sqliteDeliveryColumns

func (s *sqliteStore) Enqueue(ctx context.Context, ds ...*store.Delivery) error {
	first := deliveryWrites(ds)
	if first == nil {
		return nil
	}
	if _, err := s.commitPut(ctx, first); err != nil {
		return fmt.Errorf("store: enqueue: %w", fault(err))
	}
	return nil
}

// deliveryWrites are the inserts of ds, chained (nil for none).
func deliveryWrites(ds []*store.Delivery) *putReq {
	var first, last *putReq
	for _, d := range ds {
		w := &putReq{query: sqliteEnqueue, args: []any{d.ID, d.Tenant, d.Hook, d.Event, d.URL, []byte(d.Body), d.Status, d.Attempts,
			d.NextAt.UnixNano(), d.LastStatus, d.LastError, d.CreatedAt.UnixNano(), d.UpdatedAt.UnixNano()}}
		if first == nil {
			first = w
		} else {
			last.after = w
		}
		last = w
	}
	return first
}

func (s *sqliteStore) Claim(ctx context.Context, now time.Time, ttl time.Duration, limit int) ([]*store.Delivery, error) {
	out, err := s.deliveries(ctx, s.w, sqliteClaim, now.UnixNano(), now.Add(ttl).UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("store: claim: %w", err)
	}
	return out, nil
}

func (s *sqliteStore) Settle(ctx context.Context, d *store.Delivery) error {
	n, err := s.commitPut(ctx, &putReq{query: sqliteSettle, args: []any{d.ID, d.Status, d.Attempts, d.NextAt.UnixNano(),
		d.LastStatus, d.LastError, d.UpdatedAt.UnixNano()}})
	switch {
	case err != nil:
		return fmt.Errorf("store: settle: %w", fault(err))
	case n == 0:
		return fmt.Errorf("store: delivery %q: %w", d.ID, store.ErrNotFound)
	}
	return nil
}

func (s *sqliteStore) Deliveries(ctx context.Context, q store.DeliveryQuery) ([]*store.Delivery, error) {
	args := store.Args{Mark: "?"}
	where := q.SQL(args.Add)
	out, err := s.deliveries(ctx, s.r, `SELECT `+sqliteDeliveryColumns+` FROM webhooks `+where, args.List...)
	if err != nil {
		return nil, fmt.Errorf("store: deliveries: %w", err)
	}
	return out, nil
}

// deliveries runs a query answering sqliteDeliveryColumns on db.
func (s *sqliteStore) deliveries(ctx context.Context, db *sql.DB, query string, args ...any) ([]*store.Delivery, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fault(err)
	}
	defer rows.Close()
	var out []*store.Delivery
	for rows.Next() {
		var d store.Delivery
		var next, created, updated int64
		if err := rows.Scan(&d.ID, &d.Tenant, &d.Hook, &d.Event, &d.URL, &d.Body, &d.Status, &d.Attempts, &next,
			&d.LastStatus, &d.LastError, &created, &updated); err != nil {
			return nil, fault(err)
		}
		d.NextAt, d.CreatedAt, d.UpdatedAt = time.Unix(0, next).UTC(), time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
		out = append(out, &d)
	}
	return out, fault(rows.Err())
}
