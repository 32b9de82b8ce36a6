package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// sqliteAcquire leases thread ?1 to owner ?2 until ?4 if it has no lease
// or its lease expired by ?3, with the next token; it returns no row when
// another owner holds the thread. The thread must have its key
// (sqliteAddKey, run first).
const sqliteAcquire = `
INSERT OR ROLLBACK INTO leases (tkey, owner, token, expires_at) VALUES (` + sqliteKey + `, ?2, 1, ?4)
ON CONFLICT (tkey) DO UPDATE SET owner = excluded.owner, token = leases.token + 1,
	expires_at = excluded.expires_at
WHERE leases.expires_at <= ?3
RETURNING token`

// sqliteHolder is the owner, token and expiry of thread ?1's lease.
const sqliteHolder = `SELECT owner, token, expires_at FROM leases WHERE tkey = ` + sqliteKey

// sqliteRenew sets the expiry of lease ?2 of thread ?1 to ?3 if current,
// and not released when renewing (?3 > 0).
const sqliteRenew = `UPDATE OR ROLLBACK leases SET expires_at = ?3
WHERE tkey = ` + sqliteKey + ` AND token = ?2 AND (?3 = 0 OR expires_at > 0)`

func (s *sqliteStore) Acquire(ctx context.Context, thread, owner string, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLease(thread, owner, ttl); err != nil {
		return store.Lease{}, err
	}
	now := time.Now()
	l := store.Lease{Thread: thread, Owner: owner, Expires: now.Add(ttl).UTC()}
	var err error
	l.Token, err = s.commitPut(ctx, &putReq{query: sqliteAcquire, returning: true,
		args:   []any{thread, owner, now.UnixNano(), l.Expires.UnixNano()},
		before: &putReq{query: sqliteAddKey, args: []any{thread}}})
	if err == nil && l.Token == 0 {
		holder, _, expires, herr := s.holder(ctx, thread)
		if herr != nil {
			return store.Lease{}, fmt.Errorf("store: acquire: thread %q: %w", thread, fault(herr))
		}
		return store.Lease{}, store.LeasedError(thread, holder, expires)
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("store: acquire: thread %q: %w", thread, fault(err))
	}
	return l, nil
}

// holder returns the owner, token and expiry of thread's lease; "", 0 and
// the zero time if it has none.
func (s *sqliteStore) holder(ctx context.Context, thread string) (string, int64, time.Time, error) {
	var owner string
	var token, expires int64
	err := s.w.QueryRowContext(ctx, sqliteHolder, thread).Scan(&owner, &token, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, time.Time{}, nil
	}
	return owner, token, time.Unix(0, expires).UTC(), err
}

func (s *sqliteStore) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	l.Expires = time.Now().Add(ttl).UTC()
	if err := s.setExpiry(ctx, l, l.Expires.UnixNano()); err != nil {
		return store.Lease{}, err
	}
	return l, nil
}

func (s *sqliteStore) Release(ctx context.Context, l store.Lease) error {
	return s.setExpiry(ctx, l, 0)
}

// setExpiry sets the expiry of l if it is still the thread's lease, else
// returns the store.ErrLeased naming who took it over.
func (s *sqliteStore) setExpiry(ctx context.Context, l store.Lease, expires int64) error {
	n, err := s.commitPut(ctx, &putReq{query: sqliteRenew, args: []any{l.Thread, l.Token, expires}})
	if err != nil {
		return fmt.Errorf("store: lease of thread %q: %w", l.Thread, fault(err))
	}
	if n == 1 {
		return nil
	}
	owner, token, _, err := s.holder(ctx, l.Thread)
	if err != nil {
		return fmt.Errorf("store: lease of thread %q: %w", l.Thread, fault(err))
	}
	if token == l.Token {
		return store.ReleasedError(l)
	}
	return store.LostError(l, owner)
}

// fenced returns the store.ErrFenced for a Put of cp that did not insert
// because cp.Lease is not the thread's token; nil if it is.
func (s *sqliteStore) fenced(ctx context.Context, cp *store.Checkpoint) error {
	if cp.Lease == 0 {
		return nil
	}
	_, token, _, err := s.holder(ctx, cp.Thread)
	if err != nil {
		return fmt.Errorf("store: put: thread %q checkpoint %d: %w", cp.Thread, cp.ID, fault(err))
	}
	if token != cp.Lease {
		return store.FencedError(cp, token)
	}
	return nil
}
