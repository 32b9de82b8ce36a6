package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// SweepOptions say how Engine.Sweep goes through a store's threads.
type SweepOptions struct {
	// Graph returns the graph of the pipeline a thread runs (nil when
	// unknown: the thread's history is then kept from its newest snapshot
	// on, without compaction); nil looks up none.
	Graph func(pipeline string) *Graph
	// PageSize is how many threads are listed at a time (default 500).
	PageSize int
}

// SweepResult counts what a sweep did.
type SweepResult struct {
	// Threads is how many threads it visited; Pruned how many
	// checkpoints it removed from them.
	Threads int `json:"threads"`
	Pruned  int `json:"pruned"`
	// Skipped counts the threads with history to drop that were running
	// (their lease held): the next sweep prunes them.
	Skipped int `json:"skipped"`
	// Failed counts the threads whose pruning failed.
	Failed int `json:"failed"`
}

// sweeperPrefix starts the lease owner of a retention sweep: a run that
// finds its thread leased by one waits for it (see acquire).
const sweeperPrefix = "retention-sweep/"

// SweeperOwner names owner as a lease owner that holds a thread's lease
// only briefly, to sweep or check it, as a retention sweep does: a run
// that finds its thread leased by one waits for it (at most two seconds)
// instead of refusing.
func SweeperOwner(owner string) string { return sweeperPrefix + owner }

// sweepWait bounds how long a run waits for a sweep that holds its
// thread's lease.
const sweepWait = 2 * time.Second

// Sweep applies ret to every thread of the store, a page of threads at a
// time: a thread with history to drop is pruned as Prune does, under its
// lease (a child thread's: its parent's), so it never races a run; a
// thread whose lease another owner holds is skipped without waiting. A
// run that starts while the sweep holds its thread waits for it (at most
// two seconds). Several sweeps at once, in one process or in replicas
// sharing the store, are kept apart by the same leases. A thread that
// fails to prune is counted and the sweep goes on; the error returned
// names the first, unless listing the threads failed or ctx ended.
func (e *Engine) Sweep(ctx context.Context, ret Retention, opts SweepOptions) (SweepResult, error) {
	var res SweepResult
	var first error
	if e.Store == nil {
		return res, errors.New("sweeping needs a store")
	}
	for after := ""; ; {
		page, err := e.Store.ThreadsAfter(ctx, after, cmp.Or(opts.PageSize, 500))
		if err != nil {
			return res, err
		}
		if len(page) == 0 {
			break
		}
		for _, t := range page {
			if err := e.sweepThread(ctx, t, ret, opts, &res); err != nil {
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				res.Failed++
				first = cmp.Or(first, fmt.Errorf("thread %s: %w", t.ID, err))
			}
		}
		after = page[len(page)-1].ID
	}
	if first != nil {
		return res, fmt.Errorf("retention sweep: %d thread(s) failed to prune; the first: %w", res.Failed, first)
	}
	return res, nil
}

// sweepThread prunes t if it has history beyond ret, under its lease.
func (e *Engine) sweepThread(ctx context.Context, t store.Thread, ret Retention, opts SweepOptions, res *SweepResult) error {
	res.Threads++
	hist, err := e.Store.History(ctx, t.ID)
	if errors.Is(err, store.ErrNotFound) { // deleted meanwhile
		return nil
	} else if err != nil {
		return err
	}
	if min(e.keepFrom(hist, ret), hist[len(hist)-1].ID) <= hist[0].ID {
		return nil // nothing to drop
	}
	// a child thread runs under its parent's lease, and writes without one
	root := access.Root(t.ID)
	l, err := e.Store.Acquire(ctx, root, sweeperPrefix+e.leaseOwner(), cmp.Or(e.LeaseTTL, DefaultLeaseTTL))
	if errors.Is(err, store.ErrLeased) {
		res.Skipped++
		return nil
	} else if err != nil {
		return err
	}
	defer func() { _ = e.Store.Release(context.WithoutCancel(ctx), l) }()
	var g *Graph
	if opts.Graph != nil {
		g = opts.Graph(t.Pipeline)
	}
	token := l.Token
	if root != t.ID {
		token = 0
	}
	n, err := e.prune(ctx, g, t.ID, ret, token)
	res.Pruned += n
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// acquire leases thread to the engine for ttl; when a retention sweep
// holds it, it tries again until the sweep is done, at most sweepWait on
// the engine's clock.
func (e *Engine) acquire(ctx context.Context, thread string, ttl time.Duration) (store.Lease, error) {
	clock := e.clock()
	deadline := clock.Now().Add(sweepWait)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		l, err := e.Store.Acquire(ctx, thread, e.leaseOwner(), ttl)
		held, ok := errors.AsType[*store.HeldError](err)
		if !ok || !strings.HasPrefix(held.Owner, sweeperPrefix) || clock.Now().After(deadline) {
			return l, err
		}
		if err := clock.Sleep(ctx, wait); err != nil {
			return l, err
		}
	}
}
