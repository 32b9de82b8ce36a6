package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
)

// sweepThreads is how many threads BenchmarkRetentionSweep's store holds.
const sweepThreads = 10_000

// countGraph adds one to n per step, five steps.
func countGraph() *runner.Graph {
	return &runner.Graph{Name: "count", Start: "inc", MaxSteps: 20, Hash: "bench",
		Fields: map[string]runner.Field{"n": {Reducer: runner.Add, Default: int64(0)}},
		Nodes: map[string]*runner.Step{"inc": {Name: "inc",
			Node: fn(func(context.Context, *runner.Input) (runner.Update, error) { return runner.Update{"n": 1}, nil }),
			Routes: []runner.Route{{When: cond(func(s runner.State) bool { return s["n"].(int64) >= 5 }), To: runner.End},
				{To: "inc"}}}}}
}

// BenchmarkRetentionSweep is a retention sweep (Engine.Sweep, what
// runner serve runs in the background and threads prune without names)
// of an SQLite store of 10,000 completed threads of six checkpoints each:
// all_pruned keeps 1 (each thread is compacted and loses six), none keeps
// 100 (nothing to drop). The baseline, in the same run, is what threads
// prune did before: list every thread, then Engine.Prune each, without
// leases.
func BenchmarkRetentionSweep(b *testing.B) {
	template := filepath.Join(b.TempDir(), "template.db")
	fillThreads(b, template, sweepThreads)
	for _, policy := range []struct {
		name string
		ret  runner.Retention
	}{{"all_pruned", runner.Retention{Keep: 1}}, {"none", runner.Retention{Keep: 100}}} {
		for _, way := range []struct {
			name  string
			sweep func(context.Context, *runner.Engine, runner.Retention) (int, error)
		}{{"sweep", sweepAll}, {"prune_loop", pruneEach}} {
			b.Run(policy.name+"/"+way.name, func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					st := openCopy(b, template)
					e := &runner.Engine{Store: st}
					b.StartTimer()
					n, err := way.sweep(context.Background(), e, policy.ret)
					b.StopTimer()
					if want := map[string]int{"all_pruned": 6 * sweepThreads}[policy.name]; err != nil || n != want {
						b.Fatalf("pruned %d checkpoints, %v; want %d", n, err, want)
					}
					st.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*sweepThreads), "µs/thread")
			})
		}
	}
}

// sweepAll is Engine.Sweep, finding countGraph.
func sweepAll(ctx context.Context, e *runner.Engine, ret runner.Retention) (int, error) {
	g := countGraph()
	res, err := e.Sweep(ctx, ret, runner.SweepOptions{Graph: func(string) *runner.Graph { return g }})
	return res.Pruned, err
}

// pruneEach lists every thread, then prunes each.
func pruneEach(ctx context.Context, e *runner.Engine, ret runner.Retention) (int, error) {
	g := countGraph()
	all, err := e.Store.Threads(ctx, 0)
	total := 0
	for _, t := range all {
		n, err := e.Prune(ctx, g, t.ID, ret)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, err
}

// fillThreads writes n completed threads of countGraph to a new SQLite
// file at path: one run's checkpoints, copied under n thread IDs.
func fillThreads(b *testing.B, path string, n int) {
	ctx := context.Background()
	mem := store.NewMemory()
	if _, err := (&runner.Engine{Store: mem}).Run(ctx, countGraph(), "t", nil); err != nil {
		b.Fatal(err)
	}
	hist, _ := mem.History(ctx, "t")
	var cps []*store.Checkpoint
	for _, h := range hist {
		full, err := mem.Load(ctx, "t", h.ID)
		if err != nil {
			b.Fatal(err)
		}
		cps = append(cps, full[len(full)-1])
	}
	st, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var wg sync.WaitGroup
	for w := range 8 { // concurrent writers: their Puts commit in groups
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				for _, cp := range cps {
					c := *cp
					c.Thread, c.Lease = fmt.Sprintf("thread-%05d", i), 0
					if err := st.Put(ctx, &c); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// openCopy opens a copy of the SQLite file at path.
func openCopy(b *testing.B, path string) store.Store {
	dst := filepath.Join(b.TempDir(), "copy.db")
	in, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	st, err := sqlite.Open(dst)
	if err != nil {
		b.Fatal(err)
	}
	return st
}
