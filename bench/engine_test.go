package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
	"github.com/runner-dev/runner/runner/store/stores"
)

var tools = []string{"context_tool", "pattern_tool", "similarity_tool", "reasoning_tool", "recommendation_tool", "rule_draft_tool"}

// stepsPerRun is the 004 loop: 7 planner steps, 6 tool steps, completion.
const stepsPerRun = 14

type fn func(context.Context, *runner.Input) (runner.Update, error)

func (f fn) Run(ctx context.Context, in *runner.Input) (runner.Update, error) { return f(ctx, in) }

type cond func(runner.State) bool

func (c cond) EvalBool(vars map[string]any) (bool, error) {
	return c(vars["state"].(runner.State)), nil
}

// nextTool is the 004 planner's choice: the first tool not yet completed.
func nextTool(done []any) string {
	for _, t := range tools {
		found := false
		for _, d := range done {
			if d == t {
				found = true
				break
			}
		}
		if !found {
			return t
		}
	}
	return "COMPLETE"
}

// graph004 is the 004 topology with in-process Go nodes doing what the
// hand-written loop does, so the difference is the engine's own cost.
func graph004() *runner.Graph {
	planner := fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
		done, _ := in.State["completed_steps"].([]any)
		return runner.Update{"next_action": nextTool(done), "step_count": in.State["step_count"].(int64) + 1}, nil
	})
	executor := fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
		name := in.State["next_action"].(string)
		return runner.Update{"completed_steps": name, "evidence": name + ": ok"}, nil
	})
	completion := fn(func(context.Context, *runner.Input) (runner.Update, error) {
		return runner.Update{"status": "COMPLETED"}, nil
	})
	return &runner.Graph{
		Name: "fraud", Start: "planner", MaxSteps: 45, Hash: "bench",
		Fields: map[string]runner.Field{
			"transaction_id": {Reducer: runner.Replace}, "next_action": {Reducer: runner.Replace, Default: ""},
			"step_count": {Reducer: runner.Replace, Default: int64(0)}, "completed_steps": {Reducer: runner.Append},
			"evidence": {Reducer: runner.Append}, "status": {Reducer: runner.Replace, Default: "PENDING"},
		},
		Nodes: map[string]*runner.Step{
			"planner": {Name: "planner", Node: planner, Routes: []runner.Route{
				{When: cond(func(s runner.State) bool { return s["next_action"] == "COMPLETE" || s["step_count"].(int64) >= 20 }), To: "completion"},
				{To: "tool_executor"},
			}},
			"tool_executor": {Name: "tool_executor", Node: executor, Routes: []runner.Route{{To: "planner"}}},
			"completion":    {Name: "completion", Node: completion, Routes: []runner.Route{{To: runner.End}}},
		},
	}
}

// handLoop is the baseline: the same graph as a plain Go loop over a map.
func handLoop(input map[string]any) map[string]any {
	s := map[string]any{"next_action": "", "step_count": int64(0), "status": "PENDING", "completed_steps": []any{}, "evidence": []any{}}
	for k, v := range input {
		s[k] = v
	}
	node := "planner"
	for node != "END" {
		switch node {
		case "planner":
			s["next_action"] = nextTool(s["completed_steps"].([]any))
			s["step_count"] = s["step_count"].(int64) + 1
			node = "tool_executor"
			if s["next_action"] == "COMPLETE" || s["step_count"].(int64) >= 20 {
				node = "completion"
			}
		case "tool_executor":
			name := s["next_action"].(string)
			s["completed_steps"] = append(s["completed_steps"].([]any), name)
			s["evidence"] = append(s["evidence"].([]any), name+": ok")
			node = "planner"
		case "completion":
			s["status"] = "COMPLETED"
			node = "END"
		}
	}
	return s
}

func perStep(b *testing.B, start time.Time) {
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*stepsPerRun), "ns/step")
}

// BenchmarkStep measures a node step of the 004 loop: the hand-written
// baseline, the engine with no store, and the engine checkpointing to each
// store (every step durable before the next one starts); PostgreSQL's
// when RUNNER_TEST_POSTGRES names a server (a schema of its own).
func BenchmarkStep(b *testing.B) {
	input := map[string]any{"transaction_id": "txn_1001"}
	b.Run("baseline-hand-loop", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			if handLoop(input)["status"] != "COMPLETED" {
				b.Fatal("not completed")
			}
		}
		perStep(b, start)
	})
	stores := []struct{ name, dsn, durability string }{
		{"engine-no-store", "", ""}, {"engine-memory", "memory:", ""},
		{"engine-sqlite", "sqlite:DIR/normal.db", ""},
		{"engine-sqlite-full", "sqlite:DIR/full.db?sync=full", ""},
		{"engine-sqlite-async", "sqlite:DIR/async.db", runner.DurabilityAsync},
		{"engine-sqlite-exit", "sqlite:DIR/exit.db", runner.DurabilityExit},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			g := graph004()
			g.Durability = st.durability
			benchEngine(b, g, freshDSN(b, st.dsn), input)
		})
	}
	if os.Getenv(postgresEnv) != "" {
		b.Run("engine-postgres", func(b *testing.B) { benchEngine(b, graph004(), postgresSchema(b), input) })
	}
}

// postgresEnv names the variable holding the URL of a PostgreSQL server.
const postgresEnv = "RUNNER_TEST_POSTGRES"

// postgresSchema returns the URL of a new schema on the server in
// postgresEnv, dropped when the benchmark ends.
func postgresSchema(b *testing.B) string {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, os.Getenv(postgresEnv))
	if err != nil {
		b.Fatal(err)
	}
	schema := "runner_bench_" + strings.ToLower(rand.Text()[:10])
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = admin.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`)
		admin.Close(ctx)
	})
	u, err := url.Parse(os.Getenv(postgresEnv))
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// freshDSN puts a new directory for each run of a benchmark in place of
// DIR in dsn: a benchmark function runs more than once (-count, the
// runs that size b.N), and a file of an earlier run would hold its threads.
func freshDSN(b *testing.B, dsn string) string {
	return strings.Replace(dsn, "DIR", b.TempDir(), 1)
}

func benchEngine(b *testing.B, g *runner.Graph, dsn string, input map[string]any) {
	e := &runner.Engine{}
	if dsn != "" {
		st, err := stores.Open(dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		e.Store = st
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	start := time.Now()
	for b.Loop() {
		i++
		res, err := e.Run(ctx, g, fmt.Sprintf("t%d", i), input)
		if err != nil || res.Status != runner.StatusCompleted {
			b.Fatalf("%v %+v", err, res)
		}
	}
	perStep(b, start)
}

// BenchmarkFraud004 runs the shipped fraud investigation, compiled from
// YAML with its expression tools, as `runner exec` would.
func BenchmarkFraud004(b *testing.B) {
	g := compileShipped(b, "fraud_investigation")
	for _, dsn := range []string{"", "memory:", "sqlite:DIR/bench.db"} {
		name := "no-store"
		if dsn != "" {
			name = dsn[:6]
		}
		b.Run(name, func(b *testing.B) { benchEngine(b, g, freshDSN(b, dsn), map[string]any{"transaction_id": "txn_1001"}) })
	}
}

func compileShipped(b *testing.B, name string) *runner.Graph {
	c, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		b.Fatal(err)
	}
	docs, diags := dsl.Load("../pipelines", "../agents", "../rules")
	proj, more := c.Check(docs)
	if diags = append(diags, more...); diags.HasErrors(false) {
		b.Fatal(diags)
	}
	// An empty script: every planner LLM call fails at once and the
	// deterministic fallback decides, as without a model server.
	g, err := c.Compile(proj, name, dsl.CompileOptions{Tool: builtins.Tool, Provider: builtins.ScriptedProviders(nil)})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// BenchmarkLargeList shows that a step's cost does not grow with the
// state's size: a 500-step counter loop runs with a list of 10 or 1,000
// objects in its state, checkpointing every step to memory. Only the
// thread's first checkpoint holds the list; steps write what they change.
// ns/step is timed from the first step to the end, past that checkpoint.
func BenchmarkLargeList(b *testing.B) {
	const steps = 500
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("list-%d", n), func(b *testing.B) {
			list := make([]any, n)
			for i := range list {
				list[i] = map[string]any{"id": i, "label": "event"}
			}
			g := &runner.Graph{Name: "count", Start: "inc", Hash: "bench",
				Fields: map[string]runner.Field{"n": {Reducer: runner.Add, Default: int64(0)}, "history": {Reducer: runner.Append}},
				Nodes: map[string]*runner.Step{"inc": {Name: "inc",
					Node:   fn(func(context.Context, *runner.Input) (runner.Update, error) { return runner.Update{"n": 1}, nil }),
					Routes: []runner.Route{{When: cond(func(s runner.State) bool { return s["n"].(int64) >= steps }), To: runner.End}, {To: "inc"}},
				}},
			}
			st := store.NewMemory()
			defer st.Close()
			var first time.Time
			var inSteps time.Duration
			e := &runner.Engine{Store: st, Sink: func(ev runner.Event) {
				switch {
				case ev.Type == runner.EventNodeStart && first.IsZero():
					first = time.Now()
				case ev.Type == runner.EventDone:
					inSteps += time.Since(first)
					first = time.Time{}
				}
			}}
			input := map[string]any{"history": list}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := e.Run(context.Background(), g, fmt.Sprintf("t%d", i), input); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(inSteps.Nanoseconds())/float64(b.N*steps), "ns/step")
		})
	}
}

// BenchmarkLongRun shows that a step's cost does not grow with the run's
// length: a loop appends one element to a list every step, for 10, 1,000
// or 10,000 steps, without a store and checkpointing to memory. ns/step
// is timed from the first step to the end, as in BenchmarkLargeList.
func BenchmarkLongRun(b *testing.B) {
	for _, dsn := range []string{"", "memory:"} {
		for _, steps := range []int{10, 1000, 10000} {
			name := fmt.Sprintf("no-store/steps-%d", steps)
			if dsn != "" {
				name = fmt.Sprintf("memory/steps-%d", steps)
			}
			b.Run(name, func(b *testing.B) { benchLongRun(b, dsn, steps) })
		}
	}
}

func benchLongRun(b *testing.B, dsn string, steps int) {
	g := &runner.Graph{Name: "grow", Start: "add", Hash: "bench",
		Fields: map[string]runner.Field{"n": {Reducer: runner.Add, Default: int64(0)}, "log": {Reducer: runner.Append}},
		Nodes: map[string]*runner.Step{"add": {Name: "add",
			Node: fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
				return runner.Update{"n": 1, "log": in.State["n"]}, nil
			}),
			Routes: []runner.Route{{When: cond(func(s runner.State) bool { return s["n"].(int64) >= int64(steps) }), To: runner.End}, {To: "add"}},
		}},
	}
	var first time.Time
	var inSteps time.Duration
	e := &runner.Engine{Sink: func(ev runner.Event) {
		switch {
		case ev.Type == runner.EventNodeStart && first.IsZero():
			first = time.Now()
		case ev.Type == runner.EventDone:
			inSteps += time.Since(first)
			first = time.Time{}
		}
	}}
	if dsn != "" {
		st, err := stores.Open(dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		e.Store = st
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		res, err := e.Run(context.Background(), g, fmt.Sprintf("t%d", i), nil)
		if err != nil || len(res.State["log"].([]any)) != steps {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.ReportMetric(float64(inSteps.Nanoseconds())/float64(b.N*steps), "ns/step")
}

// BenchmarkConcurrentRuns measures throughput: the 004 loop run by 1 or
// 32 goroutines at once, each on threads of its own, checkpointing every
// step to memory, to SQLite (synchronous=NORMAL) or, when
// RUNNER_TEST_POSTGRES names a server, to PostgreSQL, or on SQLite with
// durability exit (the end of each run only). runs/s is the runs
// completed a second; on SQLite, wal-B/step is the WAL each step wrote
// (frames of a page and its header), measured over one round of runs
// before the timed ones.
func BenchmarkConcurrentRuns(b *testing.B) {
	names := []string{"memory", "sqlite", "sqlite-exit"}
	if os.Getenv(postgresEnv) != "" {
		names = append(names, "postgres")
	}
	for _, name := range names {
		for _, conc := range []int{1, 32} {
			b.Run(fmt.Sprintf("%s/runs-%d", name, conc), func(b *testing.B) {
				dsn, path := "memory:", ""
				switch name {
				case "postgres":
					dsn = postgresSchema(b)
				case "sqlite", "sqlite-exit":
					path = b.TempDir() + "/bench.db"
					dsn = "sqlite:" + path
				}
				st, err := stores.Open(dsn)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				e := &runner.Engine{Store: st}
				if name == "sqlite-exit" {
					e.Durability = runner.DurabilityExit
				}
				var wal float64
				if path != "" {
					wal = walPerStep(b, path, conc*stepsPerRun, func() { runConcurrently(b, e, conc, conc, "warm") })
				}
				start := time.Now()
				b.ResetTimer()
				runConcurrently(b, e, conc, b.N, "run")
				b.StopTimer()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
				b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*stepsPerRun), "ns/step")
				if path != "" {
					b.ReportMetric(wal, "wal-B/step")
				}
			})
		}
	}
}

// runConcurrently runs the 004 loop n times on conc goroutines, each run
// on a thread of its own named with prefix.
func runConcurrently(b *testing.B, e *runner.Engine, conc, n int, prefix string) {
	g, input := graph004(), map[string]any{"transaction_id": "txn_1001"}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				res, err := e.Run(context.Background(), g, fmt.Sprintf("%s-%d", prefix, i), input)
				if err != nil || res.Status != runner.StatusCompleted {
					b.Errorf("%v %+v", err, res)
					return
				}
			}
		})
	}
	wg.Wait()
}

// walPerStep returns the WAL bytes a step of run, which runs steps steps,
// wrote to the SQLite file at path, run starting on an empty WAL.
func walPerStep(b *testing.B, path string, steps int, run func()) float64 {
	n, err := sqlite.WALBytes(path, run)
	if err != nil {
		b.Fatal(err)
	}
	return float64(n) / float64(steps)
}

// BenchmarkPausedThreads measures what a paused thread takes on disk:
// 500 runs of the 004 loop pause before its last node (interrupt_before)
// in a SQLite file, with every step checkpointed (sync) or only the pause
// (exit); disk-B/thread is the file's size, WAL checkpointed, a thread.
func BenchmarkPausedThreads(b *testing.B) {
	const threads = 500
	for _, mode := range []string{runner.DurabilitySync, runner.DurabilityExit} {
		b.Run(mode, func(b *testing.B) {
			var size float64
			for b.Loop() {
				path := b.TempDir() + "/paused.db"
				st, err := stores.Open("sqlite:" + path)
				if err != nil {
					b.Fatal(err)
				}
				g := graph004()
				g.InterruptBefore = []string{"completion"}
				e := &runner.Engine{Store: st, Durability: mode}
				for i := range threads {
					res, err := e.Run(context.Background(), g, fmt.Sprintf("paused-%d", i), map[string]any{"transaction_id": "txn_1001"})
					if err != nil || res.Status != runner.StatusInterrupted {
						b.Fatalf("%v %+v", err, res)
					}
				}
				st.Close()
				size = fileSize(b, path) / threads
			}
			b.ReportMetric(size, "disk-B/thread")
		})
	}
}

// fileSize is the size of the SQLite file at path, its WAL checkpointed.
func fileSize(b *testing.B, path string) float64 {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var pages, pageSize int
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRow(`SELECT page_count, page_size FROM pragma_page_count, pragma_page_size`).Scan(&pages, &pageSize); err != nil {
		b.Fatal(err)
	}
	return float64(pages * pageSize)
}
