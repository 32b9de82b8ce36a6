package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runner-dev/runner/runner/store"
)

// pgWebhooksSchema creates version 11's table: the outbox of webhook
// deliveries (store.WebhookStore), shared by the replicas; due ones are
// found by status and next_at and claimed with SKIP LOCKED.
const pgWebhooksSchema = `
CREATE TABLE webhooks (
	id          text    NOT NULL PRIMARY KEY,
	tenant      text    NOT NULL,
	hook        text    NOT NULL,
	event       text    NOT NULL,
	url         text    NOT NULL,
	body        bytea   NOT NULL,
	status      text    NOT NULL,
	attempts    integer NOT NULL,
	next_at     bigint  NOT NULL,
	last_status integer NOT NULL,
	last_error  text    NOT NULL,
	created_at  bigint  NOT NULL,
	updated_at  bigint  NOT NULL
);
CREATE INDEX webhooks_due ON webhooks (next_at) WHERE status = 'pending';
CREATE INDEX webhooks_log ON webhooks (tenant, created_at, id);
`

// pgDeliveryColumns are the columns scanDelivery reads, in its order.
const pgDeliveryColumns = `id, tenant, hook, event, url, body, status, attempts, next_at, last_status, last_error, created_at, updated_at`

// pgDeliveryTypes are the types of the arrays of deliveryArgs.
var pgDeliveryTypes = []string{"text", "text", "text", "text", "text", "bytea", "text", "integer", "bigint", "integer", "text", "bigint", "bigint"}

// pgInsertDeliveries inserts the deliveries of the arrays from $from on
// (deliveryArgs) when the condition cond holds.
func pgInsertDeliveries(from int, cond string) string {
	arrays := make([]string, len(pgDeliveryTypes))
	for i, t := range pgDeliveryTypes {
		arrays[i] = fmt.Sprintf("$%d::%s[]", from+i, t)
	}
	return `INSERT INTO webhooks (` + pgDeliveryColumns + `) SELECT * FROM unnest(` + strings.Join(arrays, ", ") + `) WHERE ` + cond
}

var pgEnqueue = pgInsertDeliveries(1, "true")

const pgSettle = `UPDATE webhooks SET status = $2, attempts = $3, next_at = $4, last_status = $5, last_error = $6,
	updated_at = $7 WHERE id = $1`

// pgClaim moves the next_at of the $3 deliveries due first at $1, that
// no other replica is claiming, to $2, returning them.
const pgClaim = `UPDATE webhooks SET next_at = $2 WHERE id IN
	(SELECT id FROM webhooks WHERE status = 'pending' AND next_at <= $1 ORDER BY next_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
RETURNING ` + pgDeliveryColumns

// pgDeliveriesStep is the step of a Put that adds, if it inserted the
// checkpoint, its deliveries from $from on.
func pgDeliveriesStep(from int) string {
	return ",\nhooks AS (" + pgInsertDeliveries(from, "EXISTS (SELECT FROM ins)") + ")"
}

func (s *pgStore) Enqueue(ctx context.Context, ds ...*store.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	if res := s.group.Do(write{pgEnqueue, deliveryArgs(ds)}); res.Err != nil {
		return fmt.Errorf("store: enqueue: %w", fault(res.Err))
	}
	return nil
}

// deliveryArgs are ds as the 13 arrays pgInsertDeliveries reads.
func deliveryArgs(ds []*store.Delivery) []any {
	var ids, tenants, hooks, events, urls, statuses, errs []string
	var bodies [][]byte
	var attempts, codes []int32
	var next, created, updated []int64
	for _, d := range ds {
		ids, tenants, hooks, events, urls = append(ids, d.ID), append(tenants, d.Tenant), append(hooks, d.Hook), append(events, d.Event), append(urls, d.URL)
		bodies, statuses, attempts = append(bodies, d.Body), append(statuses, d.Status), append(attempts, int32(d.Attempts))
		next, codes, errs = append(next, d.NextAt.UnixNano()), append(codes, int32(d.LastStatus)), append(errs, d.LastError)
		created, updated = append(created, d.CreatedAt.UnixNano()), append(updated, d.UpdatedAt.UnixNano())
	}
	return []any{ids, tenants, hooks, events, urls, bodies, statuses, attempts, next, codes, errs, created, updated}
}

func (s *pgStore) Claim(ctx context.Context, now time.Time, ttl time.Duration, limit int) ([]*store.Delivery, error) {
	out, err := s.deliveries(ctx, pgClaim, now.UnixNano(), now.Add(ttl).UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("store: claim: %w", fault(err))
	}
	return out, nil
}

func (s *pgStore) Settle(ctx context.Context, d *store.Delivery) error {
	var n int64
	err := s.retry(ctx, func() error {
		tag, err := s.pool.Exec(ctx, pgSettle, d.ID, d.Status, d.Attempts, d.NextAt.UnixNano(), d.LastStatus, d.LastError, d.UpdatedAt.UnixNano())
		n = tag.RowsAffected()
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("store: settle: %w", fault(err))
	case n == 0:
		return fmt.Errorf("store: delivery %q: %w", d.ID, store.ErrNotFound)
	}
	return nil
}

func (s *pgStore) Deliveries(ctx context.Context, q store.DeliveryQuery) ([]*store.Delivery, error) {
	args := store.Args{Mark: "$"}
	where := q.SQL(args.Add)
	out, err := s.deliveries(ctx, `SELECT `+pgDeliveryColumns+` FROM webhooks `+where, args.List...)
	if err != nil {
		return nil, fmt.Errorf("store: deliveries: %w", fault(err))
	}
	return out, nil
}

// deliveries runs a query answering pgDeliveryColumns (a claim is not
// retried: it may have claimed).
func (s *pgStore) deliveries(ctx context.Context, sql string, args ...any) ([]*store.Delivery, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.Delivery, error) {
		var d store.Delivery
		var next, created, updated int64
		err := row.Scan(&d.ID, &d.Tenant, &d.Hook, &d.Event, &d.URL, &d.Body, &d.Status, &d.Attempts, &next,
			&d.LastStatus, &d.LastError, &created, &updated)
		d.NextAt, d.CreatedAt, d.UpdatedAt = time.Unix(0, next).UTC(), time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
		return &d, err
	})
}
