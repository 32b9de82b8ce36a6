package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Delivery statuses.
const (
	// DeliveryPending waits for its next attempt (NextAt).
	DeliveryPending = "pending"
	// DeliveryDelivered was answered with a 2xx.
	DeliveryDelivered = "delivered"
	// DeliveryFailed was given up after its last attempt.
	DeliveryFailed = "failed"
)

// Delivery is one webhook notification in the outbox: an event's Body to
// POST to URL, signed with the secret of Hook (the subscription it was
// made for), attempted until a 2xx answers it. ID is its webhook-id: the
// same on every attempt, so a receiver drops the repeats of an
// at-least-once delivery.
type Delivery struct {
	ID     string          `json:"id"`
	Tenant string          `json:"tenant,omitempty"`
	Hook   string          `json:"hook"`
	Event  string          `json:"event"`
	URL    string          `json:"url"`
	Body   json.RawMessage `json:"body"`
	Status string          `json:"status"`
	// Attempts made; NextAt is when the next is due (a claim moves it on).
	Attempts int       `json:"attempts"`
	NextAt   time.Time `json:"next_at"`
	// LastStatus and LastError say how the last attempt ended (0 and ""
	// before any).
	LastStatus int       `json:"last_status,omitempty"`
	LastError  string    `json:"last_error,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// DeliveryQuery selects a tenant's deliveries (AllTenants: everyone's),
// of Status when set, newest first, after the cursor After, at most Limit
// (<= 0: all).
type DeliveryQuery struct {
	Tenant     string
	AllTenants bool
	Status     string
	After      *Cursor
	Limit      int
}

// WebhookStore is the outbox of webhook deliveries, shared by the
// replicas of a server: a delivery enqueued is attempted until
// delivered or given up, by whichever replica claims it when due.
// Implementations are safe for concurrent use.
type WebhookStore interface {
	// Enqueue adds pending deliveries, due at their NextAt.
	Enqueue(ctx context.Context, ds ...*Delivery) error
	// Claim takes at most limit pending deliveries due at now, oldest
	// due first, and moves their NextAt to now+ttl: no one else claims
	// them before that, and a claimer that dies leaves them due again.
	Claim(ctx context.Context, now time.Time, ttl time.Duration, limit int) ([]*Delivery, error)
	// Settle writes how an attempt ended: d's Status, Attempts, NextAt,
	// LastStatus, LastError and UpdatedAt.
	Settle(ctx context.Context, d *Delivery) error
	// Deliveries lists the deliveries q selects.
	Deliveries(ctx context.Context, q DeliveryQuery) ([]*Delivery, error)
}

// Selects reports whether q selects d, limit aside.
func (q *DeliveryQuery) Selects(d *Delivery) bool {
	switch {
	case !q.AllTenants && d.Tenant != q.Tenant,
		q.Status != "" && d.Status != q.Status:
		return false
	}
	return q.After == nil || cmp.Or(d.CreatedAt.Compare(q.After.CreatedAt), cmp.Compare(d.ID, q.After.ID)) < 0
}

// SQL is q as the condition, order and limit of a select of deliveries,
// for the SQL backends (created_at in Unix nanoseconds); arg adds an
// argument and returns its placeholder.
func (q *DeliveryQuery) SQL(arg func(any) string) string {
	sql := "WHERE true"
	if !q.AllTenants {
		sql += " AND tenant = " + arg(q.Tenant)
	}
	if q.Status != "" {
		sql += " AND status = " + arg(q.Status)
	}
	if q.After != nil {
		sql += fmt.Sprintf(" AND (created_at, id) < (%s, %s)", arg(q.After.CreatedAt.UnixNano()), arg(q.After.ID))
	}
	sql += " ORDER BY created_at DESC, id DESC"
	if q.Limit > 0 {
		sql += " LIMIT " + arg(q.Limit)
	}
	return sql
}

func cloneDelivery(d *Delivery) *Delivery {
	c := *d
	c.Body = slices.Clone(d.Body)
	c.NextAt, c.CreatedAt, c.UpdatedAt = d.NextAt.UTC(), d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return &c
}

// memWebhooks is the memory store's outbox, under its mutex.
type memWebhooks struct {
	deliveries map[string]*Delivery
}

func (m *memory) Enqueue(_ context.Context, ds ...*Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.enqueue(ds)
	return nil
}

// enqueue adds ds, under the store's mutex.
func (m *memWebhooks) enqueue(ds []*Delivery) {
	for _, d := range ds {
		m.deliveries[d.ID] = cloneDelivery(d)
	}
}

func (m *memory) Claim(_ context.Context, now time.Time, ttl time.Duration, limit int) ([]*Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var due []*Delivery
	for _, d := range m.deliveries {
		if d.Status == DeliveryPending && !d.NextAt.After(now) {
			due = append(due, d)
		}
	}
	slices.SortFunc(due, func(a, b *Delivery) int { return cmp.Or(a.NextAt.Compare(b.NextAt), cmp.Compare(a.ID, b.ID)) })
	out := make([]*Delivery, 0, min(limit, len(due)))
	for _, d := range due[:min(limit, len(due))] {
		d.NextAt = now.Add(ttl).UTC()
		out = append(out, cloneDelivery(d))
	}
	return out, nil
}

func (m *memory) Settle(_ context.Context, d *Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.deliveries[d.ID]
	if old == nil {
		return fmt.Errorf("store: delivery %q: %w", d.ID, ErrNotFound)
	}
	c := cloneDelivery(old)
	c.Status, c.Attempts, c.NextAt, c.LastStatus, c.LastError, c.UpdatedAt = d.Status, d.Attempts, d.NextAt.UTC(), d.LastStatus, d.LastError, d.UpdatedAt.UTC()
	m.deliveries[d.ID] = c
	return nil
}

func (m *memory) Deliveries(_ context.Context, q DeliveryQuery) ([]*Delivery, error) {
	m.mu.RLock()
	var out []*Delivery
	for _, d := range m.deliveries {
		if q.Selects(d) {
			out = append(out, cloneDelivery(d))
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Delivery) int { return -cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID)) })
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}
