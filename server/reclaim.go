package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// Several servers (replicas) may share one store, each running the runs
// it admitted. A run left pending or running by a server that died is a
// ghost: nothing will end it. A live run holds its thread's lease and
// renews it, so a run that has not changed status for a lease TTL while
// its thread is not leased is a ghost; any server that finds one, when it
// reads it and in a sweep every lease TTL, takes it over (reclaim): it
// continues the run under the same id from its thread's last checkpoint,
// its events going on in the same log. One that cannot be continued here
// is marked error.

// maxAttempts is how many times a run is started, by the server that
// admitted it and by those that took it over, before a ghost of it is
// marked error instead: a run that makes its servers die ends.
const maxAttempts = 3

// leaseTTL is the lease TTL of the server's runs.
func (s *Server) leaseTTL() time.Duration { return cmp.Or(s.cfg.LeaseTTL, runner.DefaultLeaseTTL) }

// reclaimerOwner names the server as the owner of the leases it takes
// while it checks a run, briefly: a run starting meanwhile waits for it.
func reclaimerOwner() string {
	host, _ := os.Hostname()
	return runner.SweeperOwner(fmt.Sprintf("server/%s/%d", host, os.Getpid()))
}

// sweep reclaims the ghost runs of the store, and removes its expired
// items, every lease TTL until the server shuts down.
func (s *Server) sweep() {
	defer close(s.swept)
	s.every(s.leaseTTL(), func() {
		if err := s.reclaimAll(s.ctx); err != nil && s.ctx.Err() == nil {
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

// reclaimAll reclaims every ghost run of the store.
func (s *Server) reclaimAll(ctx context.Context) error {
	stale, err := s.runs.RunsWithStatus(ctx, store.RunPending, store.RunRunning)
	if err != nil {
		return fmt.Errorf("server: looking for runs of stopped servers: %w", err)
	}
	for i := range stale {
		if _, err := s.reclaim(ctx, &stale[i]); err != nil {
			return err
		}
	}
	return nil
}

// reclaim takes rec over if it is a ghost — it runs here from now on, or
// ends with an error saying why it cannot — and returns the run as it now
// stands. The runs of a thread are taken over in order: a ghost behind
// another waits for it.
func (s *Server) reclaim(ctx context.Context, rec *store.RunRecord) (*store.RunRecord, error) {
	if !s.mayBeGhost(rec) {
		return rec, nil
	}
	start, err := s.takeOver(ctx, rec)
	if err != nil {
		return nil, err
	}
	if start != nil { // the thread's lease is released: the run takes it
		start()
	}
	return s.runs.Run(ctx, rec.ID)
}

// takeOver checks, under the thread's lease (so no run starts on the
// thread meanwhile), that the oldest unended run of rec's thread is a
// ghost, and then claims it: its status
// is written again, so no other server takes it over before it runs here,
// and what starts it here is returned, to be called once the lease is
// released. A run that cannot be continued here is marked error, with an
// error event and the end of its stream.
func (s *Server) takeOver(ctx context.Context, rec *store.RunRecord) (func(), error) {
	lease, err := s.cfg.Store.Acquire(ctx, rec.Thread, s.owner, s.leaseTTL())
	if errors.Is(err, store.ErrLeased) { // a live run holds the thread
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("server: checking run %s: %w", rec.ID, err)
	}
	defer func() { _ = s.cfg.Store.Release(context.WithoutCancel(ctx), lease) }()
	cur, err := s.firstUnended(ctx, rec) // as it stands under the lease
	if err != nil || cur == nil || !s.mayBeGhost(cur) {
		return nil, err
	}
	l, attempt, err := s.resurrect(ctx, cur)
	if errors.Is(err, errLost) {
		return nil, s.lose(ctx, cur, err)
	} else if err != nil {
		return nil, fmt.Errorf("server: taking over run %s: %w", cur.ID, err)
	}
	meta := map[string]any{"run_id": cur.ID, "thread_id": access.ThreadID(cur.Thread), "attempt": attempt}
	if cur.Status == store.RunRunning {
		meta["from"] = l.from
	}
	if _, err := s.runs.AppendEvents(ctx, cur.ID, s.add(nil, cur.ID, "metadata", meta)); err != nil {
		return nil, fmt.Errorf("server: taking over run %s: %w", cur.ID, err)
	}
	if err := s.runs.SetRunStatus(ctx, cur.ID, cur.Status); err != nil { // now: no ghost for a lease TTL
		return nil, fmt.Errorf("server: taking over run %s: %w", cur.ID, err)
	}
	s.cfg.Log.Warn("run left by a stopped server taken over", "run", cur.ID, "thread", cur.Thread, "was", cur.Status, "attempt", attempt)
	return func() { s.resume(l) }, nil
}

// firstUnended returns the oldest run of rec's thread that is pending or
// running, the one to take over first (nil: none is).
func (s *Server) firstUnended(ctx context.Context, rec *store.RunRecord) (*store.RunRecord, error) {
	runs, err := s.runs.Runs(ctx, rec.Thread)
	if err != nil {
		return nil, err
	}
	for i := range runs {
		if runs[i].Status == store.RunPending || runs[i].Status == store.RunRunning {
			return &runs[i], nil
		}
	}
	return nil, nil
}

// errLost wraps why a ghost run cannot be continued here.
var errLost = errors.New("cannot be continued here")

// lose marks rec error: a ghost run that cannot be continued here, for
// the reason err gives.
func (s *Server) lose(ctx context.Context, rec *store.RunRecord, err error) error {
	msg := fmt.Sprintf("run %s was %s when the server running it stopped, and %v; its thread resumes from its last checkpoint: "+
		"start a run without input (with command.resume if it waits on an interrupt)", rec.ID, rec.Status, err)
	evs := s.add(nil, rec.ID, "error", runFailed("server_lost", msg))
	if err := s.runs.EndRun(ctx, rec.ID, store.RunError, s.add(evs, rec.ID, "end", nil)); err != nil {
		return fmt.Errorf("server: marking run %s error: %w", rec.ID, err)
	}
	s.cfg.Log.Warn("run left by a stopped server marked error", "run", rec.ID, "thread", rec.Thread, "was", rec.Status, "why", msg)
	return nil
}

// resurrect rebuilds the ghost run rec from its request (Kwargs) and its
// log, and returns it with the number of its attempt here. A run still
// pending is planned when it starts, as a queued one. A running one
// starts from its thread's newest checkpoint: where it wrote none, it is
// made again from its request; where it did, it goes on from there
// (modeGoOn). An error wrapping errLost says why it cannot be continued.
func (s *Server) resurrect(ctx context.Context, rec *store.RunRecord) (*liveRun, int, error) {
	g := s.cfg.Graphs[rec.Assistant]
	if g == nil {
		return nil, 0, fmt.Errorf("%w: this server does not serve its graph %s", errLost, rec.Assistant)
	}
	evs, err := s.runs.Events(ctx, rec.ID, 0)
	if err != nil {
		return nil, 0, err
	}
	attempt, from := attempts(evs)
	if attempt > maxAttempts {
		return nil, 0, fmt.Errorf("%w: it was started %d times, on servers that each stopped", errLost, maxAttempts)
	}
	q, err := s.request(ctx, rec, g)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: its request: %w", errLost, err)
	}
	l := newLiveRun(s.ctx, rec, q, g, false)
	if rec.Status != store.RunRunning {
		return l, attempt, nil
	}
	h, err := s.cfg.Store.History(ctx, rec.Thread)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, 0, err
	}
	if from < 0 { // the first server to take it over: its start is when it was set running
		from = 0
		for _, cp := range h {
			if cp.CreatedAt.Before(rec.UpdatedAt) {
				from = cp.ID
			}
		}
	}
	if l.from = from; len(h) > 0 && h[len(h)-1].ID > from {
		l.plan = &planned{mode: modeGoOn, from: from}
	}
	return l, attempt, nil
}

// attempts reads a run's log: the number of the attempt about to start
// (its metadata events are one per start, the first one's possibly never
// written) and the checkpoint its thread stood at when it first ran, as
// the server that first took it over wrote it (-1: none did).
func attempts(evs []store.RunEvent) (next int, from int64) {
	n, from := 0, int64(-1)
	for _, ev := range evs {
		if ev.Event != "metadata" {
			continue
		}
		n++
		var m struct {
			From *int64 `json:"from"`
		}
		if json.Unmarshal(ev.Data, &m) == nil && m.From != nil {
			from = *m.From
		}
	}
	return max(n, 1) + 1, from
}

// request rebuilds the request of rec, a run of g, from its Kwargs, as
// createRun read it for the principal who made it.
func (s *Server) request(ctx context.Context, rec *store.RunRecord, g *runner.Graph) (*runRequest, error) {
	kept := keptRequest{runRequest: &runRequest{}}
	if err := json.Unmarshal(rec.Kwargs, &kept); err != nil {
		return nil, err
	}
	q := kept.runRequest
	q.expire = kept.Expire
	if err := q.read(); err != nil {
		return nil, err
	}
	if q.opts.As = kept.As; q.opts.As.Tenant == "" { // kept before principals were: the run's tenant's
		q.opts.As.Tenant = rec.Tenant
	}
	a, err := s.prepare(access.NewContext(ctx, q.opts.As), q)
	if err == nil && a.g != g {
		err = fmt.Errorf("its assistant %s runs graph %s now, not %s", q.AssistantID, a.name, rec.Assistant)
	}
	return q, err
}

// resume runs l, a run taken over, here: at once, or after the run of its
// thread this server runs.
func (s *Server) resume(l *liveRun) {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing { // another server takes it over
		return
	}
	s.live[l.rec.ID] = l
	s.runAdmitted(l.rec.Thread)
	if s.active[l.rec.Thread] != nil || len(s.queued[l.rec.Thread]) > 0 {
		s.queued[l.rec.Thread] = append(s.queued[l.rec.Thread], l)
		return
	}
	s.start(l)
}

// mayBeGhost reports whether rec is pending or running, not in this
// server, and has not changed status for a lease TTL: a ghost unless a
// live run holds its thread's lease.
func (s *Server) mayBeGhost(rec *store.RunRecord) bool {
	return (rec.Status == store.RunPending || rec.Status == store.RunRunning) &&
		s.liveRun(rec.ID) == nil && time.Since(rec.UpdatedAt) >= s.leaseTTL()
}
