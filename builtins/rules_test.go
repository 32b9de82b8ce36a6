package builtins_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/stores"
)

// gateSrc is an agent whose model asks to look an entity up and create
// one; the platform gates mutating capabilities, the agent's rules note,
// deny and abort, and tenant acme aborts instead of asking.
const gateSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: loop}
state:
  messages: {type: array, reducer: messages}
  pending_tool_calls: {type: array}
  records: {type: array, reducer: append}
  created: {type: integer, default: 0}
  notes: {type: integer, default: 0, reducer: add}
limits: {max_steps: 20}
start: ask
nodes:
  ask:
    type: llm
    with: {tools: [lookup, create_entity, delete_everything]}
    next:
      - when: len(state.pending_tool_calls) > 0
        to: act
      - to: END
  act:
    type: tools
    with: {record: records}
    next: ask
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: platform}
scope: platform
rules:
  - key: platform:hitl_on_mutating_capability
    on: before_tool_call
    when: tool.mutating
    do:
      require_hitl:
        checkpoint_type: mutation
        message: 'Create ${tool.args.name}?'
        expires: 24h
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: acme}
tenant: acme
rules:
  - key: platform:hitl_on_mutating_capability
    on: before_tool_call
    when: tool.mutating
    do: {abort: {reason: 'acme does not allow ${tool.name}'}}
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: house}
state:
  notes: {type: integer}
rules:
  - key: house:no_deletes
    on: before_tool_call
    when: '"destructive" in tool.tags'
    do: {deny: {reason: never delete}}
  - key: house:count_lookups
    on: after_tool_call
    when: result.tool_name == "lookup" && result.ok
    do: {set: {notes: "1"}}
  - key: house:audit
    on: after_llm_call
    when: llm.output_tokens > 0
    do: {note: 'model ${llm.model} answered'}
  - key: house:review_secret_lookups
    on: after_tool_call
    when: result.tool_name == "lookup" && tool.args.name == "secret"
    do: {require_hitl: {checkpoint_type: disclosure}}
  - key: house:confirm_long_runs
    on: before_llm_call
    when: llm.call >= 3
    do: {require_hitl: {checkpoint_type: spend}}
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: careful}
rules:
  - key: careful:no_lookups
    on: before_tool_call
    when: tool.name == "lookup"
    do: {deny: {reason: careful clerks do not look up}}
---
apiVersion: runner/v1
kind: Skill
metadata: {name: careful}
rules: [careful]
---
apiVersion: runner/v1
kind: Agent
metadata: {name: clerk}
pipeline: loop
model: tiny
rules: [house]
---
apiVersion: runner/v1
kind: Agent
metadata: {name: careful_clerk}
pipeline: loop
model: tiny
skills: [careful]
rules: [house]
---
` + clerkTools + `---
apiVersion: runner/v1
kind: Tool
metadata: {name: delete_everything}
tags: [destructive]
parameters: {type: object}
expr: '"gone"'
`

// clerkTools are a scripted model and the tools its clerks call: lookup,
// and create_entity, which mutates.
const clerkTools = `apiVersion: runner/v1
kind: Model
metadata: {name: tiny}
provider: scripted
---
apiVersion: runner/v1
kind: Tool
metadata: {name: lookup}
parameters: {type: object, properties: {name: {type: string}}, required: [name]}
expr: '"found " + args.name'
---
apiVersion: runner/v1
kind: Tool
metadata: {name: create_entity}
capability: create_entity
mutating: true
parameters:
  type: object
  properties: {name: {type: string, minLength: 2}}
  required: [name]
  additionalProperties: false
expr: '"created " + args.name'
`

// askToCreate is the script of a round that looks up and creates, then a
// closing answer.
var askToCreate = []dsl.Reply{
	{Node: "ask", ToolCalls: []dsl.ScriptedCall{
		{ID: "c1", Name: "lookup", Args: map[string]any{"name": "Acme Well 1H"}},
		{ID: "c2", Name: "create_entity", Args: map[string]any{"name": "Acme Well 1H"}},
	}},
	{Node: "ask", Text: "Done."},
}

// counter is an idempotent service behind a tool: it executes a call
// once per idempotency key, answering a repeated key from memory, and
// counts both.
type counter struct {
	mu       sync.Mutex
	args     []map[string]any // of each execution
	keys     []string
	answers  map[string]any
	requests int
}

func (c *counter) tool(t *testing.T, proj *dsl.Project, name string) runner.Tool {
	impl := runner.ToolFunc(func(_ context.Context, call *runner.ToolCall) (any, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.requests++
		if ans, ok := c.answers[call.Key]; ok {
			return ans, nil
		}
		c.args, c.keys = append(c.args, call.Args), append(c.keys, call.Key)
		c.answers[call.Key] = "created " + call.Args["name"].(string)
		return c.answers[call.Key], nil
	})
	tool, err := builtins.Checked(proj.Tools[name], impl)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func (c *counter) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.args)
}

// gateRig compiles gateSrc for agent clerk with a counted create_entity.
func gateRig(t *testing.T, script []dsl.Reply) (*runner.Graph, *counter) {
	return agentRig(t, "clerk", script)
}

// agentRig compiles gateSrc for an agent with a counted create_entity.
func agentRig(t *testing.T, agent string, script []dsl.Reply) (*runner.Graph, *counter) {
	t.Helper()
	docs, diags := dsl.Parse("gate.yaml", []byte(gateSrc))
	c, proj := checked(t, docs, diags)
	return gateRigOf(t, c, proj, agent, script)
}

// gateRigOf compiles a checked project's loop for an agent with a counted
// create_entity.
func gateRigOf(t *testing.T, c *dsl.Checker, proj *dsl.Project, agent string, script []dsl.Reply) (*runner.Graph, *counter) {
	t.Helper()
	cnt := &counter{answers: map[string]any{}}
	g, err := c.Compile(proj, "loop", dsl.CompileOptions{Tool: builtins.Tool, Agent: proj.Agents[agent],
		Provider: builtins.ScriptedProviders(script), Mocks: map[string]runner.Tool{"create_entity": cnt.tool(t, proj, "create_entity")}})
	if err != nil {
		t.Fatal(err)
	}
	return g, cnt
}

// paused runs the agent to its gate and checks the pause.
func paused(t *testing.T, e *runner.Engine, g *runner.Graph, cnt *counter) *runner.Result {
	t.Helper()
	res, err := e.Run(context.Background(), g, "t1", nil)
	if err != nil || res.Status != runner.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
	intr := res.Interrupt
	if intr.Rule != "platform:hitl_on_mutating_capability" || intr.Kind != "mutation" || intr.Message != "Create Acme Well 1H?" {
		t.Fatalf("interrupt %+v", intr)
	}
	acts := intr.Payload["action_requests"].([]any)
	act := acts[0].(map[string]any)
	if len(acts) != 1 || act["name"] != "create_entity" || act["args"].(map[string]any)["name"] != "Acme Well 1H" || act["id"] != "c2" {
		t.Fatalf("action_requests %v", acts)
	}
	cfg := intr.Payload["review_configs"].([]any)[0].(map[string]any)
	if cfg["action_name"] != "create_entity" || len(cfg["allowed_decisions"].([]any)) != 4 {
		t.Fatalf("review_configs %v", cfg)
	}
	if cnt.calls() != 0 {
		t.Fatalf("the gated tool ran %d times before the verdict", cnt.calls())
	}
	for _, m := range res.State["messages"].([]any) {
		if m.(map[string]any)["tool_calls"] != nil {
			t.Fatalf("a paused round keeps its assistant tool call: %v", res.State["messages"])
		}
	}
	return res
}

func toolMessages(res *runner.Result) map[string]string {
	out := map[string]string{}
	for _, m := range res.State["messages"].([]any) {
		mm := m.(map[string]any)
		if mm["role"] == "tool" {
			out[mm["tool_call_id"].(string)] = mm["content"].(string)
		}
	}
	return out
}

func TestGateDecisions(t *testing.T) {
	cases := []struct {
		name     string
		verdict  any
		calls    int
		wantName string // the name create_entity ran with
		wantMsg  string // c2's tool message, prefix
	}{
		{"approve", map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}, 1, "Acme Well 1H", "created Acme Well 1H"},
		{"approved shorthand", map[string]any{"approved": true}, 1, "Acme Well 1H", "created Acme Well 1H"},
		{"edit", map[string]any{"decisions": []any{map[string]any{"type": "edit",
			"edited_action": map[string]any{"name": "create_entity", "args": map[string]any{"name": "Acme Well 2H"}}}}}, 1, "Acme Well 2H", "created Acme Well 2H"},
		{"agent inbox edit", []any{map[string]any{"type": "edit", "args": map[string]any{"action": "create_entity", "args": map[string]any{"name": "Acme Well 3H"}}}},
			1, "Acme Well 3H", "created Acme Well 3H"},
		{"reject", map[string]any{"decisions": []any{map[string]any{"type": "reject", "message": "wrong lease"}}}, 0, "",
			"error: denied by rule platform:hitl_on_mutating_capability: rejected by the reviewer: wrong lease"},
		{"agent inbox ignore", map[string]any{"type": "ignore"}, 0, "", "error: denied by rule platform:hitl_on_mutating_capability: rejected by the reviewer"},
		{"respond", map[string]any{"decisions": []any{map[string]any{"type": "respond", "message": "already exists as E-7"}}}, 0, "", "already exists as E-7"},
		{"agent inbox response", map[string]any{"type": "response", "args": "use E-7"}, 0, "", "use E-7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, cnt := gateRig(t, askToCreate)
			e := engine(t)
			paused(t, e, g, cnt)
			res, err := e.Resume(context.Background(), g, "t1", runner.ResumeOptions{Value: c.verdict})
			if err != nil || res.Status != runner.StatusCompleted {
				t.Fatalf("resume: %v %+v", err, res)
			}
			if cnt.calls() != c.calls || (c.calls == 1 && cnt.args[0]["name"] != c.wantName) {
				t.Fatalf("create_entity ran %d times with %v; want %d with %q", cnt.calls(), cnt.args, c.calls, c.wantName)
			}
			msgs := toolMessages(res)
			if !strings.HasPrefix(msgs["c2"], c.wantMsg) || msgs["c1"] != "found Acme Well 1H" {
				t.Errorf("tool messages %v; want c2 %q", msgs, c.wantMsg)
			}
			if c.calls == 1 && cnt.keys[0] != "t1:c2" {
				t.Errorf("idempotency key %q, want t1:c2", cnt.keys[0])
			}
		})
	}
}

func TestGateFailsClosed(t *testing.T) {
	g, cnt := gateRig(t, askToCreate)
	e := engine(t)
	paused(t, e, g, cnt)
	if _, err := e.Run(context.Background(), g, "t1", nil); !errors.Is(err, runner.ErrThreadBusy) || !errors.Is(err, runner.ErrUnfinished) {
		t.Errorf("a new run on a paused thread: %v; want it refused as unfinished (to resume)", err)
	}
	bad := []struct {
		name  string
		value any
		want  string
	}{
		{"no verdict", nil, "waits for a decision"},
		{"unknown type", map[string]any{"decisions": []any{map[string]any{"type": "maybe"}}}, `unknown decision type "maybe"`},
		{"one too many", map[string]any{"decisions": []any{map[string]any{"type": "approve"}, map[string]any{"type": "approve"}}}, "2 decision(s) for 1 gated call"},
		{"not an object", "yes", "not a string"},
		{"invalid edit", map[string]any{"decisions": []any{map[string]any{"type": "edit", "edited_action": map[string]any{"args": map[string]any{"name": "X"}}}}}, "invalid arguments"},
		{"edit without args", map[string]any{"decisions": []any{map[string]any{"type": "edit"}}}, "edited_action"},
	}
	for _, b := range bad {
		_, err := e.Resume(context.Background(), g, "t1", runner.ResumeOptions{Value: b.value})
		if !errors.Is(err, runner.ErrInvalidResume) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: resume error %v, want one containing %q", b.name, err, b.want)
		}
	}
	if cnt.calls() != 0 {
		t.Fatalf("a refused verdict ran the tool %d times", cnt.calls())
	}
	res, err := e.Resume(context.Background(), g, "t1", runner.ResumeOptions{Value: map[string]any{"approved": true}})
	if err != nil || res.Status != runner.StatusCompleted || cnt.calls() != 1 {
		t.Fatalf("approve after refusals: %v %+v, %d calls", err, res, cnt.calls())
	}
	_, err = e.Resume(context.Background(), g, "t1", runner.ResumeOptions{Value: map[string]any{"approved": true}})
	if err == nil || cnt.calls() != 1 {
		t.Fatalf("a second verdict was accepted (%v) or ran the tool again (%d)", err, cnt.calls())
	}
}

// TestGateColdResume resumes in a new engine, with definitions compiled
// again, over the same SQLite file — as after a restart — and ends where a
// warm resume ends, the tool having run once.
func TestGateColdResume(t *testing.T) {
	approve := map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}
	final := func(cold bool) string {
		db := "sqlite:" + filepath.Join(t.TempDir(), "state.db")
		open := func() store.Store {
			st, err := stores.Open(db)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		st := open()
		g, cnt := gateRig(t, askToCreate)
		paused(t, &runner.Engine{Store: st}, g, cnt)
		if cold {
			st.Close()
			st = open()
			g, cnt = gateRig(t, askToCreate)
		}
		defer st.Close()
		res, err := (&runner.Engine{Store: st}).Resume(context.Background(), g, "t1", runner.ResumeOptions{Value: approve})
		if err != nil || res.Status != runner.StatusCompleted || cnt.calls() != 1 {
			t.Fatalf("cold=%v: %v %+v; the tool ran %d times", cold, err, res, cnt.calls())
		}
		return comparable(t, res.State)
	}
	if warm, cold := final(false), final(true); warm != cold {
		t.Errorf("cold resume ends in\n%s\nwarm in\n%s", cold, warm)
	}
}

// TestGateCrash kills the process (its store) at every checkpoint of the
// approved resume, then resumes in a new engine: the gated call executes
// once in all — its result journaled, or, killed between the call and
// the journal, repeated with the same idempotency key — and the thread
// ends as an uninterrupted one.
func TestGateCrash(t *testing.T) {
	approve := map[string]any{"approved": true}
	ref := func() (string, int, runner.RunUsage) {
		g, cnt := gateRig(t, askToCreate)
		e := engine(t)
		paused(t, e, g, cnt)
		res, err := e.Resume(context.Background(), g, "t1", runner.ResumeOptions{Value: approve})
		if err != nil {
			t.Fatal(err)
		}
		return comparable(t, res.State), int(res.Checkpoint), res.Usage
	}
	want, last, usage := ref()
	for n := 1; n <= last; n++ {
		g, cnt := gateRig(t, askToCreate)
		mem := store.NewMemory()
		paused(t, &runner.Engine{Store: mem}, g, cnt)
		_, err := (&runner.Engine{Store: &dyingStore{Store: mem, n: n}}).Resume(context.Background(), g, "t1", runner.ResumeOptions{Value: approve})
		if err == nil {
			break // the resume needed fewer checkpoints
		}
		e := &runner.Engine{Store: mem}
		res, err := e.Resume(context.Background(), g, "t1", runner.ResumeOptions{})
		if errors.Is(err, runner.ErrInvalidResume) { // died before the verdict was recorded: give it again
			res, err = e.Resume(context.Background(), g, "t1", runner.ResumeOptions{Value: approve})
		}
		if err != nil || res.Status != runner.StatusCompleted {
			t.Fatalf("killed at put %d: resume: %v %+v", n, err, res)
		}
		if cnt.calls() != 1 || cnt.requests > 2 || cnt.keys[0] != "t1:c2" {
			t.Errorf("killed at put %d: create_entity executed %d times (%d requests, keys %v)", n, cnt.calls(), cnt.requests, cnt.keys)
		}
		if res.Usage != usage {
			t.Errorf("killed at put %d: usage %+v, want %+v (a resumed round is counted once)", n, res.Usage, usage)
		}
		if got := comparable(t, res.State); got != want {
			t.Errorf("killed at put %d: state\n%s\nwant\n%s", n, got, want)
		}
	}
}

// ruleEvents collects the rule events of a run.
type ruleEvents struct {
	mu   sync.Mutex
	list []map[string]any
}

func (r *ruleEvents) sink(ev runner.Event) {
	if ev.Type == runner.EventRule {
		r.mu.Lock()
		r.list = append(r.list, ev.Data.(map[string]any))
		r.mu.Unlock()
	}
}

func (r *ruleEvents) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.list {
		out = append(out, fmt.Sprint(e["rule"], ": ", e["text"]))
	}
	return out
}

func TestRuleActions(t *testing.T) {
	lookup := func(name string) dsl.ScriptedCall {
		return dsl.ScriptedCall{ID: "l-" + name, Name: "lookup", Args: map[string]any{"name": name}}
	}
	del := dsl.ScriptedCall{ID: "d1", Name: "delete_everything", Args: map[string]any{}}
	t.Run("deny, set and note", func(t *testing.T) {
		g, _ := gateRig(t, []dsl.Reply{{Node: "ask", ToolCalls: []dsl.ScriptedCall{lookup("a"), del}}, {Node: "ask", Text: "ok"}})
		ev := &ruleEvents{}
		e := engine(t)
		e.Sink = ev.sink
		res, err := e.Run(context.Background(), g, "t", nil)
		if err != nil || res.Status != runner.StatusCompleted {
			t.Fatalf("%v %+v", err, res)
		}
		if msg := toolMessages(res)["d1"]; msg != "error: denied by rule house:no_deletes: never delete" {
			t.Errorf("denied call's message %q", msg)
		}
		recs := res.State["records"].([]any)
		if st := recs[1].(map[string]any)["status"]; st != runner.ToolDenied {
			t.Errorf("denied call recorded as %v", st)
		}
		if res.State["notes"] != int64(1) {
			t.Errorf("notes = %v, want 1 (set by house:count_lookups)", res.State["notes"])
		}
		if got := strings.Join(ev.texts(), "; "); !strings.Contains(got, "house:audit: model tiny answered") {
			t.Errorf("rule events %q lack the audit note", got)
		}
	})
	t.Run("tenant override aborts", func(t *testing.T) {
		g, cnt := gateRig(t, askToCreate)
		e := engine(t)
		e.Tenant = "acme"
		res, err := e.Run(context.Background(), g, "t", nil)
		if err != nil || res.Status != runner.StatusFailed || !strings.Contains(res.Error.Message, "acme does not allow create_entity") || cnt.calls() != 0 {
			t.Fatalf("tenant acme: %v %+v, %d calls", err, res, cnt.calls())
		}
	})
	t.Run("skill rules fire while the skill is loaded", func(t *testing.T) {
		script := []dsl.Reply{{Node: "ask", ToolCalls: []dsl.ScriptedCall{lookup("a")}}, {Node: "ask", Text: "ok"}}
		for agent, want := range map[string]string{"clerk": "found a", "careful_clerk": "error: denied by rule careful:no_lookups: careful clerks do not look up"} {
			g, _ := agentRig(t, agent, script)
			res, err := engine(t).Run(context.Background(), g, "t", nil)
			if err != nil || toolMessages(res)["l-a"] != want {
				t.Errorf("%s: %v, lookup message %q, want %q", agent, err, toolMessages(res)["l-a"], want)
			}
		}
	})
	t.Run("gate on a result", func(t *testing.T) {
		for verdict, want := range map[string]string{
			`{"approved": true}`: "found secret",
			`{"decisions": [{"type": "reject", "message": "classified"}]}`:      "error: denied by rule house:review_secret_lookups: result rejected by the reviewer: classified",
			`{"decisions": [{"type": "respond", "message": "no such entity"}]}`: "no such entity",
		} {
			g, _ := gateRig(t, []dsl.Reply{{Node: "ask", ToolCalls: []dsl.ScriptedCall{lookup("secret")}}, {Node: "ask", Text: "ok"}})
			e := engine(t)
			ev := &ruleEvents{}
			e.Sink = ev.sink
			res, err := e.Run(context.Background(), g, "t", nil)
			if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.Kind != "disclosure" || res.Interrupt.Payload["after_call"] != true {
				t.Fatalf("%v %+v", err, res)
			}
			var v any
			_ = json.Unmarshal([]byte(verdict), &v)
			res, err = e.Resume(context.Background(), g, "t", runner.ResumeOptions{Value: v})
			if err != nil || res.Status != runner.StatusCompleted || toolMessages(res)["l-secret"] != want {
				t.Errorf("%s: %v %s, message %q, want %q", verdict, err, res.Status, toolMessages(res)["l-secret"], want)
			}
			if n := res.Usage.ToolCalls; n != 1 {
				t.Errorf("%s: the gated lookup ran %d times", verdict, n)
			}
		}
	})
	t.Run("gate before a model call", func(t *testing.T) {
		script := []dsl.Reply{
			{Node: "ask", ToolCalls: []dsl.ScriptedCall{lookup("a")}},
			{Node: "ask", ToolCalls: []dsl.ScriptedCall{lookup("b")}},
			{Node: "ask", Text: "third"},
		}
		for approved, status := range map[bool]string{true: runner.StatusCompleted, false: runner.StatusFailed} {
			g, _ := gateRig(t, script)
			e := engine(t)
			res, err := e.Run(context.Background(), g, "t", nil)
			if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.Kind != "spend" || res.Usage.LLMCalls != 2 {
				t.Fatalf("%v %+v", err, res)
			}
			res, err = e.Resume(context.Background(), g, "t", runner.ResumeOptions{Value: map[string]any{"approved": approved}})
			if err != nil || res.Status != status || (approved && res.Usage.LLMCalls != 3) {
				t.Errorf("approved=%v: %v %s, %d LLM calls", approved, err, res.Status, res.Usage.LLMCalls)
			}
		}
	})
	t.Run("an unanswered gate expires", func(t *testing.T) {
		g, cnt := gateRig(t, askToCreate)
		clk := &fixedClock{at: time.Now()}
		e := engine(t)
		e.Clock = clk
		paused(t, e, g, cnt)
		if exp := pendingExpiry(t, e); exp == "" {
			t.Fatal("the pause names no expiry")
		}
		clk.at = clk.at.Add(25 * time.Hour)
		res, err := e.Resume(context.Background(), g, "t1", runner.ResumeOptions{Value: map[string]any{"approved": true}})
		if err != nil || res.Status != runner.StatusCompleted || cnt.calls() != 0 {
			t.Fatalf("%v %+v; the expired call ran %d times", err, res, cnt.calls())
		}
		if msg := toolMessages(res)["c2"]; !strings.Contains(msg, "rejected by the reviewer: no decision before") {
			t.Errorf("expired call's message %q", msg)
		}
	})
	t.Run("a resume to expire takes no verdict", func(t *testing.T) {
		g, cnt := gateRig(t, askToCreate)
		clk := &fixedClock{at: time.Now()}
		e := engine(t)
		e.Clock = clk
		paused(t, e, g, cnt)
		expire := runner.ResumeOptions{Expire: true, Value: map[string]any{"approved": true}} // the value is ignored
		res, err := e.Resume(context.Background(), g, "t1", expire)
		if err != nil || res.Status != runner.StatusInterrupted || cnt.calls() != 0 {
			t.Fatalf("before its expiry: %v %+v; the call ran %d times", err, res, cnt.calls())
		}
		clk.at = clk.at.Add(25 * time.Hour)
		res, err = e.Resume(context.Background(), g, "t1", expire)
		if err != nil || res.Status != runner.StatusCompleted || cnt.calls() != 0 {
			t.Fatalf("after its expiry: %v %+v; the call ran %d times", err, res, cnt.calls())
		}
		if msg := toolMessages(res)["c2"]; !strings.Contains(msg, "no decision before") {
			t.Errorf("expired call's message %q", msg)
		}
		if _, err := e.Resume(context.Background(), g, "t1", expire); err == nil {
			t.Error("expiring a completed thread: no error")
		}
	})
}

// pendingExpiry reads the expiry of the thread's pending approval from its newest
// checkpoint.
func pendingExpiry(t *testing.T, e *runner.Engine) string {
	cps, err := e.Store.Load(context.Background(), "t1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var intr runner.Interrupt
	_ = json.Unmarshal(cps[len(cps)-1].Interrupt, &intr)
	s, _ := intr.Payload["expires_at"].(string)
	return s
}

// TestShippedMutatingToolsAreGated checks that every shipped agent that can
// call a mutating tool has a before_tool_call rule that applies to it.
func TestShippedMutatingToolsAreGated(t *testing.T) {
	docs, diags := dsl.Load("../pipelines", "../agents", "../rules")
	c, proj := checked(t, docs, diags)
	box := &builtins.Toolbox{} // the shipped Elyra reads project files over MCP
	defer box.Close()
	for _, a := range proj.Agents {
		g, err := c.Compile(proj, a.Pipeline, dsl.CompileOptions{Tool: box.Tool, Agent: a, Provider: builtins.ScriptedProviders(nil)})
		if err != nil {
			t.Fatal(err)
		}
		for def := range g.Defs { // every tool the graph can call
			tool, ok := strings.CutPrefix(def, dsl.KindTool+"/")
			if d := proj.Tools[tool]; !ok || !d.Mutating {
				continue
			}
			info := &runner.ToolInfo{Name: tool, CapabilityKey: proj.Tools[tool].Capability, Mutating: true}
			if !slices.ContainsFunc(g.Rules, func(r *runner.Rule) bool { return r.On == runner.BeforeToolCall && r.Guard.Admits(info) }) {
				t.Errorf("agent %s can call mutating tool %s, which no before_tool_call rule governs", a.Name, tool)
			}
		}
	}
}

// TestAgentRuleOverridesPlatform: an agent's rule with a platform rule's
// key replaces it.
func TestAgentRuleOverridesPlatform(t *testing.T) {
	src := strings.Replace(gateSrc, "rules:\n  - key: house:no_deletes", `rules:
  - key: platform:hitl_on_mutating_capability
    on: before_tool_call
    when: tool.mutating
    do: {note: the clerk may create}
  - key: house:no_deletes`, 1)
	docs, diags := dsl.Parse("gate.yaml", []byte(src))
	c, proj := checked(t, docs, diags)
	g, err := c.Compile(proj, "loop", dsl.CompileOptions{Tool: builtins.Tool, Agent: proj.Agents["clerk"], Provider: builtins.ScriptedProviders(askToCreate)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine(t).Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusCompleted || toolMessages(res)["c2"] != "created Acme Well 1H" {
		t.Fatalf("the agent's rule did not replace the platform gate: %v %+v", err, res)
	}
}

// TestRunawayExpressionFailsTheRun: a route whose expression would loop
// for minutes stops at its bound; the thread ends failed, not stuck
// running, and can be resumed.
func TestRunawayExpressionFailsTheRun(t *testing.T) {
	const src = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: spin}
state:
  xs: {type: array, items: {type: integer}}
start: look
nodes:
  look:
    type: noop
    next:
      - when: 'all(state.xs, all(state.xs, all(state.xs, # >= 0)))'
        to: END
      - to: END
`
	xs := make([]any, 200)
	for i := range xs {
		xs[i] = int64(i)
	}
	g := compile(t, src, "spin", nil)
	e := engine(t)
	res, err := e.Run(context.Background(), g, "t", map[string]any{"xs": xs})
	if err != nil || res.Status != runner.StatusFailed || !strings.Contains(res.Error.Message, "(the limit)") {
		t.Fatalf("%v %+v", err, res)
	}
	if res, err = e.Resume(context.Background(), g, "t", runner.ResumeOptions{}); err != nil || res.Status != runner.StatusFailed {
		t.Fatalf("resume: %v %+v", err, res)
	}
}

// TestPrunedThreadResumes prunes a paused thread to its newest checkpoint
// (compacting it into a snapshot) and resumes it: it ends as an unpruned
// thread does, the gated call run once.
func TestPrunedThreadResumes(t *testing.T) {
	approve := map[string]any{"approved": true}
	final := func(prune bool) (string, int) {
		g, cnt := gateRig(t, askToCreate)
		e := engine(t)
		paused(t, e, g, cnt)
		removed := 0
		if prune {
			var err error
			if removed, err = e.Prune(context.Background(), g, "t1", runner.Retention{Keep: 1}); err != nil {
				t.Fatal(err)
			}
			hist, _ := e.Store.History(context.Background(), "t1")
			if len(hist) != 1 || hist[0].Status != runner.StatusInterrupted {
				t.Fatalf("after pruning to 1: %d checkpoints, status %s", len(hist), hist[0].Status)
			}
		}
		res, err := e.Resume(context.Background(), g, "t1", runner.ResumeOptions{Value: approve})
		if err != nil || res.Status != runner.StatusCompleted || cnt.calls() != 1 {
			t.Fatalf("prune=%v: %v %+v, %d calls", prune, err, res, cnt.calls())
		}
		return comparable(t, res.State), removed
	}
	want, _ := final(false)
	got, removed := final(true)
	if got != want || removed == 0 {
		t.Errorf("pruned (%d removed) and resumed:\n%s\nwant\n%s", removed, got, want)
	}
}

// TestUpdateAndFork edits a paused thread and continues it, and forks it
// (at its newest checkpoint and at its start) into threads that run on
// their own; the original is unchanged by its forks.
func TestUpdateAndFork(t *testing.T) {
	ctx := context.Background()
	approve := runner.ResumeOptions{Value: map[string]any{"approved": true}}
	g, cnt := gateRig(t, append(slices.Clone(askToCreate), askToCreate...))
	e := engine(t)
	paused(t, e, g, cnt)

	ts, err := e.Update(ctx, g, "t1", runner.Update{"notes": int64(5)}, "")
	if err != nil || ts.Status != runner.StatusInterrupted || ts.Interrupt == nil || ts.State["notes"] != int64(5) {
		t.Fatalf("update of a paused thread: %v %+v", err, ts)
	}
	if _, err := e.Fork(ctx, g, "t1", 0, "t1-fork"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Fork(ctx, g, "t1", 1, "t1-again"); err != nil {
		t.Fatal(err)
	}
	res, err := e.Resume(ctx, g, "t1", approve)
	if err != nil || res.Status != runner.StatusCompleted || res.State["notes"] != int64(6) || cnt.calls() != 1 {
		t.Fatalf("resume after update: %v %+v (notes: 5 set, +1 by the lookup rule), %d calls", err, res, cnt.calls())
	}
	res, err = e.Resume(ctx, g, "t1-fork", approve)
	if err != nil || res.Status != runner.StatusCompleted || res.State["notes"] != int64(6) || cnt.calls() != 2 || cnt.keys[1] != "t1-fork:c2" {
		t.Fatalf("the fork at the pause: %v %+v, calls %v", err, res, cnt.keys)
	}
	res, err = e.Resume(ctx, g, "t1-again", runner.ResumeOptions{})
	if err != nil || res.Status != runner.StatusInterrupted || !slices.Equal(res.Path, []string{"ask"}) {
		t.Fatalf("the fork at the start runs from the start and pauses at the gate: %v %+v", err, res)
	}
	if _, err := e.Fork(ctx, g, "t1", 0, "t1-fork"); !errors.Is(err, runner.ErrThreadBusy) {
		t.Errorf("a fork onto an existing thread: %v", err)
	}
}

// TestUpdateAsNode writes to a completed thread as a node would: the
// thread then stands at that node's next, and a resume continues there.
func TestUpdateAsNode(t *testing.T) {
	ctx := context.Background()
	docs, diags := dsl.Parse("chat.yaml", []byte(chatSrc))
	c, proj := checked(t, docs, diags)
	g, err := c.Compile(proj, "chat", dsl.CompileOptions{Tool: builtins.Tool, Provider: builtins.ScriptedProviders([]dsl.Reply{{Text: "one"}})})
	if err != nil {
		t.Fatal(err)
	}
	e := engine(t)
	if _, err := e.Run(ctx, g, "c", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}); err != nil {
		t.Fatal(err)
	}
	ts, err := e.Update(ctx, g, "c", runner.Update{"turns": int64(10)}, "reply")
	if err != nil || ts.Status != runner.StatusUpdated || ts.Next != "count" || ts.State["turns"] != int64(11) {
		t.Fatalf("update as reply: %v %+v", err, ts)
	}
	res, err := e.Resume(ctx, g, "c", runner.ResumeOptions{})
	if err != nil || res.Status != runner.StatusCompleted || !slices.Equal(res.Path, []string{"count"}) || res.State["turns"] != int64(12) {
		t.Fatalf("continue after the update: %v %+v", err, res)
	}
	if _, err := e.Update(ctx, g, "c", nil, "nope"); !errors.Is(err, runner.ErrInput) {
		t.Errorf("update as an unknown node: %v", err)
	}
}
