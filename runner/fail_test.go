package runner_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
)

// blockUntilDone waits for its context to end, like a node that overruns.
var blockUntilDone = fn(func(ctx context.Context, _ *runner.Input) (runner.Update, error) {
	<-ctx.Done()
	return nil, ctx.Err()
})

// recordError writes the error a route caught, as expressions see it.
var recordError = fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
	e := in.Vars()["error"].(map[string]any)
	return runner.Update{"out": fmt.Sprintf("%s at %s: %s", e["kind"], e["node"], e["message"])}, nil
})

// handlerGraph is oneNode with a pipeline handler "record" that writes
// the caught error to out.
func handlerGraph(work runner.Node, onTimeout, onError string) *runner.Graph {
	g := oneNode(work, nil)
	g.Nodes["record"] = &runner.Step{Name: "record", Node: recordError, Routes: []runner.Route{{To: runner.End}}}
	g.OnTimeout, g.OnError = onTimeout, onError
	return g
}

func TestTimedOutResumes(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	var slow atomic.Bool
	slow.Store(true)
	g := oneNode(fn(func(ctx context.Context, _ *runner.Input) (runner.Update, error) {
		if slow.Load() {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return runner.Update{"out": "done"}, nil
	}), nil)
	g.Timeout = 10 * time.Millisecond
	res, err := e.Run(ctx, g, "t", nil)
	if err != nil || res.Status != runner.StatusTimedOut || res.Error.Code != "timeout" || res.Error.Kind != runner.KindTimeout {
		t.Fatalf("run: %v %+v", err, res)
	}
	if _, err := e.Run(ctx, g, "t", nil); !errors.Is(err, runner.ErrThreadBusy) {
		t.Fatalf("a new run of a timed-out thread: %v, want ErrThreadBusy", err)
	}
	slow.Store(false)
	res, err = e.Resume(ctx, g, "t", runner.ResumeOptions{})
	if err != nil || res.Status != runner.StatusCompleted || res.State["out"] != "done" {
		t.Fatalf("resume: %v %+v", err, res)
	}
}

func TestOnTimeoutHandler(t *testing.T) {
	g := handlerGraph(blockUntilDone, "record", "")
	g.Timeout = 10 * time.Millisecond
	e := &runner.Engine{Store: newStore(t)}
	res, err := e.Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusTimedOut || !slices.Equal(res.Path, []string{"record"}) {
		t.Fatalf("got %v %+v", err, res)
	}
	if out, _ := res.State["out"].(string); !strings.HasPrefix(out, "timeout at work: pipeline one ran longer than its timeout") {
		t.Fatalf("the handler recorded %q", out)
	}
	// the handler's own checkpoint already stands where the run ended: a
	// crash in the handler leaves the thread timed out at work
	hist, err := e.Store.History(context.Background(), "t")
	if cp := hist[len(hist)-2]; err != nil || cp.Node != "record" || cp.Status != runner.StatusTimedOut || cp.Next != "work" {
		t.Fatalf("the handler's checkpoint: %v %+v", err, cp)
	}
}

func TestOnErrorHandlerNotForTimeouts(t *testing.T) {
	g := handlerGraph(blockUntilDone, "", "record")
	g.Timeout = 10 * time.Millisecond
	res, err := (&runner.Engine{}).Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusTimedOut || len(res.Path) != 0 {
		t.Fatalf("got %v %+v, want timed out without the on_error handler", err, res)
	}
	g = handlerGraph(fn(func(context.Context, *runner.Input) (runner.Update, error) {
		return nil, &runner.ValidationError{Err: errors.New("bad reply")}
	}), "", "record")
	res, err = (&runner.Engine{}).Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusFailed || res.State["out"] != "validation at work: node work failed: bad reply" {
		t.Fatalf("got %v %+v", err, res)
	}
}

func TestFailingHandlerRunsOnce(t *testing.T) {
	var runs atomic.Int32
	g := handlerGraph(fn(func(context.Context, *runner.Input) (runner.Update, error) {
		return nil, errors.New("work exploded")
	}), "", "record")
	g.Nodes["record"].Node = fn(func(context.Context, *runner.Input) (runner.Update, error) {
		runs.Add(1)
		return nil, errors.New("recorder down")
	})
	res, err := (&runner.Engine{Store: newStore(t)}).Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusFailed || runs.Load() != 1 {
		t.Fatalf("got %v %+v after %d handler runs", err, res, runs.Load())
	}
	msg := res.Error.Message
	if !strings.Contains(msg, "work exploded") || !strings.Contains(msg, "on_error handler failed at node record: recorder down") {
		t.Fatalf("message %q, want both errors", msg)
	}
}

func TestHandlerGraceDeadline(t *testing.T) {
	g := handlerGraph(blockUntilDone, "record", "")
	g.Timeout, g.HandlerTimeout = 10*time.Millisecond, 10*time.Millisecond
	g.Nodes["record"].Node = blockUntilDone
	res, err := (&runner.Engine{}).Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusTimedOut || !strings.Contains(res.Error.Message, "longer than limits.handler_timeout (10ms)") {
		t.Fatalf("got %v %+v", err, res)
	}
}

func TestOnErrorKinds(t *testing.T) {
	catches := []runner.Catch{
		{When: []string{runner.KindTimeout}, To: "a"},
		{When: []string{runner.KindHTTP5xx, runner.KindValidation}, To: "b"},
		{When: []string{runner.KindBudgetErr}, To: "c"},
		{To: "d"},
	}
	for _, c := range []struct {
		name string
		err  error
		want string
		kind string
	}{
		{"node timeout", &runner.TimeoutError{What: "node work", After: time.Second}, "a", "timeout"},
		{"tool 503", &runner.ToolError{Tool: "t", Err: &runner.HTTPError{Status: 503, Err: errors.New("unavailable")}}, "b", "http_5xx"},
		{"provider 500", &runner.ProviderError{Provider: "p", Model: "m", Status: 500, Err: errors.New("oops")}, "b", "http_5xx"},
		{"invalid arguments", runner.Permanent(&runner.ValidationError{Err: errors.New("bad")}), "b", "validation"},
		{"budget", runner.Permanent(&runner.BudgetError{Budget: "max_tokens", Limit: 1, Used: 2}), "c", "budget"},
		{"tool 404", &runner.ToolError{Tool: "t", Err: &runner.HTTPError{Status: 404, Err: errors.New("gone")}}, "d", "http_4xx"},
		{"plain", errors.New("boom"), "d", "error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := oneNode(fn(func(context.Context, *runner.Input) (runner.Update, error) { return nil, c.err }),
				func(s *runner.Step) { s.OnError = catches })
			for _, n := range []string{"a", "b", "c", "d"} {
				g.Nodes[n] = &runner.Step{Name: n, Node: recordError, Routes: []runner.Route{{To: runner.End}}}
			}
			res, err := (&runner.Engine{}).Run(context.Background(), g, "t", nil)
			if err != nil || res.Status != runner.StatusCompleted || res.Path[1] != c.want {
				t.Fatalf("got %v %+v, want the route to %s", err, res, c.want)
			}
			if out := res.State["out"].(string); !strings.HasPrefix(out, c.kind+" at work: ") {
				t.Fatalf("the handler saw %q, want kind %s", out, c.kind)
			}
		})
	}
}

func TestOnErrorCatchAllLeavesBudget(t *testing.T) {
	g := oneNode(fn(func(context.Context, *runner.Input) (runner.Update, error) {
		return nil, runner.Permanent(&runner.BudgetError{Budget: "max_tokens", Limit: 1, Used: 2})
	}), func(s *runner.Step) { s.OnError = []runner.Catch{{When: []string{runner.KindAny}, To: "recover"}} })
	res, err := (&runner.Engine{}).Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusFailed || res.Error.Code != "budget_exceeded" {
		t.Fatalf("got %v %+v, want the budget to fail the run", err, res)
	}
}

// chain is a → b → c → END, each appending its name to seen.
func chain() *runner.Graph {
	g := &runner.Graph{Name: "chain", Start: "a", Hash: "h", Fields: map[string]runner.Field{"seen": {Reducer: runner.Append}}, Nodes: map[string]*runner.Step{}}
	for i, n := range []string{"a", "b", "c"} {
		next := runner.End
		if i < 2 {
			next = string(rune('b' + i))
		}
		g.Nodes[n] = &runner.Step{Name: n, Node: set(runner.Update{"seen": n}), Routes: []runner.Route{{To: next}}}
	}
	return g
}

func TestStaticInterrupts(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	g := chain()
	g.InterruptBefore, g.InterruptAfter = []string{"b"}, []string{"b"}
	res, err := e.Run(ctx, g, "t", nil)
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.Kind != runner.KindBefore || res.Interrupt.Node != "b" || !slices.Equal(res.Path, []string{"a"}) {
		t.Fatalf("run: %v %+v", err, res)
	}
	res, err = e.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{"any": "value"}})
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.Kind != runner.KindAfter || !slices.Equal(res.Path, []string{"b"}) {
		t.Fatalf("resume before b: %v %+v", err, res)
	}
	st, err := e.State(ctx, g, "t", 0)
	if err != nil || st.Next != "c" {
		t.Fatalf("paused after b: %v %+v, want it standing at c", err, st)
	}
	res, err = e.Resume(ctx, g, "t", runner.ResumeOptions{})
	if err != nil || res.Status != runner.StatusCompleted || !slices.Equal(res.Path, []string{"c"}) || len(res.State["seen"].([]any)) != 3 {
		t.Fatalf("resume after b: %v %+v", err, res)
	}
}

func TestRunOptionsReplaceStaticInterrupts(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	g := chain()
	g.InterruptBefore = []string{"b"}
	res, err := e.RunWith(ctx, g, "t1", nil, runner.RunOptions{InterruptBefore: []string{}, InterruptAfter: []string{"a"}})
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.Kind != runner.KindAfter || res.Interrupt.Node != "a" {
		t.Fatalf("run: %v %+v", err, res)
	}
	res, err = e.Resume(ctx, g, "t1", runner.ResumeOptions{RunOptions: runner.RunOptions{InterruptBefore: []string{}}})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}
	_, err = e.RunWith(ctx, g, "t2", nil, runner.RunOptions{InterruptBefore: []string{"bb"}})
	if !errors.Is(err, runner.ErrInput) || !strings.Contains(err.Error(), `node "bb"`) {
		t.Fatalf("unknown node: %v, want ErrInput naming it", err)
	}
}

func TestToolCallErrorKinds(t *testing.T) {
	calling := func(tool runner.ToolFunc, timeout time.Duration) fn {
		return func(ctx context.Context, in *runner.Input) (runner.Update, error) {
			o, err := in.Run.CallTool(ctx, runner.ToolRequest{Spec: &runner.ToolSpec{Name: "svc", Tool: tool}, Timeout: timeout})
			if err != nil {
				return nil, err
			}
			return nil, o.Err
		}
	}
	for _, c := range []struct {
		name    string
		node    fn
		want    string
		message string
	}{
		{"failed call", calling(func(context.Context, *runner.ToolCall) (any, error) { return nil, errors.New("svc down") }, 0),
			"tool at work: svc down", "tool"},
		{"slow call", calling(func(ctx context.Context, _ *runner.ToolCall) (any, error) { <-ctx.Done(); return nil, ctx.Err() }, time.Millisecond),
			"timeout at work: tool svc timed out after 1ms", "timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := oneNode(c.node, func(s *runner.Step) {
				s.OnError = []runner.Catch{{When: []string{c.message}, To: "record"}}
			})
			g.Nodes["record"] = &runner.Step{Name: "record", Node: recordError, Routes: []runner.Route{{To: runner.End}}}
			res, err := (&runner.Engine{}).Run(context.Background(), g, "t", nil)
			if err != nil || res.Status != runner.StatusCompleted || res.State["out"] != c.want {
				t.Fatalf("got %v %+v, want out %q", err, res, c.want)
			}
		})
	}
}

func TestCaughtErrorSurvivesResume(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	g := handlerGraph(fn(func(context.Context, *runner.Input) (runner.Update, error) {
		return nil, errors.New("work exploded")
	}), "", "")
	g.Nodes["work"].OnError = []runner.Catch{{To: "review"}}
	g.Nodes["review"] = &runner.Step{Name: "review", Node: fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
		if !in.Resumed {
			return nil, &runner.Interrupt{Kind: "review"}
		}
		return recordError(ctx, in)
	}), Routes: []runner.Route{{To: runner.End}}}
	if res, err := e.Run(ctx, g, "t", nil); err != nil || res.Status != runner.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
	res, err := e.Resume(ctx, g, "t", runner.ResumeOptions{Value: true})
	if err != nil || res.State["out"] != "error at work: work exploded" {
		t.Fatalf("resume: %v %+v", err, res)
	}
}

// TestRunOptionsNew: a run told its thread is new does not read it, and
// on a thread that has checkpoints its first checkpoint fails, writing
// nothing; on a new thread it runs as any run.
func TestRunOptionsNew(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	g := loopGraph(2, 10)
	res, err := e.RunWith(ctx, g, "t", nil, runner.RunOptions{New: true})
	if err != nil || res.Status != runner.StatusCompleted || res.State["n"] != int64(2) {
		t.Fatalf("run of a new thread: %v %+v", err, res)
	}
	before, _ := e.Store.History(ctx, "t")
	if _, err := e.RunWith(ctx, g, "t", nil, runner.RunOptions{New: true}); err == nil {
		t.Fatal("a run told its thread is new ran on one with checkpoints")
	}
	if after, _ := e.Store.History(ctx, "t"); len(after) != len(before) {
		t.Errorf("%d checkpoints after the refused run, want %d", len(after), len(before))
	}
	if res, err := e.Run(ctx, g, "t", nil); err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("the thread's next turn: %v %+v", err, res)
	}
}
