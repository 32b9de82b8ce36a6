package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// Several servers (replicas) may share one store, each running the runs
// it admitted. A run left pending or running by a server that died is a
// ghost: nothing will end it. A live run holds its thread's lease and
// renews it, so a run that has not changed status for a lease TTL while
// its thread is not leased is a ghost; any server marks it error (reap),
// when it reads it and in a sweep every lease TTL. Its thread resumes from
// its last checkpoint.

// leaseTTL is the lease TTL of the server's runs.
func (s *Server) leaseTTL() time.Duration { return cmp.Or(s.cfg.LeaseTTL, runner.DefaultLeaseTTL) }

// reaperOwner names the server as the owner of the leases it takes while
// it reaps a run.
func reaperOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("server/%s/%d", host, os.Getpid())
}

// sweep reaps the ghost runs of the store, and removes its expired
// items, every lease TTL until the server shuts down.
func (s *Server) sweep() {
	defer close(s.swept)
	s.every(s.leaseTTL(), func() {
		if err := s.reapAll(s.ctx); err != nil && s.ctx.Err() == nil {
			s.cfg.Log.Error("sweeping runs of stopped servers", "err", err)
		}
		s.sweepItems()
	})
}

// every runs f every d until the server shuts down.
func (s *Server) every(d time.Duration, f func()) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
			f()
		}
	}
}

// reapAll reaps every ghost run of the store.
func (s *Server) reapAll(ctx context.Context) error {
	stale, err := s.runs.RunsWithStatus(ctx, store.RunPending, store.RunRunning)
	if err != nil {
		return fmt.Errorf("server: looking for runs of stopped servers: %w", err)
	}
	for i := range stale {
		if _, err := s.reap(ctx, &stale[i]); err != nil {
			return err
		}
	}
	return nil
}

// reap marks rec error, with an error event and the end of its stream, if
// it is a ghost, and returns the run as it now stands. It holds the
// thread's lease while it checks and marks, so no run starts on the
// thread meanwhile.
func (s *Server) reap(ctx context.Context, rec *store.RunRecord) (*store.RunRecord, error) {
	if !s.mayBeGhost(rec) {
		return rec, nil
	}
	l, err := s.cfg.Store.Acquire(ctx, rec.Thread, s.owner, s.leaseTTL())
	if errors.Is(err, store.ErrLeased) { // a live run holds the thread
		return rec, nil
	} else if err != nil {
		return nil, fmt.Errorf("server: checking run %s: %w", rec.ID, err)
	}
	defer func() { _ = s.cfg.Store.Release(context.WithoutCancel(ctx), l) }()
	cur, err := s.runs.Run(ctx, rec.ID) // as it stands under the lease
	if err != nil || !s.mayBeGhost(cur) {
		return cur, err
	}
	msg := fmt.Sprintf("run %s was %s when the server running it stopped; its thread resumes from its last checkpoint: "+
		"start a run without input (with command.resume if it waits on an interrupt)", cur.ID, cur.Status)
	evs := s.add(nil, cur.ID, "error", runFailed("server_lost", msg))
	if err := s.runs.EndRun(ctx, cur.ID, store.RunError, s.add(evs, cur.ID, "end", nil)); err != nil {
		return nil, fmt.Errorf("server: marking run %s error: %w", cur.ID, err)
	}
	s.cfg.Log.Warn("run left by a stopped server marked error", "run", cur.ID, "thread", cur.Thread, "was", cur.Status)
	return s.runs.Run(ctx, cur.ID)
}

// mayBeGhost reports whether rec is pending or running, not in this
// server, and has not changed status for a lease TTL: a ghost unless a
// live run holds its thread's lease.
func (s *Server) mayBeGhost(rec *store.RunRecord) bool {
	return (rec.Status == store.RunPending || rec.Status == store.RunRunning) &&
		s.liveRun(rec.ID) == nil && time.Since(rec.UpdatedAt) >= s.leaseTTL()
}
