package runner_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// fixedClock is the real clock, but for Now, which reads now.
type fixedClock struct {
	runner.RealClock
	now time.Time
}

func (c fixedClock) Now() time.Time { return c.now }

// sweepOpts finds loopGraph(10, 50) for pipeline loop.
var sweepOpts = runner.SweepOptions{PageSize: 2, Graph: func(name string) *runner.Graph {
	if name == "loop" {
		return loopGraph(10, 50)
	}
	return nil
}}

// loopThreads runs loopGraph(10, 50) to its end on each thread, at time at.
func loopThreads(t *testing.T, st store.Store, at time.Time, threads ...string) {
	t.Helper()
	e := &runner.Engine{Store: st, Clock: fixedClock{now: at}}
	for _, th := range threads {
		if res, err := e.Run(context.Background(), loopGraph(10, 50), th, nil); err != nil || res.Status != runner.StatusCompleted {
			t.Fatalf("Run(%s) = %+v, %v", th, res, err)
		}
	}
}

// history returns thread's checkpoints.
func history(t *testing.T, st store.Store, thread string) []*store.Checkpoint {
	t.Helper()
	hist, err := st.History(context.Background(), thread)
	if err != nil {
		t.Fatalf("History(%s): %v", thread, err)
	}
	return hist
}

func TestSweepPrunesIdleThreadsSkipsLeasedOnes(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	loopThreads(t, st, at, "a", "b", "busy")
	before := history(t, st, "a")
	if len(before) < 10 {
		t.Fatalf("thread a has %d checkpoints, want a history to prune", len(before))
	}
	if _, err := st.Acquire(ctx, "busy", "another run", time.Minute); err != nil {
		t.Fatal(err)
	}
	e := &runner.Engine{Store: st}
	res, err := e.Sweep(ctx, runner.Retention{Keep: 1}, sweepOpts)
	want := runner.SweepResult{Threads: 3, Pruned: 2 * len(before), Skipped: 1}
	if err != nil || res != want {
		t.Fatalf("Sweep = %+v, %v; want %+v", res, err, want)
	}
	for _, th := range []string{"a", "b"} {
		hist := history(t, st, th)
		newest := before[len(before)-1]
		if len(hist) != 1 || hist[0].ID != newest.ID+1 || !hist[0].CreatedAt.Equal(newest.CreatedAt) {
			t.Errorf("%s after Sweep: %d checkpoints, newest %d at %v; want one compaction, %d at %v",
				th, len(hist), hist[len(hist)-1].ID, hist[len(hist)-1].CreatedAt, newest.ID+1, newest.CreatedAt)
		}
		if ts, err := e.State(ctx, loopGraph(10, 50), th, 0); err != nil || ts.State["n"] != int64(10) || ts.Status != runner.StatusCompleted {
			t.Errorf("State(%s) after Sweep = %+v, %v; want completed with n 10", th, ts, err)
		}
	}
	if n := len(history(t, st, "busy")); n != len(before) {
		t.Errorf("leased thread has %d checkpoints after Sweep, want its %d", n, len(before))
	}
	again, err := e.Sweep(ctx, runner.Retention{Keep: 1}, sweepOpts)
	if want := (runner.SweepResult{Threads: 3, Skipped: 1}); err != nil || again != want {
		t.Errorf("second Sweep = %+v, %v; want %+v (nothing left to prune)", again, err, want)
	}
	if res, err := e.Run(ctx, loopGraph(11, 50), "a", nil); err != nil || res.State["n"] != int64(11) {
		t.Errorf("new turn of a swept thread = %+v, %v; want n 11", res, err)
	}
}

func TestSweepByAge(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	loopThreads(t, st, at, "old")
	loopThreads(t, st, at.Add(3*time.Hour), "young")
	before := len(history(t, st, "young"))
	sweep := func(now time.Time) runner.SweepResult {
		t.Helper()
		res, err := (&runner.Engine{Store: st, Clock: fixedClock{now: now}}).Sweep(ctx, runner.Retention{MaxAge: 2 * time.Hour}, sweepOpts)
		if err != nil {
			t.Fatalf("Sweep at %v: %v", now, err)
		}
		return res
	}
	if res := sweep(at.Add(time.Hour)); res.Pruned != 0 {
		t.Errorf("Sweep an hour after the runs pruned %d checkpoints, want 0", res.Pruned)
	}
	res := sweep(at.Add(4 * time.Hour))
	if res.Pruned != before || len(history(t, st, "old")) != 1 || len(history(t, st, "young")) != before {
		t.Errorf("Sweep at +4h pruned %d; old has %d checkpoints (want 1), young %d (want %d)",
			res.Pruned, len(history(t, st, "old")), len(history(t, st, "young")), before)
	}
	newest := history(t, st, "old")[0]
	if res := sweep(at.Add(400 * time.Hour)); res.Pruned != before || history(t, st, "old")[0].ID != newest.ID {
		t.Errorf("Sweep at +400h pruned %d (want young's %d) and left old at %d (want %d: compacted once)",
			res.Pruned, before, history(t, st, "old")[0].ID, newest.ID)
	}
}

func TestRunWaitsForASweep(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	loopThreads(t, st, time.Now(), "t")
	l, err := st.Acquire(ctx, "t", "retention-sweep/elsewhere", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, func() { _ = st.Release(ctx, l) })
	if res, err := (&runner.Engine{Store: st}).Run(ctx, loopGraph(11, 50), "t", nil); err != nil || res.Status != runner.StatusCompleted {
		t.Errorf("Run while a sweep holds the thread = %+v, %v; want it to wait and complete", res, err)
	}
	if _, err := st.Acquire(ctx, "t", "retention-sweep/stuck", time.Minute); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = (&runner.Engine{Store: st}).Run(ctx, loopGraph(12, 50), "t", nil)
	if waited := time.Since(start); !errors.Is(err, runner.ErrThreadBusy) || waited < time.Second || waited > 5*time.Second {
		t.Errorf("Run under a stuck sweep = %v after %v; want runner.ErrThreadBusy after about 2s", err, waited)
	}
}

// TestConcurrentSweeps runs two sweeps of one store at once, as two
// replicas would: the leases keep them apart, so every thread is pruned
// and compacted once, by one of them.
func TestConcurrentSweeps(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	var threads []string
	for i := range 20 {
		threads = append(threads, fmt.Sprintf("t%02d", i))
	}
	loopThreads(t, st, time.Now(), threads...)
	per := len(history(t, st, "t00"))
	var results [2]runner.SweepResult
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			var err error
			if results[i], err = (&runner.Engine{Store: st}).Sweep(ctx, runner.Retention{Keep: 1}, sweepOpts); err != nil {
				t.Errorf("Sweep %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if pruned := results[0].Pruned + results[1].Pruned; pruned != len(threads)*per {
		t.Errorf("sweeps pruned %d checkpoints (%+v), want %d", pruned, results, len(threads)*per)
	}
	for _, th := range threads {
		if hist := history(t, st, th); len(hist) != 1 || hist[0].ID != int64(per)+1 {
			t.Errorf("%s: checkpoints %d..%d, want one compaction, %d", th, hist[0].ID, hist[len(hist)-1].ID, per+1)
		}
	}
}
