package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/runner-dev/runner/runner/store"
)

// pgNow is the database's clock in Unix nanoseconds: leases expire by one
// clock, whatever the clocks of the machines that hold them.
const pgNow = `(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint`

// pgAcquire leases thread $1 to owner $2 for $3 nanoseconds if it has no
// lease or its lease expired, with the next token; it returns no row
// when another owner holds the thread. Concurrent acquirers queue on the
// lease row, and each sees the one before it.
const pgAcquire = `
WITH now AS (SELECT ` + pgNow + ` AS ns)
INSERT INTO leases AS l (thread, owner, token, expires_at)
SELECT $1, $2, 1, ns + $3 FROM now
ON CONFLICT (thread) DO UPDATE SET owner = excluded.owner, token = l.token + 1,
	expires_at = excluded.expires_at
WHERE l.expires_at <= (SELECT ns FROM now)
RETURNING token, expires_at`

// pgHolder is the owner, token and expiry of thread $1's lease.
const pgHolder = `SELECT owner, token, expires_at FROM leases WHERE thread = $1`

// pgExpire sets the expiry of lease $2 of thread $1 to $3 nanoseconds
// from now, or to 0 (released) when $3 is NULL, if the lease is current
// and, when renewing, not released.
const pgExpire = `UPDATE leases SET expires_at = coalesce(` + pgNow + ` + $3, 0)
WHERE thread = $1 AND token = $2 AND ($3::bigint IS NULL OR expires_at > 0) RETURNING expires_at`

func (s *pgStore) Acquire(ctx context.Context, thread, owner string, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLease(thread, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	l := store.Lease{Thread: thread, Owner: owner}
	var expires int64
	err := s.pool.QueryRow(ctx, pgAcquire, thread, owner, ttl.Nanoseconds()).Scan(&l.Token, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		holder, _, until, herr := s.holder(ctx, thread)
		if herr != nil {
			return store.Lease{}, fmt.Errorf("store: acquire: thread %q: %w", thread, fault(herr))
		}
		return store.Lease{}, store.LeasedError(thread, holder, until)
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("store: acquire: thread %q: %w", thread, fault(err))
	}
	l.Expires = time.Unix(0, expires).UTC()
	return l, nil
}

// holder returns the owner, token and expiry of thread's lease; "", 0 and
// the zero time if it has none.
func (s *pgStore) holder(ctx context.Context, thread string) (string, int64, time.Time, error) {
	var owner string
	var token, expires int64
	err := s.pool.QueryRow(ctx, pgHolder, thread).Scan(&owner, &token, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, time.Time{}, nil
	}
	return owner, token, time.Unix(0, expires).UTC(), err
}

func (s *pgStore) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	ns := ttl.Nanoseconds()
	expires, err := s.expire(ctx, l, &ns)
	if err != nil {
		return store.Lease{}, err
	}
	l.Expires = time.Unix(0, expires).UTC()
	return l, nil
}

func (s *pgStore) Release(ctx context.Context, l store.Lease) error {
	_, err := s.expire(ctx, l, nil)
	return err
}

// expire runs pgExpire for l, once more if the connection was lost; if l
// is no longer the thread's lease, or was released, it returns the
// store.ErrLeased naming who took it over or saying it was released.
func (s *pgStore) expire(ctx context.Context, l store.Lease, ttl *int64) (int64, error) {
	var expires int64
	err := s.retry(ctx, func() error {
		return s.pool.QueryRow(ctx, pgExpire, l.Thread, l.Token, ttl).Scan(&expires)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		owner, token, _, herr := s.holder(ctx, l.Thread)
		if herr != nil {
			return 0, fmt.Errorf("store: lease of thread %q: %w", l.Thread, fault(herr))
		}
		if token == l.Token {
			return 0, store.ReleasedError(l)
		}
		return 0, store.LostError(l, owner)
	}
	if err != nil {
		return 0, fmt.Errorf("store: lease of thread %q: %w", l.Thread, fault(err))
	}
	return expires, nil
}

// fenced returns the store.ErrFenced for a Put of cp that did not insert
// because cp.Lease is not the thread's token; nil if it is.
func (s *pgStore) fenced(ctx context.Context, cp *store.Checkpoint) error {
	if cp.Lease == 0 {
		return nil
	}
	_, token, _, err := s.holder(ctx, cp.Thread)
	if err != nil {
		return err
	}
	if token != cp.Lease {
		return store.FencedError(cp, token)
	}
	return nil
}
