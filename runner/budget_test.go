package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
)

// spendGraph loops on "work", which makes one LLM call of 100 input and 50
// output tokens, one tool call and one iteration per visit, until ten
// visits; "report" is a node a budget may route to.
func spendGraph(b runner.Budget) *runner.Graph {
	work := fn(func(ctx context.Context, in *runner.Input) (runner.Update, error) {
		if _, _, err := in.Run.CallLLM(ctx, &runner.LLMRequest{Provider: fixedReply, Model: "m", Chat: &runner.ChatRequest{},
			Price: func(runner.Usage) float64 { return 0.01 }}); err != nil {
			return nil, err
		}
		if _, err := in.Run.CallTool(ctx, runner.ToolRequest{Spec: noopTool}); err != nil {
			return nil, err
		}
		if err := in.Run.Iterate(); err != nil {
			return nil, err
		}
		return runner.Update{"n": 1}, nil
	})
	return &runner.Graph{
		Name: "spend", Start: "work", MaxSteps: 100, Hash: "h", Budget: b,
		Fields: map[string]runner.Field{"n": {Reducer: runner.Add, Default: int64(0)}, "error": {Reducer: runner.Replace}},
		Nodes: map[string]*runner.Step{
			"work": {Name: "work", Node: work, Routes: []runner.Route{
				{When: when(func(s runner.State) bool { return s["n"].(int64) >= 10 }), To: runner.End}, {To: "work"}}},
			"report": {Name: "report", Node: set(nil), Routes: []runner.Route{{To: runner.End}}},
		},
	}
}

// fixedReply answers every chat with 100 input and 50 output tokens.
var fixedReply = providerFunc(func(context.Context, *runner.ChatRequest) (*runner.ChatResponse, error) {
	return &runner.ChatResponse{Usage: runner.Usage{InputTokens: 100, OutputTokens: 50}}, nil
})

type providerFunc func(context.Context, *runner.ChatRequest) (*runner.ChatResponse, error)

func (f providerFunc) Chat(ctx context.Context, req *runner.ChatRequest) (*runner.ChatResponse, error) {
	return f(ctx, req)
}

var noopTool = &runner.ToolSpec{Name: "noop", Tool: runner.ToolFunc(func(context.Context, *runner.ToolCall) (any, error) { return nil, nil })}

func TestBudgetFail(t *testing.T) {
	tests := []struct {
		name   string
		budget runner.Budget
		n      int64 // visits of work that completed
		msg    string
	}{
		{"tokens", runner.Budget{MaxTokens: 400}, 2, "budget max_tokens exceeded: used 450 of 400"},
		{"cost", runner.Budget{MaxCostUSD: 0.025}, 2, "budget max_cost_usd exceeded: used $0.0300 of $0.0250"},
		{"llm calls", runner.Budget{MaxLLMCalls: 2}, 2, "budget max_llm_calls exceeded: used 2 of 2"},
		{"tool calls", runner.Budget{MaxToolCalls: 4}, 4, "budget max_tool_calls exceeded: used 4 of 4"},
		{"iterations", runner.Budget{MaxIterations: 5}, 5, "budget max_iterations exceeded: used 5 of 5"},
		{"steps", runner.Budget{MaxSteps: 6}, 6, "budget max_steps exceeded: used 6 of 6"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &runner.Engine{Store: newStore(t)}
			res, err := e.Run(context.Background(), spendGraph(tc.budget), "t", nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != runner.StatusFailed || res.Error.Code != "budget_exceeded" {
				t.Fatalf("status %s, error %+v; want failed, budget_exceeded", res.Status, res.Error)
			}
			if !strings.Contains(res.Error.Message, tc.msg) || res.State["n"] != tc.n {
				t.Errorf("message %q, n = %v; want %q, %d", res.Error.Message, res.State["n"], tc.msg, tc.n)
			}
		})
	}
}

func TestBudgetTimeout(t *testing.T) {
	g := spendGraph(runner.Budget{Timeout: 20 * time.Millisecond})
	g.Nodes["work"].Node = fn(func(ctx context.Context, _ *runner.Input) (runner.Update, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	res, err := (&runner.Engine{Store: newStore(t)}).Run(context.Background(), g, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runner.StatusTimedOut || res.Error.Code != "budget_exceeded" || !strings.Contains(res.Error.Message, "budget timeout exceeded") {
		t.Fatalf("status %s, error %+v; want a timed-out budget", res.Status, res.Error)
	}
}

// TestBudgetTimeoutInterrupt checks that a spent timeout budget pauses
// the thread under on_exceed: interrupt, and that the resume gets a fresh
// window.
func TestBudgetTimeoutInterrupt(t *testing.T) {
	g := spendGraph(runner.Budget{Timeout: 20 * time.Millisecond, OnExceed: runner.OnExceedInterrupt})
	slow := true
	g.Nodes["work"].Node = fn(func(ctx context.Context, _ *runner.Input) (runner.Update, error) {
		if slow {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return runner.Update{"n": 10}, nil
	})
	e := &runner.Engine{Store: newStore(t)}
	res, err := e.Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.Payload["budget"] != "timeout" {
		t.Fatalf("run: %v, status %s, interrupt %+v; want a timeout budget interrupt", err, res.Status, res.Interrupt)
	}
	slow = false
	res, err = e.Resume(context.Background(), g, "t", runner.ResumeOptions{Value: map[string]any{"approved": true}})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("resume: %v, status %s, error %+v", err, res.Status, res.Error)
	}
}

func TestBudgetRoute(t *testing.T) {
	for _, b := range []runner.Budget{{MaxTokens: 400, OnExceed: "report"}, {MaxSteps: 4, OnExceed: "report"}} {
		res, err := (&runner.Engine{Store: newStore(t)}).Run(context.Background(), spendGraph(b), "t", nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != runner.StatusCompleted || res.Path[len(res.Path)-1] != "report" {
			t.Errorf("%+v: status %s, path %v; want completed through report", b, res.Status, res.Path)
		}
	}
}

func TestBudgetInterrupt(t *testing.T) {
	ctx := context.Background()
	e := &runner.Engine{Store: newStore(t)}
	g := spendGraph(runner.Budget{MaxTokens: 400, OnExceed: runner.OnExceedInterrupt})
	res, err := e.Run(ctx, g, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runner.StatusInterrupted || res.Interrupt.Kind != runner.KindBudget || res.Interrupt.Payload["budget"] != "max_tokens" {
		t.Fatalf("status %s, interrupt %+v; want a max_tokens budget interrupt", res.Status, res.Interrupt)
	}
	if _, err := e.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{"max_tokenz": 900}}); err == nil {
		t.Fatal("resume with an unknown budget: no error")
	}
	// A cold resume (fresh engine) sees the usage so far (450: the third
	// visit spent its LLM call, then its tool call was refused): 900 tokens
	// allow two more visits, then the thread pauses again.
	e2 := &runner.Engine{Store: e.Store}
	res, err = e2.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{"max_tokens": 900}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runner.StatusInterrupted || res.State["n"] != int64(4) || res.Usage.Tokens() != 900 {
		t.Fatalf("status %s, n = %v, tokens %d; want interrupted at 4 with 900", res.Status, res.State["n"], res.Usage.Tokens())
	}
	res, err = e2.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{"approved": false}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runner.StatusFailed || res.Error.Code != "budget_exceeded" || !strings.Contains(res.Error.Message, "budget max_tokens exceeded: used 900 of 900") {
		t.Fatalf("refused extension: status %s, error %+v", res.Status, res.Error)
	}
}

// TestUsageSurvivesResume checks that a cold resume keeps counting from
// the checkpointed usage, and that expressions see it as budget.
func TestUsageSurvivesResume(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	g := spendGraph(runner.Budget{MaxLLMCalls: 7})
	ctx1, cancel := context.WithCancel(ctx)
	var seen []any
	g.Nodes["work"].Routes = append([]runner.Route{{When: cond(func(v map[string]any) bool {
		seen = append(seen, v["budget"].(map[string]any)["llm_calls"])
		if len(seen) == 3 {
			cancel()
		}
		return false
	}), To: runner.End}}, g.Nodes["work"].Routes...)
	res, err := (&runner.Engine{Store: st}).Run(ctx1, g, "t", nil)
	if err != nil || res.Status != runner.StatusCancelled {
		t.Fatalf("status %v, %v; want cancelled", res, err)
	}
	res, err = (&runner.Engine{Store: st}).Resume(ctx, g, "t", runner.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Code != "budget_exceeded" || res.Usage.LLMCalls != 7 || res.Usage.CostUSD < 0.069 {
		t.Fatalf("status %s, error %+v, usage %+v; want max_llm_calls exceeded at 7 calls", res.Status, res.Error, res.Usage)
	}
	if seen[0] != 1 || seen[1] != 2 {
		t.Errorf("budget.llm_calls seen by routes = %v, want 1, 2, ...", seen)
	}
}

// cond adapts a function of the variables to runner.Condition.
type cond func(map[string]any) bool

func (c cond) EvalBool(vars map[string]any) (bool, error) { return c(vars), nil }

// TestChildSharesBudget checks that a child thread spends from its
// parent's budget: its calls count in the parent's usage and limits.
func TestChildSharesBudget(t *testing.T) {
	child := spendGraph(runner.Budget{})
	parent := &runner.Graph{Name: "parent", Start: "sub", Hash: "p", Budget: runner.Budget{MaxLLMCalls: 4},
		Fields: map[string]runner.Field{"status": {Reducer: runner.Replace}},
		Nodes: map[string]*runner.Step{"sub": {Name: "sub", Node: fn(func(ctx context.Context, in *runner.Input) (runner.Update, error) {
			res, err := in.Run.Child(ctx, child, "sub", nil, nil)
			if err != nil {
				return nil, err
			}
			return runner.Update{"status": res.Status}, nil
		}), Routes: []runner.Route{{To: runner.End}}}},
	}
	res, err := (&runner.Engine{Store: newStore(t)}).Run(context.Background(), parent, "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.State["status"] != runner.StatusFailed || res.Usage.LLMCalls != 4 {
		t.Fatalf("child status %v, parent usage %+v; want the child stopped by the parent's 4 LLM calls", res.State["status"], res.Usage)
	}
}

// TestCallToolCancelled: a call that gets through while its run is being
// cancelled ends the node with the cancellation, never with an empty
// outcome and no error.
func TestCallToolCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	work := fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
		o, err := in.Run.CallTool(ctx, runner.ToolRequest{Spec: &runner.ToolSpec{Name: "ignores_ctx",
			Tool: runner.ToolFunc(func(context.Context, *runner.ToolCall) (any, error) { cancel(); return "done", nil })}})
		if err == nil && o.Exec == nil {
			t.Error("CallTool returned no outcome and no error")
		}
		return nil, err
	})
	g := &runner.Graph{Name: "c", Start: "work", Hash: "h", Fields: map[string]runner.Field{},
		Nodes: map[string]*runner.Step{"work": {Name: "work", Node: work, Routes: []runner.Route{{To: runner.End}}}}}
	if _, err := (&runner.Engine{}).Run(context.Background(), g, "t", nil); err != nil {
		t.Fatal(err)
	}
}

// A run cancelled in the middle of an LLM call does not count the call it
// never got an answer to: its resume makes it again with the same call
// number, so a scripted provider gives the reply an uninterrupted run gets.
func TestCancelledCallIsNotCounted(t *testing.T) {
	var calls []int
	started := make(chan struct{}, 1)
	slow := providerFunc(func(ctx context.Context, req *runner.ChatRequest) (*runner.ChatResponse, error) {
		calls = append(calls, req.Call)
		if len(calls) == 1 {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &runner.ChatResponse{}, nil
	})
	ask := fn(func(ctx context.Context, in *runner.Input) (runner.Update, error) {
		_, _, err := in.Run.CallLLM(ctx, &runner.LLMRequest{Provider: slow, Model: "m", Chat: &runner.ChatRequest{},
			Price: func(runner.Usage) float64 { return 0 }})
		return runner.Update{"n": 1}, err
	})
	g := &runner.Graph{Name: "ask", Start: "ask", Hash: "h",
		Fields: map[string]runner.Field{"n": {Reducer: runner.Add, Default: int64(0)}},
		Nodes:  map[string]*runner.Step{"ask": {Name: "ask", Node: ask, Routes: []runner.Route{{To: runner.End}}}}}
	e := &runner.Engine{Store: newStore(t)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if res, err := e.Run(ctx, g, "t", nil); err != nil || res.Status != runner.StatusCancelled {
		t.Fatalf("run: %v %+v", err, res)
	}
	res, err := e.Resume(context.Background(), g, "t", runner.ResumeOptions{})
	if err != nil || res.Status != runner.StatusCompleted || res.Usage.LLMCalls != 1 {
		t.Fatalf("resume: %v %+v", err, res)
	}
	if len(calls) != 2 || calls[0] != 0 || calls[1] != 0 {
		t.Errorf("call numbers %v, want [0 0]: the cut call is made again as the same call", calls)
	}
}
