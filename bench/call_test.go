package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// ruleProject is a one-node pipeline and a platform rule set of n rules,
// alternately before_tool_call and after_tool_call, none of which matches
// the benchmark's tool; with notes > 0, the last notes after_tool_call
// rules match every call and take a note. Guarded conditions name the
// tool (the runtime skips them for other tools without evaluating them);
// unguarded ones are evaluated on every call.
func ruleProject(n, notes int, guarded bool) string {
	alsoBefore, alsoAfter := "", ""
	if !guarded {
		alsoBefore, alsoAfter = " || tool.mutating", " || !result.ok"
	}
	var b strings.Builder
	b.WriteString(`apiVersion: runner/v1
kind: Pipeline
metadata: {name: host}
start: idle
nodes:
  idle: {type: noop, next: END}
`)
	if n > 0 { // a rule set needs a rule
		b.WriteString(`---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: platform}
scope: platform
rules:
`)
	}
	for i := range n {
		if i%2 == 0 {
			fmt.Fprintf(&b, `  - key: platform:cap_%[1]d
    on: before_tool_call
    when: tool.capability_key == "cap_%[1]d"%[2]s
    do: {deny: {reason: 'no ${tool.capability_key}'}}
`, i, alsoBefore)
			continue
		}
		cond := fmt.Sprintf(`result.tool_name == "other_%d"%s`, i, alsoAfter)
		if n-i <= 2*notes {
			cond = `result.tool_name == "bench_tool" && result.ok`
		}
		fmt.Fprintf(&b, `  - key: platform:other_%d
    on: after_tool_call
    when: '%s'
    do: {note: 'saw ${result.tool_name}'}
`, i, cond)
	}
	return b.String()
}

// compileRules compiles a project's rules through the dsl, as `runner
// exec` would, and returns the graph they come with.
func compileRules(b *testing.B, src string) *runner.Graph {
	c, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		b.Fatal(err)
	}
	docs, diags := dsl.Parse("bench.yaml", []byte(src))
	proj, more := c.Check(docs)
	if diags = append(diags, more...); diags.HasErrors(false) {
		b.Fatal(diags)
	}
	g, err := c.Compile(proj, "host", dsl.CompileOptions{Tool: builtins.Tool})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// benchTool is a no-op tool: what the call path costs is all there is.
func benchTool() *runner.ToolSpec {
	return &runner.ToolSpec{Name: "bench_tool", Capability: "bench_cap",
		Tool: runner.ToolFunc(func(context.Context, *runner.ToolCall) (any, error) { return "ok", nil })}
}

// callGraph is a one-node graph carrying compiled's rules whose node makes
// calls tool calls through the call path, timing them when b is set.
func callGraph(compiled *runner.Graph, spec *runner.ToolSpec, calls int, b *testing.B) *runner.Graph {
	args := map[string]any{"q": "x"}
	call := func(ctx context.Context, in *runner.Input) error {
		o, err := in.Run.CallTool(ctx, runner.ToolRequest{Spec: spec, Args: args})
		switch {
		case err != nil:
			return err
		case o.Err != nil || o.Exec.Output != "ok":
			return fmt.Errorf("call: %v %+v", o.Err, o.Exec)
		}
		return nil
	}
	node := fn(func(ctx context.Context, in *runner.Input) (runner.Update, error) {
		if b == nil {
			for range calls {
				if err := call(ctx, in); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}
		for b.Loop() { // the engine's setup before and teardown after are not timed
			if err := call(ctx, in); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	return &runner.Graph{Name: "calls", Start: "call", Hash: "bench", Fields: map[string]runner.Field{},
		Rules: compiled.Rules, Agent: compiled.Agent,
		Nodes: map[string]*runner.Step{"call": {Name: "call", Node: node, Routes: []runner.Route{{To: runner.End}}}}}
}

// checkRules makes a few calls with a sink and counts the rules that
// fired, so the benchmark measures what it claims to.
func checkRules(b *testing.B, compiled *runner.Graph, rules, notes int) {
	if got := len(compiled.Rules); got != rules {
		b.Fatalf("compiled %d rules, want %d", got, rules)
	}
	const calls = 3
	fired := 0
	e := &runner.Engine{Sink: func(ev runner.Event) {
		if ev.Type == runner.EventRule {
			fired++
		}
	}}
	res, err := e.Run(context.Background(), callGraph(compiled, benchTool(), calls, nil), "check", nil)
	if err = completed(res, err); err != nil {
		b.Fatal(err)
	}
	if fired != calls*notes {
		b.Fatalf("%d rules fired in %d calls, want %d", fired, calls, calls*notes)
	}
}

// completed is why a run did not complete, or nil.
func completed(res *runner.Result, err error) error {
	switch {
	case err != nil:
		return err
	case res.Error != nil:
		return fmt.Errorf("run %s: %s: %s", res.Status, res.Error.Code, res.Error.Message)
	case res.Status != runner.StatusCompleted:
		return fmt.Errorf("run %s", res.Status)
	}
	return nil
}

// BenchmarkToolCall measures one tool call through the call path (budget,
// before_tool_call rules, gate, events, the call, after_tool_call rules,
// charge, record) with 0, 10 and 100 compiled CEL rules that do not match,
// and with 10 of which one takes a note on every call; direct calls the
// same no-op tool with no call path, as the baseline.
func BenchmarkToolCall(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		spec := benchTool()
		args := map[string]any{"q": "x"}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			out, err := spec.Tool.Call(ctx, &runner.ToolCall{Name: spec.Name, Args: args, Key: "bench:call.0.0"})
			if err != nil || out != "ok" {
				b.Fatal(out, err)
			}
		}
	})
	cases := []struct {
		name         string
		rules, notes int
		guarded      bool
	}{
		{"rules=0", 0, 0, true}, {"rules=10", 10, 0, true}, {"rules=100", 100, 0, true},
		{"rules=10,unguarded", 10, 0, false}, {"rules=100,unguarded", 100, 0, false},
		{"rules=10,one-matches-note", 10, 1, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			compiled := compileRules(b, ruleProject(tc.rules, tc.notes, tc.guarded))
			checkRules(b, compiled, tc.rules, tc.notes)
			g := callGraph(compiled, benchTool(), 0, b)
			b.ReportAllocs()
			res, err := (&runner.Engine{}).Run(context.Background(), g, "bench", nil)
			if err = completed(res, err); err != nil {
				b.Fatal(err)
			}
		})
	}
}
