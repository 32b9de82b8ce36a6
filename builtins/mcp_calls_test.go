package builtins_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/builtins/mcptest"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// callPipeline calls one MCP tool from a tool node, with the shipped
// platform rules.
const callPipeline = `
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: call}
input:
  tool: {type: string}
  args: {type: object}
state:
  tool: {type: string}
  args: {type: object}
  out: {type: any}
  runs: {type: array, reducer: append, default: []}
start: call
nodes:
  call:
    type: tool
    with:
      select: state.tool
      tools: [echo, count, slow, getenv]
      args: {text: state.args.text, item: state.args.item, ms: state.args.ms, name: state.args.name}
      output: out
      record: runs
    next: END
`

// mcpGraph compiles callPipeline against the test server, counting into
// count, with the shipped platform rule sets.
func mcpGraph(t testing.TB, count string) *runner.Graph {
	t.Helper()
	src := strings.Replace(mcpServer(t, "", count), "tools:\n", "tools:\n  - {tool: count}\n  - {tool: slow, mutating: false, timeout: 300ms}\n"+
		"  - {tool: getenv, mutating: false}\n", 1)
	src = strings.Replace(src, "env: {", "secrets: {key: RUNNER_TEST_MCP_KEY}\nenv: {SERVER_KEY: \"${secrets.key}\", ", 1)
	docs, diags := dsl.Parse("t.yaml", []byte(src+callPipeline))
	rules, more := dsl.Load("../rules/platform.yaml")
	c, proj := checked(t, append(docs, rules...), append(diags, more...))
	box := &builtins.Toolbox{}
	t.Cleanup(func() { _ = box.Close() })
	g, err := c.Compile(proj, "call", dsl.CompileOptions{Tool: box.Tool})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestMCPGovernedCalls: an MCP tool's call goes through the call path —
// a tool not declared read-only is gated by the shipped platform rule,
// and runs once, with its idempotency key, when approved; the tool's
// timeout cuts a slow call; the server's secrets are redacted from what
// it answers.
func TestMCPGovernedCalls(t *testing.T) {
	t.Setenv("RUNNER_TEST_MCP_KEY", "mcp-s3cret-value")
	count := filepath.Join(t.TempDir(), "count")
	g := mcpGraph(t, count)
	ctx := context.Background()
	e := &runner.Engine{Store: store.NewMemory()}
	run := func(thread, tool string, args map[string]any) *runner.Result {
		t.Helper()
		res, err := e.Run(ctx, g, thread, map[string]any{"tool": tool, "args": args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	t.Run("undeclared mutating is gated", func(t *testing.T) {
		res := run("gated", "count", map[string]any{"item": "x"})
		if res.Status != runner.StatusInterrupted || res.Interrupt.Rule != "platform:hitl_on_mcp_mutating" {
			t.Fatalf("status %s, interrupt %+v; want paused by platform:hitl_on_mcp_mutating", res.Status, res.Interrupt)
		}
		if keys, _ := mcptest.Counted(count); len(keys) != 0 {
			t.Fatalf("the gated call ran before approval: %v", keys)
		}
		res, err := e.Resume(ctx, g, "gated", runner.ResumeOptions{Value: map[string]any{"approved": true}})
		if err != nil || res.Status != runner.StatusCompleted {
			t.Fatalf("resume: %v, %+v", err, res)
		}
		keys, _ := mcptest.Counted(count)
		if len(keys) != 1 || keys[0] != "gated:call.0.0" || res.State["out"] != "call 1" {
			t.Errorf("the approved call ran with keys %v and answered %v; want once, keyed gated:call.0.0", keys, res.State["out"])
		}
	})
	t.Run("declared read-only runs", func(t *testing.T) {
		res := run("read", "echo", map[string]any{"text": "hi"})
		if res.Status != runner.StatusCompleted || res.State["out"] != "hi" {
			t.Errorf("status %s, out %v; want completed with hi", res.Status, res.State["out"])
		}
	})
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		res := run("slow", "slow", map[string]any{"ms": 10000})
		rec := res.State["runs"].([]any)[0].(map[string]any)
		if rec["status"] != runner.ToolTimedOut || time.Since(start) > 5*time.Second {
			t.Errorf("record %v after %s; want TIMED_OUT after 300ms", rec, time.Since(start))
		}
	})
	t.Run("secrets redacted", func(t *testing.T) {
		res := run("env", "getenv", map[string]any{"name": "SERVER_KEY"})
		if res.State["out"] != "SERVER_KEY=***" {
			t.Errorf("out %v; want the secret redacted", res.State["out"])
		}
	})
}
