package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/storetest"
)

// stepNode adds one to n.
type stepNode struct{}

func (stepNode) Run(context.Context, *runner.Input) (runner.Update, error) {
	return runner.Update{"n": 1}, nil
}

// stepsGraph runs its node steps times: a thread of steps+1 checkpoints.
func stepsGraph(steps int) *runner.Graph {
	nodes := map[string]*runner.Step{}
	for i := range steps {
		next := fmt.Sprintf("s%d", i+1)
		if i == steps-1 {
			next = runner.End
		}
		nodes[fmt.Sprintf("s%d", i)] = &runner.Step{Name: fmt.Sprintf("s%d", i), Node: stepNode{}, Routes: []runner.Route{{To: next}}}
	}
	return &runner.Graph{Name: "steps", Start: "s0", MaxSteps: steps + 1, Hash: "h",
		Fields: map[string]runner.Field{"n": {Reducer: runner.Add, Default: int64(0)}}, Nodes: nodes}
}

// TestSweepReplicas sweeps one database from two stores at once, as two
// replicas would, while runs go on: the leases keep the sweeps apart and
// off the running threads, so each idle thread is compacted once and
// every run completes.
func TestSweepReplicas(t *testing.T) {
	db := newTestDB(t)
	a, b := db.open(t), db.open(t)
	ctx := context.Background()
	g := stepsGraph(5)
	const threads = 30
	for i := range threads {
		if _, err := (&runner.Engine{Store: a}).Run(ctx, g, fmt.Sprintf("t%02d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	opts := runner.SweepOptions{PageSize: 7, Graph: func(string) *runner.Graph { return g }}
	var wg sync.WaitGroup
	for i, st := range []store.Store{a, b} {
		wg.Go(func() {
			if _, err := (&runner.Engine{Store: st}).Sweep(ctx, runner.Retention{Keep: 1}, opts); err != nil {
				t.Errorf("sweep %d: %v", i, err)
			}
		})
	}
	wg.Go(func() { // a new turn of every third thread meanwhile
		for i := 0; i < threads; i += 3 {
			if _, err := (&runner.Engine{Store: b}).Run(ctx, g, fmt.Sprintf("t%02d", i), nil); err != nil {
				t.Errorf("run during the sweeps: %v", err)
			}
		}
	})
	wg.Wait()
	for i := range threads {
		th := fmt.Sprintf("t%02d", i)
		want := int64(5)
		if i%3 == 0 {
			want = 10
		}
		if ts, err := (&runner.Engine{Store: a}).State(ctx, g, th, 0); err != nil || ts.State["n"] != want {
			t.Errorf("%s: %+v, %v; want n %d", th, ts, err, want)
		}
		if hist, err := a.History(ctx, th); i%3 != 0 && (err != nil || len(hist) != 1 || hist[0].ID != 7) {
			t.Errorf("%s: history %v, %v; want one checkpoint, the compaction 7", th, storetest.IDs(hist), err)
		}
	}
}
