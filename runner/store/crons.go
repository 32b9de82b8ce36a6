package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Cron is a scheduled run (LangGraph's crons), one tenant's: at each tick
// of Schedule, read in Timezone, the scheduler starts the run Payload
// describes, on Thread or on a thread of its own. NextRun is the tick to
// fire next: a scheduler claims it (ClaimTick) by moving it on, so among
// the schedulers sharing a store one fires each tick.
type Cron struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant,omitempty"`
	// Assistant is the assistant id or graph name the runs run.
	Assistant string `json:"assistant"`
	// Thread is the thread each run runs on ("": a new thread each tick).
	Thread   string `json:"thread,omitempty"`
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone,omitempty"`
	// Payload is the run request of each tick, Metadata the client's; both
	// JSON objects (nil: none).
	Payload  json.RawMessage `json:"payload,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// OnRunCompleted is what becomes of a stateless run's thread when the
	// run ends: delete or keep.
	OnRunCompleted string `json:"on_run_completed,omitempty"`
	Enabled        bool   `json:"enabled"`
	UserID         string `json:"user_id,omitempty"`
	// EndTime is when the schedule stops (zero: never); NextRun is the
	// next tick (zero: none, past EndTime).
	EndTime   time.Time `json:"end_time,omitzero"`
	NextRun   time.Time `json:"next_run,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CronStore keeps crons per tenant. Implementations are safe for
// concurrent use.
type CronStore interface {
	// PutCron writes c, replacing the tenant's cron of its ID (whose
	// CreatedAt it keeps). Zero times are set to now.
	PutCron(ctx context.Context, c *Cron) error
	// Cron returns one of the tenant's crons; ErrNotFound when there is none.
	Cron(ctx context.Context, tenant, id string) (*Cron, error)
	// Crons lists the tenant's crons, oldest created first, ties by ID.
	Crons(ctx context.Context, tenant string) ([]Cron, error)
	// DeleteCron removes a cron; ErrNotFound when there is none.
	DeleteCron(ctx context.Context, tenant, id string) error
	// DueCrons lists every tenant's enabled crons whose NextRun is set and
	// at or before now, earliest first.
	DueCrons(ctx context.Context, now time.Time) ([]Cron, error)
	// ClaimTick moves a cron's NextRun from tick to next (zero: none) if
	// it still is tick, and reports whether it did: of the schedulers that
	// found the tick due, the one whose claim moved it fires it.
	ClaimTick(ctx context.Context, tenant, id string, tick, next time.Time) (bool, error)
}

// CheckCron validates c before a PutCron and stamps zero times.
func CheckCron(c *Cron, now time.Time) error {
	switch {
	case c == nil || c.ID == "":
		return errors.New("store: put cron: empty id")
	case c.Assistant == "":
		return fmt.Errorf("store: put cron %q: empty assistant", c.ID)
	case c.Schedule == "":
		return fmt.Errorf("store: put cron %q: empty schedule", c.ID)
	}
	for _, obj := range []json.RawMessage{c.Payload, c.Metadata} {
		if v := bytes.TrimSpace(obj); len(v) > 0 && (v[0] != '{' || !json.Valid(v)) {
			return fmt.Errorf("store: put cron %q: payload and metadata must be JSON objects", c.ID)
		}
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = now
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	c.EndTime, c.NextRun = c.EndTime.UTC(), c.NextRun.UTC()
	return nil
}

// CronSQL holds the cron store's statements for an SQL backend whose
// table crons has CronColumns (times in Unix nanoseconds, 0: none;
// enabled 0 or 1).
type CronSQL struct {
	// Put takes CronArgs; Get and Delete the tenant and id; List the
	// tenant; Due now; Claim the tenant, id, tick and next.
	Put, Get, List, Delete, Due, Claim string
}

// CronColumns are the columns of the crons table, in CronArgs' and
// ScanCron's order.
const CronColumns = `tenant, id, assistant, thread, schedule, timezone, payload, metadata, on_run_completed, enabled, ` +
	`user_id, end_time, next_run, created_at, updated_at`

// NewCronSQL writes the statements with p giving the placeholder of the
// n-th argument, from 1: "?1" for SQLite, "$1" for PostgreSQL.
func NewCronSQL(p func(n int) string) CronSQL {
	ps := make([]string, 15)
	for i := range ps {
		ps[i] = p(i + 1)
	}
	sel := `SELECT ` + CronColumns + ` FROM crons WHERE `
	return CronSQL{
		Put: `INSERT INTO crons (` + CronColumns + `) VALUES (` + strings.Join(ps, ", ") + `)
			ON CONFLICT (tenant, id) DO UPDATE SET assistant = excluded.assistant, thread = excluded.thread,
			schedule = excluded.schedule, timezone = excluded.timezone, payload = excluded.payload,
			metadata = excluded.metadata, on_run_completed = excluded.on_run_completed, enabled = excluded.enabled,
			user_id = excluded.user_id, end_time = excluded.end_time, next_run = excluded.next_run,
			updated_at = excluded.updated_at`,
		Get:    sel + `tenant = ` + ps[0] + ` AND id = ` + ps[1],
		List:   sel + `tenant = ` + ps[0] + ` ORDER BY created_at, id`,
		Delete: `DELETE FROM crons WHERE tenant = ` + ps[0] + ` AND id = ` + ps[1],
		Due:    sel + `enabled = 1 AND next_run > 0 AND next_run <= ` + ps[0] + ` ORDER BY next_run, tenant, id`,
		Claim: `UPDATE crons SET next_run = ` + ps[3] + ` WHERE tenant = ` + ps[0] + ` AND id = ` + ps[1] +
			` AND next_run = ` + ps[2],
	}
}

// CronArgs are the arguments of CronSQL.Put for c.
func CronArgs(c *Cron) []any {
	enabled := 0
	if c.Enabled {
		enabled = 1
	}
	return []any{c.Tenant, c.ID, c.Assistant, c.Thread, c.Schedule, c.Timezone, []byte(c.Payload), []byte(c.Metadata),
		c.OnRunCompleted, enabled, c.UserID, Nanos(c.EndTime), Nanos(c.NextRun), c.CreatedAt.UnixNano(), c.UpdatedAt.UnixNano()}
}

// ScanCron reads a row of CronColumns with scan.
func ScanCron(scan func(dest ...any) error) (Cron, error) {
	var c Cron
	var payload, meta []byte
	var enabled, end, next, created, updated int64
	if err := scan(&c.Tenant, &c.ID, &c.Assistant, &c.Thread, &c.Schedule, &c.Timezone, &payload, &meta,
		&c.OnRunCompleted, &enabled, &c.UserID, &end, &next, &created, &updated); err != nil {
		return Cron{}, err
	}
	c.Payload, c.Metadata = nonEmpty(payload), nonEmpty(meta)
	c.Enabled = enabled != 0
	c.EndTime, c.NextRun = FromNanos(end), FromNanos(next)
	c.CreatedAt, c.UpdatedAt = FromNanos(created), FromNanos(updated)
	return c, nil
}

// Nanos is t in Unix nanoseconds, 0 for the zero time.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromNanos is the UTC time of Unix nanoseconds n, the zero time for 0.
func FromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// nonEmpty is b, or nil when it is empty.
func nonEmpty(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}

// CronNotFound is the error for an unknown cron.
func CronNotFound(id string) error { return RecordNotFound("cron", id) }
