package builtins_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// agentSrc is a tool-calling agent: prompt → llm ⇄ tools → synthesis. Its
// skill brings a persona, a context template and the add tool; remember
// is state-aware.
const agentSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: loop}
state:
  messages: {type: array, reducer: messages}
  pending_tool_calls: {type: array}
  turn_metrics: {type: array, reducer: append}
  llm_phase: {type: string}
  iteration: {type: integer, default: 0}
  notes: {type: array, items: {type: string}, reducer: append, default: []}
  user: {type: object}
  summary: {type: object}
  tool_results: {type: array, reducer: append}
limits: {max_steps: 20}
start: system
nodes:
  system:
    type: prompt
    with: {user: state.user}
    next: ask
  ask:
    type: llm
    with: {tools: [remember], phase: initial, stream: true}
    next:
      - when: len(state.pending_tool_calls) > 0
        to: act
      - to: summarize
  act:
    type: tools
    with: {count: iteration, record: tool_results}
    next:
      - when: state.llm_phase == "synthesis"
        to: summarize
      - to: ask
  summarize:
    type: llm
    with:
      phase: synthesis
      skip: len(state.notes) == 0
      output_schema:
        type: object
        properties: {answer: {type: integer}}
        required: [answer]
      output: summary
    next: END
---
apiVersion: runner/v1
kind: Agent
metadata: {name: calc}
pipeline: loop
model: tiny
skills: [arith]
---
apiVersion: runner/v1
kind: Model
metadata: {name: tiny}
provider: scripted
pricing: {input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25}
---
apiVersion: runner/v1
kind: Skill
metadata: {name: arith}
persona: You add numbers.
context: ["Numbers for ${user.name}."]
tools: [add]
---
apiVersion: runner/v1
kind: Tool
metadata: {name: add, description: Adds two integers.}
parameters:
  type: object
  properties: {a: {type: integer}, b: {type: integer}}
  required: [a, b]
expr: args.a + args.b
---
apiVersion: runner/v1
kind: Tool
metadata: {name: remember}
updates_state: true
parameters:
  type: object
  properties: {note: {type: string}}
  required: [note]
expr: '{"output": "noted", "state": {"notes": [args.note]}}'
`

// compileAgent compiles agent calc with a script.
func compileAgent(t *testing.T, src string, script []dsl.Reply) *runner.Graph {
	t.Helper()
	docs, diags := dsl.Parse("agent.yaml", []byte(src))
	c, proj := checked(t, docs, diags)
	g, err := c.Compile(proj, "loop", dsl.CompileOptions{Tool: builtins.Tool, Agent: proj.Agents["calc"], Provider: builtins.ScriptedProviders(script)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestAgentLoop(t *testing.T) {
	script := []dsl.Reply{
		{Node: "ask", ToolCalls: []dsl.ScriptedCall{
			{ID: "c1", Name: "add", Args: map[string]any{"a": 2, "b": 3}},
			{ID: "c2", Name: "remember", Args: map[string]any{"note": "2+3"}},
			{ID: "c3", Name: "nope", Args: map[string]any{}},
			{ID: "c4", Name: "add", Args: `{"a": 1,`},
		}, Usage: &dsl.ScriptedUsage{Input: 1000, Output: 100, Cached: 400}},
		{Node: "ask", Text: "The sum is 5.", Usage: &dsl.ScriptedUsage{Input: 1200, Output: 20}},
		{Node: "summarize", Text: "five"},                        // not JSON: the schema method retries
		{Node: "summarize", Output: map[string]any{"answer": 5}}, // valid
	}
	e := engine(t)
	var tokens []string
	e.Sink = func(ev runner.Event) {
		if ev.Type == runner.EventLLMToken {
			tokens = append(tokens, ev.Data.(map[string]any)["text"].(string))
		}
	}
	res, err := e.Run(context.Background(), compileAgent(t, agentSrc, script), "t", map[string]any{"user": map[string]any{"name": "Ada", "role": "analyst"}})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}
	if got := strings.Join(res.Path, ","); got != "system,ask,act,ask,summarize" {
		t.Errorf("path %s", got)
	}
	msgs := res.State["messages"].([]any)
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if got := strings.Join(roles, ","); got != "system,system,assistant,tool,tool,tool,tool,assistant" {
		t.Errorf("roles %s", got)
	}
	base := msgs[0].(map[string]any)["content"].(string)
	if !strings.HasPrefix(base, "You add numbers.") || !strings.Contains(base, "Name: Ada\nRole: analyst") || msgs[0].(map[string]any)["cache"] != true {
		t.Errorf("prompt prefix %q", base)
	}
	if got := msgs[1].(map[string]any)["content"]; got != "Numbers for Ada." {
		t.Errorf("skill context %q", got)
	}
	wantTool := []string{"5", "noted", `error: unknown tool "nope"; the tools are: remember, add`, "error: tool add: the arguments are not a JSON object"}
	for i, w := range wantTool {
		if got := msgs[3+i].(map[string]any)["content"].(string); !strings.HasPrefix(got, w) {
			t.Errorf("tool message %d = %q, want %q…", i, got, w)
		}
	}
	if res.State["summary"].(map[string]any)["answer"] != int64(5) || res.State["iteration"] != int64(1) || len(res.State["notes"].([]any)) != 1 {
		t.Errorf("summary %v, iteration %v, notes %v", res.State["summary"], res.State["iteration"], res.State["notes"])
	}
	if rec := res.State["tool_results"].([]any); len(rec) != 4 || rec[1].(map[string]any)["output"] != "noted" {
		t.Errorf("tool_results %v; want 4 records, the state-aware tool's output as the model saw it", rec)
	}
	if strings.Join(tokens, "") != "The sum is 5." || len(tokens) < 2 {
		t.Errorf("streamed tokens %q", tokens)
	}
	checkUsage(t, res)
}

// checkUsage checks the run's usage and turn_metrics against the price
// table: 2.5 $/Mtok in, 10 out, 1.25 cached.
func checkUsage(t *testing.T, res *runner.Result) {
	t.Helper()
	u := res.Usage
	if u.LLMCalls != 4 || u.ToolCalls != 2 || u.Iterations != 1 || u.CachedInputTokens != 400 {
		t.Errorf("usage %+v; want 4 LLM calls, 2 tool calls (the unknown and malformed ones never ran), 1 iteration", u)
	}
	first := (1000*2.5 + 400*1.25 + 100*10) / 1e6
	metrics := res.State["turn_metrics"].([]any)
	if len(metrics) != 4 || math.Abs(metrics[0].(map[string]any)["cost_usd"].(float64)-first) > 1e-12 {
		t.Fatalf("turn_metrics %v; want 4, the first costing %v", metrics, first)
	}
	m := metrics[3].(map[string]any)
	if m["node"] != "summarize" || m["phase"] != "synthesis" || m["model"] != "tiny" || m["call"] != int64(4) {
		t.Errorf("last metric %v", m)
	}
	var sum float64
	for _, m := range metrics {
		sum += m.(map[string]any)["cost_usd"].(float64)
	}
	if math.Abs(sum-u.CostUSD) > 1e-12 {
		t.Errorf("metrics cost %v, run cost %v", sum, u.CostUSD)
	}
}

// TestLLMSkip checks that a skipped synthesis makes no call.
func TestLLMSkip(t *testing.T) {
	script := []dsl.Reply{{Node: "ask", Text: "nothing to do"}}
	res, err := engine(t).Run(context.Background(), compileAgent(t, agentSrc, script), "t", nil)
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}
	if res.Usage.LLMCalls != 1 || res.State["llm_phase"] != "synthesis" || res.State["summary"] != nil {
		t.Errorf("usage %+v, phase %v, summary %v", res.Usage, res.State["llm_phase"], res.State["summary"])
	}
}

// TestStructuredOutputSpent checks that 3 methods × 2 attempts bound the
// tries, and that the failure says so.
func TestStructuredOutputSpent(t *testing.T) {
	script := []dsl.Reply{{Node: "ask", ToolCalls: []dsl.ScriptedCall{{Name: "remember", Args: map[string]any{"note": "x"}}}}, {Node: "ask", Text: "ok"}}
	for range 6 {
		script = append(script, dsl.Reply{Node: "summarize", Output: map[string]any{"answer": "five"}})
	}
	res, err := engine(t).Run(context.Background(), compileAgent(t, agentSrc, script), "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runner.StatusFailed || !strings.Contains(res.Error.Message, "no valid structured reply after 3 methods × 2 attempts") {
		t.Fatalf("status %s, error %+v", res.Status, res.Error)
	}
	if res.Usage.LLMCalls != 8 {
		t.Errorf("%d LLM calls, want 8", res.Usage.LLMCalls)
	}
}

// TestProviderErrorRetry checks that a provider's 429 goes through the
// node's retry policy and that a spent policy names provider, model and
// cause.
func TestProviderErrorRetry(t *testing.T) {
	src := strings.Replace(agentSrc, "    with: {tools: [remember], phase: initial, stream: true}\n",
		"    with: {tools: [remember], phase: initial}\n    retry: {max_attempts: 2, backoff: 1ms}\n", 1)
	limited := dsl.Reply{Node: "ask", Error: &dsl.ScriptedError{Status: 429, Message: "rate limited"}}
	for _, tc := range []struct {
		name   string
		script []dsl.Reply
		status string
	}{
		{"recovers", []dsl.Reply{limited, {Node: "ask", Text: "fine"}}, runner.StatusCompleted},
		{"spent", []dsl.Reply{limited, limited}, runner.StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := engine(t).Run(context.Background(), compileAgent(t, src, tc.script), "t", nil)
			if err != nil || res.Status != tc.status {
				t.Fatalf("run: %v, status %s, error %+v", err, res.Status, res.Error)
			}
			if res.Error != nil && res.Error.Message != "node ask failed: scripted model tiny: HTTP 429: rate limited (after 2 attempts)" {
				t.Errorf("error %q", res.Error.Message)
			}
		})
	}
}

// TestBudgetLayers checks that an agent's budget overrides the pipeline's
// defaults field by field, and the compile options (RUNNER_BUDGET_*)
// override both.
func TestBudgetLayers(t *testing.T) {
	src := strings.Replace(agentSrc, "limits: {max_steps: 20}", "limits: {max_steps: 20}\nbudget: {max_llm_calls: 1, max_tool_calls: 7, on_exceed: summarize}", 1)
	src = strings.Replace(src, "skills: [arith]\n", "skills: [arith]\nbudget: {max_llm_calls: 3, timeout: 1m}\n", 1)
	docs, diags := dsl.Parse("agent.yaml", []byte(src))
	c, proj := checked(t, docs, diags)
	g, err := c.Compile(proj, "loop", dsl.CompileOptions{Tool: builtins.Tool, Agent: proj.Agents["calc"],
		Provider: builtins.ScriptedProviders(nil), Budget: runner.Budget{MaxTokens: 900, OnExceed: "fail"}})
	if err != nil {
		t.Fatal(err)
	}
	want := runner.Budget{MaxLLMCalls: 3, MaxToolCalls: 7, Timeout: time.Minute, MaxTokens: 900, OnExceed: "fail"}
	if g.Budget != want {
		t.Errorf("budget %+v, want %+v", g.Budget, want)
	}
}

// TestDynamicSkills loads a skill named in the state: its context reaches
// the prompt and its tools the model and the tools node; a name that is no
// skill fails the node.
func TestDynamicSkills(t *testing.T) {
	src := strings.Replace(agentSrc, "skills: [arith]\n", "", 1)
	src = strings.Replace(src, "  summary: {type: object}\n", "  summary: {type: object}\n  injected_skill_ids: {type: array, items: {type: string}}\n", 1)
	src = strings.Replace(src, "with: {user: state.user}", "with: {user: state.user, skills: state.injected_skill_ids}", 1)
	src = strings.Replace(src, "with: {tools: [remember], phase: initial, stream: true}", "with: {tools: [remember], skills: state.injected_skill_ids, phase: initial}", 1)
	script := []dsl.Reply{
		{Node: "ask", ToolCalls: []dsl.ScriptedCall{{ID: "c1", Name: "add", Args: map[string]any{"a": 2, "b": 3}}}},
		{Node: "ask", Text: "5"},
	}
	res, err := engine(t).Run(context.Background(), compileAgent(t, src, script), "t", map[string]any{"injected_skill_ids": []any{"arith"}})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}
	msgs := res.State["messages"].([]any)
	if got := msgs[1].(map[string]any)["content"]; got != "Numbers for user." {
		t.Errorf("skill context %q", got)
	}
	if got := msgs[3].(map[string]any)["content"]; got != "5" {
		t.Errorf("add's tool message %q, want 5", got)
	}
	res, err = engine(t).Run(context.Background(), compileAgent(t, src, script), "t", map[string]any{"injected_skill_ids": []any{"nope"}})
	if err != nil || res.Status != runner.StatusFailed || !strings.Contains(res.Error.Message, `skills: no skill named "nope"`) {
		t.Fatalf("unknown skill: %v %+v", err, res.Error)
	}
}

// chatSrc is a one-call chat: every turn appends the user's message and
// the model's reply to the thread's conversation.
const chatSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: chat}
state:
  messages: {type: array, reducer: messages, default: []}
  turns: {type: integer, default: 0, reducer: add}
  this_turn: {type: integer, default: 0, reducer: add, per_turn: true}
limits: {max_steps: 2}
start: reply
nodes:
  reply:
    type: llm
    with: {model: tiny}
    next: count
  count:
    type: set
    with: {turns: "1", this_turn: "1"}
    next: END
---
apiVersion: runner/v1
kind: Model
metadata: {name: tiny}
provider: scripted
`

// TestMultiTurn runs three turns on one thread: each continues from the
// last state (messages append through their reducer), the scripted replies
// go on in order, and limits count the steps of each turn.
func TestMultiTurn(t *testing.T) {
	docs, diags := dsl.Parse("chat.yaml", []byte(chatSrc))
	c, proj := checked(t, docs, diags)
	g, err := c.Compile(proj, "chat", dsl.CompileOptions{Tool: builtins.Tool,
		Provider: builtins.ScriptedProviders([]dsl.Reply{{Text: "one"}, {Text: "two"}, {Text: "three"}})})
	if err != nil {
		t.Fatal(err)
	}
	e := engine(t)
	var res *runner.Result
	for i, say := range []string{"hi", "and?", "bye"} {
		in := map[string]any{"messages": []any{map[string]any{"role": "user", "content": say}}}
		res, err = e.Run(context.Background(), g, "chat-1", in)
		if err != nil || res.Status != runner.StatusCompleted {
			t.Fatalf("turn %d: %v %+v", i+1, err, res)
		}
		if res.State["turns"] != int64(i+1) || res.State["this_turn"] != int64(1) || len(res.State["messages"].([]any)) != 2*(i+1) {
			t.Fatalf("turn %d: turns %v (want %d), this_turn %v (per_turn: want 1), messages %v", i+1, res.State["turns"], i+1, res.State["this_turn"], res.State["messages"])
		}
	}
	hist, err := e.Store.History(context.Background(), "chat-1")
	if err != nil || len(hist) != 9 { // a start and two steps per turn
		t.Fatalf("history: %v, %d checkpoints", err, len(hist))
	}
	var got []string
	for _, m := range res.State["messages"].([]any) {
		got = append(got, m.(map[string]any)["content"].(string))
	}
	if want := "hi one and? two bye three"; strings.Join(got, " ") != want {
		t.Errorf("conversation %q, want %q", strings.Join(got, " "), want)
	}
}

// TestReplyIDsPerBranch regenerates a reply by rewinding the thread to
// before it, and replays a run: the regenerated reply (another answer, as
// a model gives) has an id of its own, so a client that finds a message's
// checkpoints by its id (the SDK's useStream, for agent-chat-ui's
// regenerate) finds each on its branch; the replay's reply, the same
// answer to the same conversation, has the same id.
func TestReplyIDsPerBranch(t *testing.T) {
	ctx := context.Background()
	docs, diags := dsl.Parse("chat.yaml", []byte(chatSrc))
	c, proj := checked(t, docs, diags)
	var answers atomic.Int64
	model := providerFunc(func(context.Context, *runner.ChatRequest) (*runner.ChatResponse, error) {
		return &runner.ChatResponse{Message: runner.Message{Role: "assistant", Content: fmt.Sprint("answer ", answers.Add(1))}}, nil
	})
	g, err := c.Compile(proj, "chat", dsl.CompileOptions{Tool: builtins.Tool,
		Provider: func(*dsl.ModelDef) (runner.Provider, error) { return model, nil }})
	if err != nil {
		t.Fatal(err)
	}
	e := engine(t)
	replyID := func(res *runner.Result) string {
		msgs := res.State["messages"].([]any)
		return msgs[len(msgs)-1].(map[string]any)["id"].(string)
	}
	hi := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	first, err := e.Run(ctx, g, "c", hi)
	if err != nil || first.Status != runner.StatusCompleted {
		t.Fatalf("run: %v %+v", err, first)
	}
	if _, err := e.Rewind(ctx, g, "c", 1); err != nil { // the input checkpoint, before the reply
		t.Fatal(err)
	}
	again, err := e.Resume(ctx, g, "c", runner.ResumeOptions{})
	if err != nil || again.Status != runner.StatusCompleted {
		t.Fatalf("regenerate: %v %+v", err, again)
	}
	if a, b := replyID(first), replyID(again); a == b {
		t.Errorf("the regenerated reply has the id of the one it replaces: %s", a)
	}
	answers.Store(0)
	replay, err := engine(t).Run(ctx, g, "c", hi)
	if err != nil || replyID(replay) != replyID(first) {
		t.Errorf("a replay's reply is %s, want %s: %v", replyID(replay), replyID(first), err)
	}
}

// providerFunc is a model answering with a function.
type providerFunc func(context.Context, *runner.ChatRequest) (*runner.ChatResponse, error)

func (f providerFunc) Chat(ctx context.Context, req *runner.ChatRequest) (*runner.ChatResponse, error) {
	return f(ctx, req)
}
