// Package store defines where checkpoints live and holds the memory
// backend (tests, benchmarks); sqlite (the embedded default) and postgres
// (shared by many processes) are packages of their own. A checkpoint holds the writes of one step, not the whole state:
// the interpreter rebuilds a state by replaying writes through its reducers
// from the newest snapshot, so writing a checkpoint costs what the step
// changed, not what the state holds.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is returned for an unknown thread or checkpoint.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned by Put when the checkpoint's ID is not the
// thread's next one: another writer got there first, or the caller skipped
// or repeated an ID.
var ErrConflict = errors.New("checkpoint conflict")

// Checkpoint is the durable record of one step of a thread.
type Checkpoint struct {
	Thread string `json:"thread"`
	// ID is monotonic within a thread, starting at 1; Parent is the
	// previous checkpoint's ID (0 for the first).
	ID     int64 `json:"id"`
	Parent int64 `json:"parent"`
	Step   int   `json:"step"`
	// Node is the node that ran; Next the node to run next ("" when done).
	Node string `json:"node"`
	Next string `json:"next"`
	// Status of the thread after this step: running, interrupted,
	// completed, failed, cancelled.
	Status string `json:"status"`
	// Writes are the update the node returned (before reducers), as JSON.
	Writes json.RawMessage `json:"writes,omitempty"`
	// Snapshot, when set, is the whole state after this step, as JSON;
	// replay starts from the newest snapshot.
	Snapshot json.RawMessage `json:"snapshot,omitempty"`
	// Interrupt is the pending interrupt, as JSON, when Status is
	// interrupted.
	Interrupt json.RawMessage `json:"interrupt,omitempty"`
	// Meta holds run bookkeeping (budget usage, error), as JSON.
	Meta       json.RawMessage `json:"meta,omitempty"`
	Pipeline   string          `json:"pipeline"`
	ConfigHash string          `json:"config_hash"`
	Tenant     string          `json:"tenant,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
}

// Thread summarises a thread from its newest checkpoint: Pipeline and Status
// are that checkpoint's, Steps its Step and UpdatedAt its CreatedAt.
type Thread struct {
	ID        string    `json:"id"`
	Pipeline  string    `json:"pipeline"`
	Status    string    `json:"status"`
	Steps     int       `json:"steps"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Store keeps checkpoints. Implementations are safe for concurrent use.
type Store interface {
	// Put writes a checkpoint; it is durable when Put returns. cp.Thread
	// must be set, cp.ID must be the thread's next ID (1 for a new thread,
	// then the last ID + 1) and cp.Parent must be cp.ID - 1; a Put whose ID
	// is not the next fails with ErrConflict and writes nothing, so two
	// writers on one thread cannot interleave. Put sets a zero cp.CreatedAt
	// to the current time. The store keeps a copy: the caller may reuse cp
	// and its JSON buffers. Empty JSON fields are stored as nil, and
	// CreatedAt is kept in UTC with nanosecond precision.
	Put(ctx context.Context, cp *Checkpoint) error
	// Load returns the checkpoints needed to rebuild the state at id
	// (0: the newest): from the newest checkpoint with a non-empty Snapshot
	// at or before id (or the first checkpoint if there is none) up to id,
	// in order. ErrNotFound for an unknown thread or id.
	Load(ctx context.Context, thread string, id int64) ([]*Checkpoint, error)
	// History returns every checkpoint of a thread in order, without
	// Writes and Snapshot. ErrNotFound for an unknown thread.
	History(ctx context.Context, thread string) ([]*Checkpoint, error)
	// Threads lists up to limit threads (all when limit <= 0), most
	// recently updated first, ties broken by thread ID.
	Threads(ctx context.Context, limit int) ([]Thread, error)
	// Delete removes a thread and its child threads ("<thread>/...")
	// with all their checkpoints. ErrNotFound for an unknown thread.
	Delete(ctx context.Context, thread string) error
	// Prune removes a thread's checkpoints with IDs below keepFrom, never
	// its newest one, and returns how many it removed; the thread goes on
	// with the IDs it had. ErrNotFound for an unknown thread.
	Prune(ctx context.Context, thread string, keepFrom int64) (int, error)
	// Close releases the store's resources.
	Close() error
}

// CheckPut validates cp before a Put and stamps a zero CreatedAt.
func CheckPut(cp *Checkpoint) error {
	switch {
	case cp == nil:
		return errors.New("store: put: nil checkpoint")
	case cp.Thread == "":
		return errors.New("store: put: empty thread")
	case cp.ID < 1:
		return fmt.Errorf("store: put: thread %q: checkpoint id %d, want >= 1", cp.Thread, cp.ID)
	case cp.Parent != cp.ID-1:
		return fmt.Errorf("store: put: thread %q: checkpoint %d has parent %d, want %d",
			cp.Thread, cp.ID, cp.Parent, cp.ID-1)
	}
	if cp.CreatedAt.IsZero() {
		cp.CreatedAt = time.Now()
	}
	return nil
}

// ConflictError is the error for a Put of id on a thread whose last ID is last.
func ConflictError(thread string, id, last int64) error {
	return fmt.Errorf("store: put: thread %q: checkpoint %d is not next (last is %d): %w",
		thread, id, last, ErrConflict)
}

// NotFoundError is the error for an unknown thread, or checkpoint id when id > 0.
func NotFoundError(thread string, id int64) error {
	if id > 0 {
		return fmt.Errorf("store: thread %q checkpoint %d: %w", thread, id, ErrNotFound)
	}
	return fmt.Errorf("store: thread %q: %w", thread, ErrNotFound)
}
