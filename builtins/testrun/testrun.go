// Package testrun runs Test documents: a Test's target, compiled with
// its mocked tools and scripted models, run on a memory store with a
// virtual clock (waits and timeouts take no time), resumed with each of
// its resume steps, and checked against its expectations. Calls a Test does not answer are refused unless live.
package testrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// Run runs Test t of proj and returns what did not meet its expectations. A
// call the Test does not answer (see liveGuard) ends the run, and is all
// it reports.
func Run(ctx context.Context, checker *dsl.Checker, proj *dsl.Project, t *dsl.TestDef, live bool) []string {
	return runTest(ctx, checker, proj, t, live, nil)
}

// runTest is Run; when tr is set, it also reads the events of the Test's
// runs (before: runs included) into tr.
func runTest(ctx context.Context, checker *dsl.Checker, proj *dsl.Project, t *dsl.TestDef, live bool, tr *tracker) []string {
	calls := &callLog{}
	ms, err := mocks(proj, t.Mocks)
	if err != nil {
		return []string{err.Error()}
	}
	guard := &liveGuard{test: t, live: live, tools: &builtins.Toolbox{}}
	defer guard.tools.Close() // the MCP servers of a live Test stop with it
	ctx, guard.cancel = context.WithCancelCause(ctx)
	defer guard.cancel(nil)
	compile := func(script []dsl.Reply) (*runner.Graph, error) {
		return checker.Compile(proj, t.Pipeline, dsl.CompileOptions{Tool: guard.tool, Mocks: ms,
			Agent: proj.Agents[t.Agent], Provider: guard.providers(script)})
	}
	g, err := compile(t.Script)
	if err != nil {
		return []string{err.Error()}
	}
	st := store.NewMemory()
	defer st.Close()
	clock := newClock()
	sink := calls.record
	if tr != nil {
		sink = func(ev runner.Event) { calls.record(ev); tr.event(ev) }
	}
	e := &runner.Engine{Store: st, Sink: sink, Clock: clock, Tenant: t.Tenant}
	if problems := runBefore(ctx, e, t, compile); problems != nil {
		return append(guard.problems(), problems...)
	}
	calls.reset() // the expectations are the Test's own run's
	problems, res, path := runSteps(ctx, e, clock, g, t)
	if refused := guard.problems(); len(refused) > 0 {
		return append(calls.retries(), refused...)
	}
	if problems != nil {
		return problems
	}
	return expectations(t, res, path, calls.names())
}

// runBefore makes the runs a Test makes before its own, each on a thread
// of its own, with graphs compiled for their scripts; it returns what
// kept one from completing.
func runBefore(ctx context.Context, e *runner.Engine, t *dsl.TestDef, compile func([]dsl.Reply) (*runner.Graph, error)) []string {
	for i, b := range t.Before {
		g, err := compile(b.Script)
		if err != nil {
			return []string{err.Error()}
		}
		res, err := e.Run(ctx, g, fmt.Sprintf("before-%d", i+1), b.Input)
		switch {
		case err != nil:
			return []string{fmt.Sprintf("%s: before run %d: %v", b.Pos, i+1, err)}
		case res.Status != runner.StatusCompleted:
			var why error
			if res.Error != nil {
				why = res.Error
			}
			return []string{fmt.Sprintf("%s: before run %d: status %s, want completed%s", b.Pos, i+1, res.Status, errSuffix(why))}
		}
	}
	return nil
}

// runSteps runs a test's target on e, then resumes it with each of its
// resume steps; it returns the problems that stop the test, or the final
// result and the path of nodes run across resumes.
func runSteps(ctx context.Context, e *runner.Engine, clock *clock, g *runner.Graph, t *dsl.TestDef) ([]string, *runner.Result, []string) {
	res, err := e.Run(ctx, g, "test", t.Input)
	if err != nil {
		return []string{err.Error()}, nil, nil
	}
	path := append([]string{}, res.Path...)
	for i, step := range t.Resume { // every step is sent: one the thread does not wait for must be refused
		if ctx.Err() != nil {
			break // a refused call ended the run
		}
		clock.advance(step.After)
		next, err := e.Resume(ctx, g, "test", runner.ResumeOptions{Value: resumeOf(step),
			RunOptions: runner.RunOptions{As: access.Principal{Tenant: t.Tenant, Name: step.As, Roles: step.Roles}}})
		switch {
		case step.Refused != "" && (err == nil || !strings.Contains(err.Error(), step.Refused)):
			return []string{fmt.Sprintf("%s: resume %d: want it refused with %q, got %v", step.Pos, i+1, step.Refused, errOr(err, "no error"))}, nil, nil
		case step.Refused == "" && err != nil:
			return []string{fmt.Sprintf("%s: resume %d: %v", step.Pos, i+1, err)}, nil, nil
		case err == nil:
			res = next
			path = append(path, res.Path...)
		}
	}
	return nil, res, path
}

func errOr(err error, alt string) string {
	if err == nil {
		return alt
	}
	return err.Error()
}

// expectations compares a test's outcome with what it expects; each
// problem starts with the position of the expectation it fails.
func expectations(t *dsl.TestDef, res *runner.Result, path, calls []string) []string {
	var out []string
	ex := t.Expect
	at := func(key, format string, a ...any) {
		out = append(out, ex.At[key].String()+": "+fmt.Sprintf(format, a...))
	}
	if want := ex.Status; want != "" && res.Status != want && !(want == "awaiting_hitl" && res.Status == runner.StatusInterrupted) {
		var why error
		if res.Error != nil {
			why = res.Error
		}
		at("status", "status %s, want %s%s", res.Status, want, errSuffix(why))
	}
	if ex.Path != nil && !slices.Equal(path, ex.Path) {
		at("path", "path%s\n  got:  %s\n  want: %s", firstDifference(path, ex.Path), strings.Join(path, " → "), strings.Join(ex.Path, " → "))
	}
	if ex.ToolCalls != nil && !slices.Equal(calls, ex.ToolCalls) {
		at("tool_calls", "tool calls%s\n  got:  %v\n  want: %v", firstDifference(calls, ex.ToolCalls), calls, ex.ToolCalls)
	}
	for _, tool := range slices.Sorted(maps.Keys(ex.ToolRuns)) {
		if got, want := countOf(calls, tool), ex.ToolRuns[tool]; got != want {
			at("tool_runs", "tool %s ran %d times, want %d", tool, got, want)
		}
	}
	if ex.Approval != nil {
		for _, p := range approvalProblems(ex.Approval, res.Interrupt) {
			at("approval", "%s", p)
		}
	}
	errText := ""
	if res.Error != nil {
		errText = res.Error.Message
	}
	u := res.Usage
	usage := map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "cached_input_tokens": u.CachedInputTokens,
		"cost_usd": u.CostUSD, "llm_calls": int64(u.LLMCalls), "tool_calls": int64(u.ToolCalls), "iterations": int64(u.Iterations),
		"structured_retries": int64(u.StructuredRetries)}
	vars := map[string]any{"state": map[string]any(res.State), "output": res.Output, "status": res.Status, "error": errText, "usage": usage}
	for i, a := range ex.Assert {
		ok, err := a.Program.EvalBool(vars)
		if err != nil || !ok {
			at(fmt.Sprintf("assert.%d", i), "assertion failed: %s%s%s", a.Program.Text(), errSuffix(err), readValues(a.Program.Text(), vars))
		}
	}
	return out
}

// firstDifference says where two sequences first differ.
func firstDifference(got, want []string) string {
	for i := range max(len(got), len(want)) {
		g, w := "(end)", "(end)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf(": entry %d is %s, want %s", i+1, g, w)
		}
	}
	return ""
}

// reads finds the fields an assertion reads: state.x, output.y.
var reads = regexp.MustCompile(`\b(state|output)\.([A-Za-z_][A-Za-z0-9_]*)`)

// readValues renders the values of the fields an assertion reads, one a
// line, so a failure shows what the assertion saw.
func readValues(text string, vars map[string]any) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, m := range reads.FindAllStringSubmatch(text, -1) {
		if seen[m[0]] {
			continue
		}
		seen[m[0]] = true
		obj, _ := vars[m[1]].(map[string]any)
		fmt.Fprintf(&b, "\n  %s = %s", m[0], compactJSON(obj[m[2]]))
	}
	return b.String()
}

// approvalProblems compares the pending approval with the expected one.
func approvalProblems(want *dsl.ExpectApproval, intr *runner.Interrupt) []string {
	if intr == nil || intr.Rule == "" {
		return []string{fmt.Sprintf("no pending approval, want one for %s", want.Tool)}
	}
	var out []string
	if want.Rule != "" && intr.Rule != want.Rule {
		out = append(out, fmt.Sprintf("approval rule %s, want %s", intr.Rule, want.Rule))
	}
	if ct, _ := intr.Payload["checkpoint_type"].(string); want.CheckpointType != "" && ct != want.CheckpointType {
		out = append(out, fmt.Sprintf("approval checkpoint_type %s, want %s", ct, want.CheckpointType))
	}
	acts, _ := intr.Payload["action_requests"].([]any)
	for _, a := range acts {
		act, _ := a.(map[string]any)
		if act["name"] != want.Tool {
			continue
		}
		args, _ := act["args"].(map[string]any)
		for k, v := range want.Args {
			if compactJSON(args[k]) != compactJSON(v) {
				out = append(out, fmt.Sprintf("approval of %s: args.%s = %s, want %s", want.Tool, k, compactJSON(args[k]), compactJSON(v)))
			}
		}
		return out
	}
	return append(out, fmt.Sprintf("the pending approval is for %v, not %s", namesIn(acts), want.Tool))
}

func namesIn(acts []any) []any {
	var out []any
	for _, a := range acts {
		out = append(out, a.(map[string]any)["name"])
	}
	return out
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// errSuffix renders an optional error as " (message)".
func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}

func resumeOf(r dsl.ResumeStep) any {
	if r.Approve != nil {
		return map[string]any{"approved": *r.Approve}
	}
	return r.Value
}

// mocks turns a test's mocks into tools: the n-th call of a tool gets its
// n-th mock, the last repeating.
func mocks(proj *dsl.Project, ms map[string][]dsl.Mock) (map[string]runner.Tool, error) {
	out := map[string]runner.Tool{}
	for name, seq := range ms {
		var err error
		var mu sync.Mutex
		n := 0
		out[name], err = builtins.Checked(proj.Tools[name], runner.ToolFunc(func(ctx context.Context, _ *runner.ToolCall) (any, error) {
			mu.Lock()
			m := seq[min(n, len(seq)-1)]
			n++
			mu.Unlock()
			if err := runner.Sleep(ctx, m.Delay); err != nil {
				return nil, err
			}
			if m.Error != "" {
				return nil, errors.New(m.Error)
			}
			return m.Result, nil
		}))
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// callLog records the tool calls of a run from its events.
type callLog struct {
	mu    sync.Mutex
	calls []string
	// retried says why a node asked its model again: a reply that did
	// not fit its output schema, which is the cause when the script then
	// runs out of replies.
	retried []string
}

func (c *callLog) record(ev runner.Event) {
	d, _ := ev.Data.(map[string]any)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case ev.Type == runner.EventToolCall:
		c.calls = append(c.calls, fmt.Sprint(d["tool"]))
	case ev.Type == runner.EventError && d["retrying"] == true:
		c.retried = append(c.retried, fmt.Sprintf("node %s asked its model again: the reply did not fit its output schema (%v)", ev.Node, d["error"]))
	}
}

func (c *callLog) reset() {
	c.mu.Lock()
	c.calls, c.retried = nil, nil
	c.mu.Unlock()
}

// retries are the reasons nodes asked their models again, one line each.
func (c *callLog) retries() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.retried...)
}

func (c *callLog) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string{}, c.calls...)
}

func compactJSON(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 4000 {
		return string(b[:4000]) + "…"
	}
	return string(b)
}
