package runner

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// DefaultLeaseTTL is how long a run holds its thread without renewing its
// lease when Engine.LeaseTTL is zero.
const DefaultLeaseTTL = 30 * time.Second

// held is a run's lease on its thread, renewed while the run works.
type held struct {
	lease      store.Lease
	stop, done chan struct{} // the renewing goroutine's
	// released: the run's last checkpoint ended the lease
	// (store.Checkpoint.Release), one write fewer than Release.
	released bool
}

// token is the lease's token for the run's checkpoints: 0 for none.
func (h *held) token() int64 {
	if h == nil {
		return 0
	}
	return h.lease.Token
}

// lease acquires thread's lease for a run and renews it until release.
// A thread leased by another live run is ErrThreadBusy; one a retention
// sweep holds is waited for, briefly (Engine.Sweep). Without a store, and
// for a child thread (run under its parent's lease), there is no lease:
// nil.
func (e *Engine) lease(ctx context.Context, thread string) (*held, error) {
	if e.Store == nil || e.meter != nil {
		return nil, nil
	}
	ttl := cmp.Or(e.LeaseTTL, DefaultLeaseTTL)
	l, err := e.acquire(ctx, thread, ttl)
	if err != nil {
		return nil, busyElsewhere(thread, err)
	}
	h := &held{lease: l, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		e.renew(ctx, l, ttl, h.stop)
	}()
	return h, nil
}

// CheckFree tells whether a run could lease thread now: a thread another
// run leases — in any process sharing the store, or in one that stopped
// before its lease expired — is ErrThreadBusy, wrapping the store's
// *store.HeldError. It takes the lease and ends it at once: a server asks
// as it admits a run, so a thread busy elsewhere is refused before the run
// is made. A run that loses a race after it still fails with
// ErrThreadBusy as it starts.
func (e *Engine) CheckFree(ctx context.Context, thread string) error {
	l, err := e.acquire(ctx, thread, cmp.Or(e.LeaseTTL, DefaultLeaseTTL))
	if err != nil {
		return busyElsewhere(thread, err)
	}
	return e.Store.Release(context.WithoutCancel(ctx), l)
}

// busyElsewhere is err, from acquiring thread's lease, as ErrThreadBusy
// when another owner holds it.
func busyElsewhere(thread string, err error) error {
	if errors.Is(err, store.ErrLeased) {
		return fmt.Errorf("%w: thread %s is running elsewhere: %w", ErrThreadBusy, thread, err)
	}
	return err
}

// release stops renewing h and ends it, unless the run's last checkpoint
// did.
func (e *Engine) release(ctx context.Context, h *held) {
	if h == nil {
		return
	}
	close(h.stop)
	<-h.done
	if !h.released {
		// An error means the lease was taken over or the store is gone:
		// either way it expires.
		_ = e.Store.Release(context.WithoutCancel(ctx), h.lease)
	}
}

// renew renews l every third of ttl until stop is closed or the lease is
// taken over (the run's next checkpoint is then refused); a renewal that
// fails otherwise is tried again at the next tick.
func (e *Engine) renew(ctx context.Context, l store.Lease, ttl time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if _, err := e.Store.Renew(context.WithoutCancel(ctx), l, ttl); errors.Is(err, store.ErrLeased) {
				return
			}
		}
	}
}

// leaseOwner names this Engine as a lease owner: host, process and a
// random id, so two Engines of one process are two owners.
func (e *Engine) leaseOwner() string {
	e.ownerOnce.Do(func() { e.owner = processOwner() + rand.Text()[:8] })
	return e.owner
}

// processOwner is the start of this process's owner names, "host/pid/",
// asked of the system once: a server makes an Engine a run.
var processOwner = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/", host, os.Getpid())
})
