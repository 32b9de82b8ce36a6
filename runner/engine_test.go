package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// fn adapts a function to runner.Node.
type fn func(context.Context, *runner.Input) (runner.Update, error)

func (f fn) Run(ctx context.Context, in *runner.Input) (runner.Update, error) { return f(ctx, in) }

// when adapts a function of the state to runner.Condition.
type when func(runner.State) bool

func (w when) EvalBool(vars map[string]any) (bool, error) {
	return w(vars["state"].(runner.State)), nil
}

func set(u runner.Update) fn {
	return func(context.Context, *runner.Input) (runner.Update, error) { return u, nil }
}

// loopGraph counts n up by one per visit of "inc" until it reaches limit.
func loopGraph(limit int64, maxSteps int) *runner.Graph {
	return &runner.Graph{
		Name: "loop", Start: "inc", MaxSteps: maxSteps, Hash: "h1",
		Fields: map[string]runner.Field{
			"n":    {Reducer: runner.Add, Default: int64(0)},
			"seen": {Reducer: runner.Append},
		},
		Nodes: map[string]*runner.Step{
			"inc": {Name: "inc", Node: fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
				return runner.Update{"n": 1, "seen": in.State["n"]}, nil
			}), Routes: []runner.Route{
				{When: when(func(s runner.State) bool { return s["n"].(int64) >= limit }), To: runner.End},
				{To: "inc"},
			}},
		},
	}
}

func newStore(t *testing.T) store.Store {
	t.Helper()
	st := store.NewMemory()
	t.Cleanup(func() { st.Close() })
	return st
}

func TestRunLoop(t *testing.T) {
	e := &runner.Engine{Store: newStore(t)}
	res, err := e.Run(context.Background(), loopGraph(3, 10), "t1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runner.StatusCompleted || res.State["n"] != int64(3) {
		t.Fatalf("status %s, n = %v; want completed, 3", res.Status, res.State["n"])
	}
	if got, want := res.State["seen"], []any{int64(0), int64(1), int64(2)}; !reflect.DeepEqual(got, want) {
		t.Errorf("seen = %v, want %v", got, want)
	}
	if got := strings.Join(res.Path, ","); got != "inc,inc,inc" {
		t.Errorf("path = %s", got)
	}
	hist, _ := e.Store.History(context.Background(), "t1")
	if len(hist) != 4 { // the input, then one per step
		t.Errorf("%d checkpoints, want 4", len(hist))
	}
}

func TestMaxSteps(t *testing.T) {
	res, err := (&runner.Engine{}).Run(context.Background(), loopGraph(100, 5), "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runner.StatusFailed || res.Error.Code != "max_steps" ||
		!strings.Contains(res.Error.Message, "limit of 5 steps") || !strings.Contains(res.Error.Message, "raise limits.max_steps") {
		t.Fatalf("got %s %+v; want failed max_steps naming the limit and how to raise it", res.Status, res.Error)
	}
}

func oneNode(node runner.Node, step func(*runner.Step)) *runner.Graph {
	s := &runner.Step{Name: "work", Node: node, Routes: []runner.Route{{To: runner.End}}}
	if step != nil {
		step(s)
	}
	g := &runner.Graph{Name: "one", Start: "work", Hash: "h",
		Fields: map[string]runner.Field{"out": {Reducer: runner.Replace}, "error": {Reducer: runner.Replace}},
		Nodes:  map[string]*runner.Step{"work": s, "recover": {Name: "recover", Node: set(runner.Update{"out": "recovered"}), Routes: []runner.Route{{To: runner.End}}}},
	}
	return g
}

func TestNodeTimeoutAndRetry(t *testing.T) {
	var calls atomic.Int32
	slowThenFast := fn(func(ctx context.Context, _ *runner.Input) (runner.Update, error) {
		if calls.Add(1) < 3 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return runner.Update{"out": "ok"}, nil
	})
	g := oneNode(slowThenFast, func(s *runner.Step) {
		s.Timeout = 5 * time.Millisecond
		s.Retry = runner.Retry{MaxAttempts: 3, Backoff: time.Millisecond, On: []string{"timeout"}}
	})
	res, err := (&runner.Engine{}).Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusCompleted || res.State["out"] != "ok" || calls.Load() != 3 {
		t.Fatalf("got %v %+v after %d calls; want completed after 3", err, res, calls.Load())
	}
}

func TestRetryPolicy(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		on        []string
		wantCalls int32
	}{
		{"retries errors", errors.New("flaky"), nil, 3},
		{"only timeouts", errors.New("flaky"), []string{"timeout"}, 1},
		{"permanent", runner.Permanent(errors.New("bad input")), nil, 1},
		{"rate limit", &runner.HTTPError{Status: 429, Err: errors.New("slow down")}, []string{"rate_limit"}, 3},
		{"rate limit, not a 500", &runner.HTTPError{Status: 500, Err: errors.New("oops")}, []string{"rate_limit"}, 1},
		{"server error", &runner.ProviderError{Status: 503, Err: errors.New("unavailable")}, []string{"server_error"}, 3},
		{"error kind", &runner.ToolError{Tool: "x", Err: errors.New("broke")}, []string{"tool"}, 3},
		{"error kind that does not match", &runner.ToolError{Tool: "x", Err: errors.New("broke")}, []string{"llm", "timeout"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			g := oneNode(fn(func(context.Context, *runner.Input) (runner.Update, error) {
				calls.Add(1)
				return nil, c.err
			}), func(s *runner.Step) { s.Retry = runner.Retry{MaxAttempts: 3, On: c.on} })
			res, _ := (&runner.Engine{}).Run(context.Background(), g, "t", nil)
			if res.Status != runner.StatusFailed || res.Error.Code != "node_error" || calls.Load() != c.wantCalls {
				t.Errorf("got %s/%v after %d calls, want failed after %d", res.Status, res.Error, calls.Load(), c.wantCalls)
			}
		})
	}
}

func TestOnError(t *testing.T) {
	g := oneNode(fn(func(context.Context, *runner.Input) (runner.Update, error) {
		return nil, errors.New("tool exploded")
	}), func(s *runner.Step) { s.OnError = []runner.Catch{{To: "recover"}} })
	res, err := (&runner.Engine{}).Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusCompleted || res.State["out"] != "recovered" ||
		!strings.Contains(res.State["error"].(string), "tool exploded") {
		t.Fatalf("got %v %+v", err, res)
	}
}

func TestPanicIsAFailure(t *testing.T) {
	g := oneNode(fn(func(context.Context, *runner.Input) (runner.Update, error) { panic("boom") }), nil)
	res, err := (&runner.Engine{}).Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusFailed || !strings.Contains(res.Error.Message, "panicked: boom") {
		t.Fatalf("got %v %+v", err, res)
	}
}

func TestRunTimeout(t *testing.T) {
	g := loopGraph(1<<40, 0)
	g.Nodes["inc"].Node = fn(func(ctx context.Context, _ *runner.Input) (runner.Update, error) {
		time.Sleep(time.Millisecond)
		return runner.Update{"n": 1}, nil
	})
	g.Timeout = 20 * time.Millisecond
	res, err := (&runner.Engine{Store: newStore(t)}).Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusTimedOut || res.Error.Code != "timeout" || !strings.Contains(res.Error.Message, "limits.timeout") {
		t.Fatalf("got %v %+v", err, res)
	}
}

// approval pauses until resumed with {"ok": true}.
var approval = fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
	if !in.Resumed {
		return nil, &runner.Interrupt{Kind: "approval", Payload: map[string]any{"q": "ok?"}}
	}
	v, _ := in.Resume.(map[string]any)
	if _, ok := v["ok"].(bool); !ok {
		return nil, runner.InvalidResume(errors.New(`want {"ok": bool}`))
	}
	return runner.Update{"out": v["ok"]}, nil
})

func TestInterruptResume(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	g := oneNode(approval, nil)
	res, err := e.Run(ctx, g, "t", nil)
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.Kind != "approval" || res.Interrupt.Node != "work" {
		t.Fatalf("run: %v %+v", err, res)
	}
	if _, err := e.Resume(ctx, g, "t", runner.ResumeOptions{Value: "yes"}); !errors.Is(err, runner.ErrInvalidResume) {
		t.Fatalf("bad resume value: err %v, want ErrInvalidResume", err)
	}
	res, err = e.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{"ok": true}})
	if err != nil || res.Status != runner.StatusCompleted || res.State["out"] != true {
		t.Fatalf("resume: %v %+v", err, res)
	}
	if _, err := e.Resume(ctx, g, "t", runner.ResumeOptions{}); err == nil || !strings.Contains(err.Error(), "already completed") {
		t.Errorf("resume of a completed thread: %v", err)
	}
}

func TestResumeRefusesChangedDefinitions(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	g := oneNode(approval, nil)
	g.Defs = map[string]string{"Pipeline/one": "a", "Tool/x": "b"}
	if _, err := e.Run(ctx, g, "t", nil); err != nil {
		t.Fatal(err)
	}
	g2 := *g
	g2.Hash, g2.Defs = "h2", map[string]string{"Pipeline/one": "a", "Tool/x": "c"}
	_, err := e.Resume(ctx, &g2, "t", runner.ResumeOptions{Value: map[string]any{"ok": true}})
	if err == nil || !strings.Contains(err.Error(), "changed: Tool/x") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("err = %v, want a refusal naming Tool/x and --force", err)
	}
	res, err := e.Resume(ctx, &g2, "t", runner.ResumeOptions{Value: map[string]any{"ok": true}, Force: true})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("forced: %v %+v", err, res)
	}
}

// TestResumeForcedChangedGraph: a forced resume under definitions that
// lost the node the thread stopped before, or a state field its writes
// need, is refused with what to do, not a panic.
func TestResumeForcedChangedGraph(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	g := oneNode(approval, nil)
	g.Nodes["work"].Node = fn(func(ctx context.Context, in *runner.Input) (runner.Update, error) {
		if !in.Resumed {
			return nil, &runner.Interrupt{Kind: "approval", Update: runner.Update{"out": "asked"}}
		}
		return approval(ctx, in)
	})
	g.Fields["pad"] = runner.Field{Reducer: runner.Replace, Default: strings.Repeat("x", 1000)} // the pause writes, not a snapshot
	if _, err := e.Run(ctx, g, "t", nil); err != nil {
		t.Fatal(err)
	}
	renamed := *g
	renamed.Hash = "h2"
	renamed.Nodes = map[string]*runner.Step{"work2": g.Nodes["work"]}
	renamed.Start = "work2"
	lost := *g
	lost.Hash = "h3"
	lost.Fields = map[string]runner.Field{"pad": g.Fields["pad"]}
	tests := []struct {
		name string
		g    *runner.Graph
		want []string
	}{
		{"renamed node", &renamed, []string{`thread t cannot resume: it stopped before node "work", which pipeline one no longer has`, "start a new thread"}},
		{"removed field", &lost, []string{`update of "out", which is not a state field`, "ran under other definitions", "start a new thread"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Resume(ctx, tt.g, "t", runner.ResumeOptions{Value: map[string]any{"ok": true}, Force: true})
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to contain %q", err, w)
				}
			}
		})
	}
	res, err := e.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{"ok": true}})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("the thread is not resumable under its own definitions after the refusals: %v %+v", err, res)
	}
}

// TestCancelAndResume cancels a run mid-way and resumes it: the final
// state equals an uninterrupted run's.
func TestCancelAndResume(t *testing.T) {
	want, _ := (&runner.Engine{}).Run(context.Background(), loopGraph(20, 100), "ref", nil)
	e := &runner.Engine{Store: newStore(t)}
	ctx, cancel := context.WithCancel(context.Background())
	g := loopGraph(20, 100)
	inner := g.Nodes["inc"].Node
	g.Nodes["inc"].Node = fn(func(c context.Context, in *runner.Input) (runner.Update, error) {
		if in.State["n"] == int64(7) {
			cancel()
		}
		return inner.Run(c, in)
	})
	res, err := e.Run(ctx, g, "t", nil)
	if err != nil || res.Status != runner.StatusCancelled {
		t.Fatalf("run: %v %+v", err, res)
	}
	res, err = e.Resume(context.Background(), loopGraph(20, 100), "t", runner.ResumeOptions{})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}
	if a, b := jsonOf(t, res.State), jsonOf(t, want.State); a != b {
		t.Errorf("state after cancel+resume\n%s\nwant\n%s", a, b)
	}
}

func TestEvents(t *testing.T) {
	var types []string
	e := &runner.Engine{Store: newStore(t), Sink: func(ev runner.Event) { types = append(types, ev.Type) }}
	if _, err := e.Run(context.Background(), loopGraph(1, 10), "t", nil); err != nil {
		t.Fatal(err)
	}
	want := "run_start,checkpoint,node_start,checkpoint,node_end,done"
	if got := strings.Join(types, ","); got != want {
		t.Errorf("events %s, want %s", got, want)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSnapshots checks where snapshots fall — at the first checkpoint
// after the writes since the last one reach twice its size — and that a
// resume so loads a suffix of the history, not all of it.
func TestSnapshots(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	if _, err := e.Run(ctx, loopGraph(60, 100), "t", nil); err != nil {
		t.Fatal(err)
	}
	hist, _ := e.Store.History(ctx, "t")
	snapSize, since, snaps := 0, 0, 0
	for _, h := range hist {
		cps, err := e.Store.Load(ctx, "t", h.ID)
		if err != nil {
			t.Fatal(err)
		}
		cp := cps[len(cps)-1]
		isSnap := cp.Snapshot != nil
		if want := h.ID == 1 || since >= 2*snapSize; isSnap != want {
			t.Fatalf("checkpoint %d: snapshot %v, want %v (%d bytes written since a snapshot of %d)", h.ID, isSnap, want, since, snapSize)
		}
		if isSnap {
			snapSize, since, snaps = len(cp.Snapshot), 0, snaps+1
		} else {
			since += len(cp.Writes)
		}
	}
	if snaps < 3 {
		t.Errorf("%d snapshots in %d checkpoints: the loop should cross the threshold twice", snaps, len(hist))
	}
	cps, err := e.Store.Load(ctx, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) >= len(hist)/2 || len(cps[0].Snapshot) == 0 || cps[0].ID == 1 {
		t.Errorf("load returned %d of %d checkpoints from id %d; want a short suffix starting at a later snapshot", len(cps), len(hist), cps[0].ID)
	}
}

// TestBudgetStepsInNodes checks the budget nodes see counts the steps
// before theirs, also after an on_error route.
func TestBudgetStepsInNodes(t *testing.T) {
	g := oneNode(fn(func(context.Context, *runner.Input) (runner.Update, error) {
		return nil, errors.New("fails")
	}), func(s *runner.Step) { s.OnError = []runner.Catch{{To: "recover"}} })
	g.Nodes["recover"].Node = fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
		return runner.Update{"out": in.Vars()["budget"].(map[string]any)["steps"]}, nil
	})
	res, err := (&runner.Engine{}).Run(context.Background(), g, "t", nil)
	if err != nil || res.State["out"] != 1 {
		t.Fatalf("recover saw steps = %v (%v), want 1", res.State["out"], err)
	}
}

// TestConditionalStart: StartRoutes choose the first node over the run's
// first state, without a step of their own; the run_start event says which
// route chose it, and a start no route chooses refuses the run.
func TestConditionalStart(t *testing.T) {
	isChat := when(func(s runner.State) bool { return s["kind"] == "chat" })
	g := &runner.Graph{Name: "entry", Hash: "h", Fields: map[string]runner.Field{"kind": {Reducer: runner.Replace}, "by": {Reducer: runner.Replace}},
		StartRoutes: []runner.Route{{When: isChat, To: "chat"}, {When: when(func(s runner.State) bool { return s["kind"] == "plan" }), To: "plan"}},
		Nodes: map[string]*runner.Step{
			"chat": {Name: "chat", Node: set(runner.Update{"by": "chat"}), Routes: []runner.Route{{To: runner.End}}},
			"plan": {Name: "plan", Node: set(runner.Update{"by": "plan"}), Routes: []runner.Route{{To: runner.End}}},
		}}
	for _, kind := range []string{"chat", "plan"} {
		var started map[string]any
		e := &runner.Engine{Store: newStore(t), Sink: func(ev runner.Event) {
			if ev.Type == runner.EventRunStart {
				started = ev.Data.(map[string]any)
			}
		}}
		res, err := e.Run(context.Background(), g, kind, map[string]any{"kind": kind})
		if err != nil || res.Status != runner.StatusCompleted || res.State["by"] != kind || !reflect.DeepEqual(res.Path, []string{kind}) {
			t.Fatalf("%s: %v %+v, want a run of %s alone", kind, err, res, kind)
		}
		if started["start"] != kind {
			t.Errorf("%s: run_start says %v", kind, started)
		}
		hist, _ := e.Store.History(context.Background(), kind)
		if len(hist) != 2 {
			t.Errorf("%s: %d checkpoints, want the input's and the step's", kind, len(hist))
		}
	}
	e := &runner.Engine{Store: newStore(t)}
	if _, err := e.Run(context.Background(), g, "none", map[string]any{"kind": "other"}); !errors.Is(err, runner.ErrInput) ||
		!strings.Contains(err.Error(), "start: no route condition holds") {
		t.Fatalf("no route holds: %v, want the run refused", err)
	}
	if hist, _ := e.Store.History(context.Background(), "none"); len(hist) != 0 {
		t.Errorf("a refused run wrote %d checkpoints", len(hist))
	}
}
