package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Run statuses of a RunRecord.
const (
	RunPending     = "pending"
	RunRunning     = "running"
	RunSuccess     = "success"
	RunError       = "error"
	RunTimeout     = "timeout"
	RunInterrupted = "interrupted"
)

// ThreadRecord is a thread as an API client created it: it exists before
// its first checkpoint, and holds what the checkpoints do not (tenant,
// metadata).
type ThreadRecord struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant,omitempty"`
	// Metadata is a JSON object.
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// RunRecord is one run an API client asked for on a thread.
type RunRecord struct {
	ID     string `json:"id"`
	Thread string `json:"thread"`
	Tenant string `json:"tenant,omitempty"`
	// Assistant is the name of the graph the run runs.
	Assistant string `json:"assistant"`
	// Status is pending, running, success, error, timeout or interrupted.
	Status            string `json:"status"`
	MultitaskStrategy string `json:"multitask_strategy,omitempty"`
	// IdempotencyKey, when set, is unique per tenant: a second CreateRun
	// with it returns the first run.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Kwargs is the request that created the run, Metadata the client's
	// metadata; both JSON objects.
	Kwargs    json.RawMessage `json:"kwargs,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// RunEvent is one event of a run's persisted stream.
type RunEvent struct {
	Run string `json:"run"`
	// Seq is monotonic within a run, starting at 1.
	Seq int64 `json:"seq"`
	// Event is the stream event's name; Data its JSON payload.
	Event     string          `json:"event"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"created_at"`
}

// EventInput is an event to append to a run's log: its name and its JSON
// payload.
type EventInput struct {
	Event string
	Data  json.RawMessage
}

// RunStore keeps what an API server needs beside checkpoints: thread
// records, run records and each run's event log. Implementations are
// safe for concurrent use. Checkpoints are the Store's: deleting a thread
// record leaves them.
type RunStore interface {
	// CreateThread writes a new thread record; ErrConflict when one with
	// its ID exists. Zero times are set to now.
	CreateThread(ctx context.Context, t *ThreadRecord) error
	// Thread returns a thread record; ErrNotFound when there is none.
	Thread(ctx context.Context, id string) (*ThreadRecord, error)
	// UpdateThread replaces a thread record's metadata and sets its
	// UpdatedAt (now when zero); ErrNotFound when there is none.
	UpdateThread(ctx context.Context, t *ThreadRecord) error
	// DeleteThread removes a thread record with its runs and their
	// events; ErrNotFound when there is none.
	DeleteThread(ctx context.Context, id string) error
	// ThreadRecords lists a tenant's thread records, newest first.
	ThreadRecords(ctx context.Context, tenant string) ([]ThreadRecord, error)

	// CreateRun writes a new run record and returns it with created
	// true; when r.IdempotencyKey is set and the tenant already has a run
	// with it, nothing is written and that run is returned with created
	// false. A thread that is not nil is the record of the run's new
	// thread, written with the run in one write: when a thread record
	// with its ID exists, nothing is written and the error is an
	// ErrConflict naming the thread. Zero times are set to now.
	CreateRun(ctx context.Context, r *RunRecord, thread *ThreadRecord) (run *RunRecord, created bool, err error)
	// Run returns a run record; ErrNotFound when there is none.
	Run(ctx context.Context, id string) (*RunRecord, error)
	// Runs lists a thread's runs, oldest first.
	Runs(ctx context.Context, thread string) ([]RunRecord, error)
	// RunsWithStatus lists the runs of any thread in one of statuses,
	// oldest first.
	RunsWithStatus(ctx context.Context, statuses ...string) ([]RunRecord, error)
	// SetRunStatus sets a run's status and UpdatedAt; ErrNotFound when
	// there is none.
	SetRunStatus(ctx context.Context, id, status string) error
	// DeleteRun removes a run and its events; ErrNotFound when there is
	// none.
	DeleteRun(ctx context.Context, id string) error

	// AppendEvents adds events to a run's log, in one write: numbered
	// in order, after the run's newest and with no other event between
	// them. It returns the Seq of the last; an empty batch writes nothing
	// and returns 0. ErrNotFound when the run does not exist.
	AppendEvents(ctx context.Context, run string, events []EventInput) (lastSeq int64, err error)
	// EndRun sets a run's final status and appends its last events, in
	// one write: a reader sees the run ended with all its events, or
	// neither. ErrNotFound when the run does not exist.
	EndRun(ctx context.Context, id, status string, events []EventInput) error
	// Events returns a run's events with Seq above after, in order.
	Events(ctx context.Context, run string, after int64) ([]RunEvent, error)
}

// CheckThreadRecord validates t before it is created and stamps zero times.
func CheckThreadRecord(t *ThreadRecord, now time.Time) error {
	if t == nil || t.ID == "" {
		return errors.New("store: create thread: empty id")
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = now
	}
	if t.UpdatedAt.IsZero() {
		t.UpdatedAt = t.CreatedAt
	}
	return nil
}

// CheckRunRecord validates r, and the record of its new thread if not
// nil, before they are created, and stamps zero times.
func CheckRunRecord(r *RunRecord, thread *ThreadRecord, now time.Time) error {
	switch {
	case r == nil || r.ID == "":
		return errors.New("store: create run: empty id")
	case r.Thread == "":
		return fmt.Errorf("store: create run %s: empty thread", r.ID)
	case r.Status == "":
		return fmt.Errorf("store: create run %s: empty status", r.ID)
	case thread != nil && thread.ID != r.Thread:
		return fmt.Errorf("store: create run %s: the thread record %q is not its thread %q", r.ID, thread.ID, r.Thread)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	if thread != nil {
		return CheckThreadRecord(thread, now)
	}
	return nil
}

// RecordNotFound is the error for an unknown thread record or run.
func RecordNotFound(kind, id string) error {
	return fmt.Errorf("store: %s %q: %w", kind, id, ErrNotFound)
}

// ConflictRecord is the error for a thread record or run created twice.
func ConflictRecord(kind, id string) error {
	return fmt.Errorf("store: %s %q exists: %w", kind, id, ErrConflict)
}
