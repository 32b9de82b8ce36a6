package bench

import (
	"context"
	"testing"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
)

// BenchmarkThreadRead is what a thread view costs (the CLI's threads show
// and history, the HTTP API's state and history): a thread's state,
// rebuilt through the reducers, and its 100 newest history entries, for a
// thread of 100 steps whose state holds a 100-message conversation. The
// memory store is the baseline; the target is under 1 ms on SQLite.
func BenchmarkThreadRead(b *testing.B) {
	const steps = 100
	g := &runner.Graph{Name: "chat", Start: "say", Hash: "bench",
		Fields: map[string]runner.Field{"n": {Reducer: runner.Add, Default: int64(0)}, "messages": {Reducer: runner.Append}},
		Nodes: map[string]*runner.Step{"say": {Name: "say",
			Node: fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
				msg := map[string]any{"role": "assistant", "content": "a reply of a few words, as a chat turn would have"}
				return runner.Update{"n": 1, "messages": []any{msg}}, nil
			}),
			Routes: []runner.Route{{When: cond(func(s runner.State) bool { return s["n"].(int64) >= steps }), To: runner.End}, {To: "say"}},
		}},
	}
	open := map[string]func(b *testing.B) store.Store{
		"memory": func(*testing.B) store.Store { return store.NewMemory() },
		"sqlite": func(b *testing.B) store.Store {
			st, err := sqlite.Open(b.TempDir() + "/read.db")
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
	}
	for _, name := range []string{"memory", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			st := open[name](b)
			defer st.Close()
			e := &runner.Engine{Store: st}
			ctx := context.Background()
			if _, err := e.Run(ctx, g, "t", nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				ts, err := e.State(ctx, g, "t", 0)
				if err != nil || len(ts.State["messages"].([]any)) != steps {
					b.Fatalf("state: %v", err)
				}
				hist, err := st.History(ctx, "t")
				if err != nil || len(hist) < steps {
					b.Fatalf("history: %d entries, %v", len(hist), err)
				}
			}
		})
	}
}
