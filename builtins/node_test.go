package builtins_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// checked runs loaded documents through the real checker; they must be
// valid.
func checked(t testing.TB, docs []*dsl.Document, diags dsl.Diagnostics) (*dsl.Checker, *dsl.Project) {
	t.Helper()
	c, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	proj, more := c.Check(docs)
	if diags = append(diags, more...); diags.HasErrors(false) {
		t.Fatalf("invalid definitions:\n%s", diags.Error())
	}
	return c, proj
}

// compileChecked compiles the pipeline called name, with mocked tools.
func compileChecked(t *testing.T, c *dsl.Checker, proj *dsl.Project, name string, mocks map[string]runner.Tool) *runner.Graph {
	t.Helper()
	g, err := c.Compile(proj, name, dsl.CompileOptions{Tool: builtins.Tool, Mocks: mocks})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// compile checks YAML source and compiles its pipeline called name.
func compile(t *testing.T, src, name string, mocks map[string]runner.Tool) *runner.Graph {
	t.Helper()
	docs, diags := dsl.Parse("test.yaml", []byte(src))
	c, proj := checked(t, docs, diags)
	return compileChecked(t, c, proj, name, mocks)
}

func engine(t *testing.T) *runner.Engine {
	st := store.NewMemory()
	t.Cleanup(func() { st.Close() })
	return &runner.Engine{Store: st}
}

const subgraphSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: parent}
state:
  request: {type: string}
  verdict: {type: object}
  log: {type: array, items: {type: string}, reducer: append}
start: ask
nodes:
  ask:
    type: subgraph
    with:
      pipeline: approval
      input: {question: '"Ship " + state.request + "?"'}
      output: {verdict: result.answer, log: '"child said " + string(result.answer.ok)'}
    next: END
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: approval}
state:
  question: {type: string}
  answer: {type: object}
start: gate
nodes:
  gate:
    type: interrupt
    with:
      kind: approval
      message: "${state.question}"
      resume_schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
      into: answer
    next: END
`

// TestSubgraphInterruptResume pauses inside a subgraph, resumes the parent,
// and maps the child's final state back.
func TestSubgraphInterruptResume(t *testing.T) {
	ctx := context.Background()
	e := engine(t)
	g := compile(t, subgraphSrc, "parent", nil)
	res, err := e.Run(ctx, g, "p", map[string]any{"request": "v2"})
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.Message != "Ship v2?" {
		t.Fatalf("run: %v %+v", err, res)
	}
	if _, err := e.Store.History(ctx, "p/ask@0"); err != nil {
		t.Fatalf("the child's checkpoints are not under the parent thread: %v", err)
	}
	if _, err := e.Resume(ctx, g, "p", runner.ResumeOptions{Value: map[string]any{"ok": "yes"}}); !errors.Is(err, runner.ErrInvalidResume) {
		t.Fatalf("bad value: %v", err)
	}
	res, err = e.Resume(ctx, g, "p", runner.ResumeOptions{Value: map[string]any{"ok": true}})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}
	if res.State["verdict"].(map[string]any)["ok"] != true || res.State["log"].([]any)[0] != "child said true" {
		t.Errorf("state %v", res.State)
	}
}

// TestInterruptValue: an interrupt node's value: transforms the resume
// value, checked against resume_schema first, before it is written; a
// value it cannot compute is refused and the thread stays paused.
func TestInterruptValue(t *testing.T) {
	ctx := context.Background()
	e := engine(t)
	g := compile(t, `apiVersion: runner/v1
kind: Pipeline
metadata: {name: p}
state: {approved: {type: boolean}}
start: gate
nodes:
  gate:
    type: interrupt
    next: END
    with:
      resume_schema: {type: object, properties: {decision: {type: string}, by: {type: string}}, required: [decision]}
      value: lower(resume.decision) in ["approve", "yes"] && len(resume.by) > 0
      into: approved
      kind: approval
`, "p", nil)
	if _, err := e.Run(ctx, g, "t", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{"decision": "YES"}}); !errors.Is(err, runner.ErrInvalidResume) ||
		!strings.Contains(err.Error(), "value: ") {
		t.Fatalf("a value the expression cannot compute: %v, want it refused", err)
	}
	res, err := e.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{"decision": "YES", "by": "ann"}})
	if err != nil || res.Status != runner.StatusCompleted || res.State["approved"] != true {
		t.Fatalf("resume: %v %+v, want approved true", err, res)
	}
}

// TestConditionalStartPipeline: a pipeline's start routes choose its first
// node from the input, with no step of their own.
func TestConditionalStartPipeline(t *testing.T) {
	g := compile(t, `apiVersion: runner/v1
kind: Pipeline
metadata: {name: p}
state:
  question: {type: string}
  answer: {type: string}
start:
  - when: hasSuffix(state.question, "?")
    to: answer
  - to: END
nodes:
  answer: {type: set, with: {answer: '"yes"'}, next: END}
`, "p", nil)
	for q, want := range map[string][]string{"ready?": {"answer"}, "hello": nil} {
		res, err := engine(t).Run(context.Background(), g, "t", map[string]any{"question": q})
		if err != nil || res.Status != runner.StatusCompleted || len(res.Path) != len(want) || len(want) > 0 && res.Path[0] != want[0] {
			t.Errorf("%q: %v %+v, want path %v", q, err, res, want)
		}
	}
}

const parallelSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: fan}
state:
  n: {type: integer}
  results: {type: array, reducer: append}
start: all
nodes:
  all:
    type: parallel
    with:
      max_concurrency: 2
      on_failure: %s
      branches:
        - {pipeline: double, input: {x: state.n}, output: {results: '[result.y]'}}
        - {pipeline: double, input: {x: state.n + 1}, output: {results: '[result.y]'}}
        - {pipeline: boom, output: {results: '["never"]'}}
    next: END
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: double}
state:
  x: {type: integer}
  y: {type: integer}
start: calc
nodes:
  calc: {type: set, with: {y: state.x * 2}, next: END}
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: boom}
state:
  y: {type: integer}
start: fail
nodes:
  fail: {type: tool, with: {tool: broken, fatal: true}, next: END}
---
apiVersion: runner/v1
kind: Tool
metadata: {name: broken}
parameters: {type: object}
builtin: sample_transaction_context
`

func TestParallel(t *testing.T) {
	broken := map[string]runner.Tool{"broken": runner.ToolFunc(func(context.Context, *runner.ToolCall) (any, error) {
		return nil, errors.New("disk on fire")
	})}
	t.Run("continue joins the branches in order through the reducer", func(t *testing.T) {
		g := compile(t, strings.Replace(parallelSrc, "%s", "continue", 1), "fan", broken)
		res, err := engine(t).Run(context.Background(), g, "p", map[string]any{"n": 5})
		if err != nil || res.Status != runner.StatusCompleted {
			t.Fatalf("%v %+v", err, res)
		}
		if got := fmt.Sprint(res.State["results"]); got != "[10 12]" {
			t.Errorf("results = %v, want [10 12]", got)
		}
	})
	t.Run("fail fails the node", func(t *testing.T) {
		g := compile(t, strings.Replace(parallelSrc, "%s", "fail", 1), "fan", broken)
		res, err := engine(t).Run(context.Background(), g, "p", map[string]any{"n": 5})
		if err != nil || res.Status != runner.StatusFailed || !strings.Contains(res.Error.Message, "disk on fire") {
			t.Fatalf("%v %+v", err, res)
		}
	})
}

const mapSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: each}
state:
  items: {type: array, description: "any items: the tool's parameters refuse what is not an integer"}
  out: {type: array}
start: go
nodes:
  go:
    type: map
    with: {over: state.items, tool: square, args: {x: item, pos: index}, into: out, max_concurrency: 3, on_failure: %s}
    next: END
---
apiVersion: runner/v1
kind: Tool
metadata: {name: square}
parameters: {type: object, properties: {x: {type: integer}, pos: {type: integer}}, required: [x]}
expr: '{"sq": args.x * args.x, "pos": args.pos}'
`

func TestMap(t *testing.T) {
	t.Run("continue keeps order and records failures", func(t *testing.T) {
		g := compile(t, strings.Replace(mapSrc, "%s", "continue", 1), "each", nil)
		res, err := engine(t).Run(context.Background(), g, "m", map[string]any{"items": []any{1, 2, "three", 4}})
		if err != nil || res.Status != runner.StatusCompleted {
			t.Fatalf("%v %+v", err, res)
		}
		out := res.State["out"].([]any)
		if len(out) != 4 || fmt.Sprint(out[3]) != "map[pos:3 sq:16]" {
			t.Errorf("out = %v", out)
		}
		if _, failed := out[2].(map[string]any)["error"]; !failed {
			t.Errorf("element 2 = %v, want an error entry", out[2])
		}
	})
	t.Run("fail fails the node", func(t *testing.T) {
		g := compile(t, strings.Replace(mapSrc, "%s", "fail", 1), "each", nil)
		res, err := engine(t).Run(context.Background(), g, "m", map[string]any{"items": []any{1, "three"}})
		if err != nil || res.Status != runner.StatusFailed || !strings.Contains(res.Error.Message, "element 1") {
			t.Fatalf("%v %+v", err, res)
		}
	})
}

const toolSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: calls}
state:
  which: {type: string}
  out: {type: any}
  execs: {type: array, reducer: append}
  done: {type: array, items: {type: string}, reducer: append}
start: call
nodes:
  call:
    type: tool
    with: {select: state.which, tools: [slow, fast], output: out, record: execs, completed: done, timeout: 20ms}
    next: END
---
apiVersion: runner/v1
kind: Tool
metadata: {name: slow}
parameters: {type: object}
expr: "1"
---
apiVersion: runner/v1
kind: Tool
metadata: {name: fast}
parameters: {type: object}
expr: "42"
`

func TestToolNode(t *testing.T) {
	slow := map[string]runner.Tool{"slow": runner.ToolFunc(func(ctx context.Context, _ *runner.ToolCall) (any, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
			return "late", nil
		}
	})}
	cases := []struct {
		which, status string
		out           any
	}{
		{"fast", runner.ToolSuccess, int64(42)},
		{"slow", runner.ToolTimedOut, nil},
	}
	for _, c := range cases {
		t.Run(c.which, func(t *testing.T) {
			g := compile(t, toolSrc, "calls", slow)
			res, err := engine(t).Run(context.Background(), g, "t", map[string]any{"which": c.which})
			if err != nil || res.Status != runner.StatusCompleted {
				t.Fatalf("%v %+v", err, res)
			}
			exec := res.State["execs"].([]any)[0].(map[string]any)
			if exec["status"] != c.status || exec["tool_name"] != c.which || res.State["done"].([]any)[0] != c.which {
				t.Errorf("execution %v, done %v", exec, res.State["done"])
			}
			if out := res.State["out"]; out != c.out && !(c.out == int64(42) && out == 42) {
				t.Errorf("out = %#v, want %#v", out, c.out)
			}
		})
	}
	t.Run("select outside the list", func(t *testing.T) {
		g := compile(t, toolSrc, "calls", nil)
		res, _ := engine(t).Run(context.Background(), g, "t", map[string]any{"which": "rm"})
		if res.Status != runner.StatusFailed || !strings.Contains(res.Error.Message, "not one of the node's tools [fast slow]") {
			t.Fatalf("%+v", res.Error)
		}
	})
}

// TestFatalToolTimeoutRetriesAsTimeout checks a fatal tool's timeout is a
// timeout to the node's retry policy, like a node's own.
func TestFatalToolTimeoutRetriesAsTimeout(t *testing.T) {
	calls := 0
	slow := map[string]runner.Tool{"slow": runner.ToolFunc(func(ctx context.Context, _ *runner.ToolCall) (any, error) {
		calls++
		<-ctx.Done()
		return nil, ctx.Err()
	})}
	src := strings.Replace(toolSrc, "timeout: 20ms}", "timeout: 5ms, fatal: true}\n    retry: {max_attempts: 2, on: [timeout]}", 1)
	g := compile(t, src, "calls", slow)
	res, err := engine(t).Run(context.Background(), g, "t", map[string]any{"which": "slow"})
	if err != nil || res.Status != runner.StatusFailed || calls != 2 || !strings.Contains(res.Error.Message, "tool slow timed out after 5ms") {
		t.Fatalf("after %d calls: %v %+v", calls, err, res.Error)
	}
}
