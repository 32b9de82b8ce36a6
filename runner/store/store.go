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

// ErrLeased is returned by Acquire for a thread whose lease another owner
// holds, and by Renew and Release for a lease that was taken over.
var ErrLeased = errors.New("thread is leased")

// ErrFenced is returned by Put for a checkpoint written under a lease that
// is no longer the thread's: another owner took the thread over.
var ErrFenced = errors.New("lease fenced: the thread was taken over")

// ErrUnavailable is wrapped by the errors of a store that cannot be
// reached, read or written for now: a database server that is down, a
// file that cannot be written, a lock held too long. The request may
// succeed later (a server answers 503); the store heals by itself when
// the fault is repaired.
var ErrUnavailable = errors.New("store unavailable")

// ErrFull is wrapped by the errors of a write refused because the
// store's disk is full (a server answers 507); errors.Is(err,
// ErrUnavailable) holds for it too.
var ErrFull = fmt.Errorf("%w: disk full", ErrUnavailable)

// Prober is a store that can tell whether it can be written now.
type Prober interface {
	// Probe writes a tiny heartbeat record the way the store's writes
	// go: nil when it could, else an error wrapping ErrUnavailable
	// (ErrFull for a full disk) or saying what else failed.
	Probe(ctx context.Context) error
}

// Checkpoint is the durable record of one step of a thread.
type Checkpoint struct {
	Thread string `json:"thread"`
	// ID is monotonic within a thread, starting at 1; Parent is the
	// checkpoint this one follows: the previous one for a step (0 for the
	// first), an earlier one for a branch — a replay from there, which
	// starts with a snapshot — so the parents of a thread form a tree.
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
	// Lease is the token of the writer's lease on the thread, 0 for a
	// writer without one. Put refuses with ErrFenced a checkpoint whose
	// Lease is not the thread's current token; the field is not stored
	// (Load and History return 0).
	Lease int64 `json:"-"`
	// Release ends that lease in the same write, as Release would, when
	// the checkpoint is stored: the writer's last (a run's end or pause),
	// so the thread is free the moment its state is final. Not stored.
	Release bool `json:"-"`
	// ChildOf, on a thread's first checkpoint, records the thread as a
	// child thread of the thread ChildOf (a subgraph's or a parallel
	// branch's, "<ChildOf>/<node>@<step>"): Delete of that thread deletes
	// this one. It is the thread's, not the checkpoint's: Load and
	// History return "".
	ChildOf string `json:"-"`
	// Approvals are written with the checkpoint, in the same write, each
	// replacing the record of its ID (keeping its CreatedAt): the
	// approvals the step opened, voted on or decided. Not stored with the
	// checkpoint: Load and History return none; an ApprovalStore reads
	// them.
	Approvals []*Approval `json:"-"`
	// Audit are appended to the audit ledger with the checkpoint, in the
	// same write (AuditStore): the gate events of the step. Not stored
	// with the checkpoint.
	Audit []*AuditRecord `json:"-"`
	// Deliveries are added to the webhook outbox with the checkpoint, in
	// the same write (WebhookStore): the notifications of the step's gate
	// events, so none is lost if the writer dies just after. Not stored
	// with the checkpoint.
	Deliveries []*Delivery `json:"-"`
}

// Lease is an owner's exclusive claim on a thread until Expires: one
// executor per thread. Token, the fencing number, grows with every
// Acquire of the thread, so a checkpoint written under a lease that was
// taken over (Checkpoint.Lease) is refused.
type Lease struct {
	Thread  string
	Owner   string
	Token   int64
	Expires time.Time
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
	// then the last ID + 1) and cp.Parent one of its earlier IDs (0 for the
	// first; an ID below cp.ID - 1 only with a Snapshot); a Put whose ID
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
	// ThreadsAfter lists up to limit threads (all when limit <= 0) whose
	// ID sorts after after ("": from the first), in order of ID: a page of
	// the store's threads, the next one after the last ID of this one.
	// The order is the store's own (bytes; PostgreSQL: the database's
	// collation) and stays the same, so paging visits every thread that
	// exists throughout exactly once, whatever is written meanwhile.
	ThreadsAfter(ctx context.Context, after string, limit int) ([]Thread, error)
	// Delete removes a thread and the child threads recorded as its own
	// (Checkpoint.ChildOf; theirs too) with all their checkpoints, and
	// ends their leases (their tokens go on growing, so a writer from
	// before the Delete stays fenced). A thread whose id merely begins
	// with the thread's and a "/" is not its child: it stays.
	// ErrNotFound for an unknown thread.
	Delete(ctx context.Context, thread string) error
	// Prune removes a thread's checkpoints with IDs below keepFrom, never
	// its newest one, and returns how many it removed; the thread goes on
	// with the IDs it had. ErrNotFound for an unknown thread.
	Prune(ctx context.Context, thread string, keepFrom int64) (int, error)
	// Acquire leases thread to owner for ttl, with a token higher than any
	// the thread had, if no owner holds a lease that has not expired (not
	// even owner itself); else it fails with an error wrapping ErrLeased
	// that names the holder and when its lease expires (LeasedError).
	// Many acquirers at once: exactly one wins.
	Acquire(ctx context.Context, thread, owner string, ttl time.Duration) (Lease, error)
	// Renew extends l to ttl from now, if l's token is still the
	// thread's (even after it expired, as long as no one took it over)
	// and l was not ended by Release or Delete; else ErrLeased.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release ends l, so the thread can be acquired at once; ErrLeased
	// if l was taken over.
	Release(ctx context.Context, l Lease) error
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
	case cp.Parent < 0 || cp.Parent >= cp.ID || cp.ID == 1 && cp.Parent != 0:
		return fmt.Errorf("store: put: thread %q: checkpoint %d has parent %d, want an earlier checkpoint (%d for a step)",
			cp.Thread, cp.ID, cp.Parent, cp.ID-1)
	case cp.Parent != cp.ID-1 && len(cp.Snapshot) == 0:
		return fmt.Errorf("store: put: thread %q: checkpoint %d branches from %d without a snapshot",
			cp.Thread, cp.ID, cp.Parent)
	case cp.Release && cp.Lease == 0:
		return fmt.Errorf("store: put: thread %q: checkpoint %d releases a lease but names none", cp.Thread, cp.ID)
	}
	if err := CheckAudit(cp.Tenant, cp.Audit); err != nil {
		return fmt.Errorf("store: put: thread %q: checkpoint %d: %w", cp.Thread, cp.ID, err)
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

// CheckLease validates the arguments of an Acquire.
func CheckLease(thread, owner string, ttl time.Duration) error {
	switch {
	case thread == "":
		return errors.New("store: acquire: empty thread")
	case owner == "":
		return fmt.Errorf("store: acquire: thread %q: empty owner", thread)
	case ttl <= 0:
		return fmt.Errorf("store: acquire: thread %q: ttl %v, want > 0", thread, ttl)
	}
	return nil
}

// LeasedError is the error for a thread that owner holds until expires: a
// *HeldError.
func LeasedError(thread, owner string, expires time.Time) error {
	return &HeldError{Thread: thread, Owner: owner, Expires: expires}
}

// HeldError is the error of an Acquire of a thread that Owner holds until
// Expires; it wraps ErrLeased.
type HeldError struct {
	Thread, Owner string
	Expires       time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("store: thread %q is leased by %s until %s: %v",
		e.Thread, e.Owner, e.Expires.UTC().Format(time.RFC3339Nano), ErrLeased)
}

// Unwrap returns ErrLeased.
func (e *HeldError) Unwrap() error { return ErrLeased }

// LostError is the error for a Renew or Release of l after the thread was
// taken over by owner with a higher token (owner "" if the lease is gone).
func LostError(l Lease, owner string) error {
	if owner == "" {
		return fmt.Errorf("store: thread %q: lease %d of %s is gone: %w", l.Thread, l.Token, l.Owner, ErrLeased)
	}
	return fmt.Errorf("store: thread %q: lease %d of %s was taken over by %s: %w",
		l.Thread, l.Token, l.Owner, owner, ErrLeased)
}

// ReleasedError is the error for a Renew of l after l was released (by
// Release, or by a Delete of its thread): a released lease stays ended.
func ReleasedError(l Lease) error {
	return fmt.Errorf("store: thread %q: lease %d of %s was released: %w", l.Thread, l.Token, l.Owner, ErrLeased)
}

// FencedError is the error for a Put of cp under a lease older than the
// thread's current token (0: no lease).
func FencedError(cp *Checkpoint, current int64) error {
	return fmt.Errorf("store: put: thread %q checkpoint %d: lease %d, the thread's is %d: %w",
		cp.Thread, cp.ID, cp.Lease, current, ErrFenced)
}
