package builtins_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// deskSrc has a gate of each kind, each asking for a named reviewer in
// its resume_schema: before a mutating call, after a lookup of "secret",
// and before the second model call of a form. Set rules count lookups
// and model calls; the budget allows two tool calls.
const deskSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: loop}
state:
  messages: {type: array, reducer: messages}
  pending_tool_calls: {type: array}
  records: {type: array, reducer: append}
  notes: {type: integer, default: 0, reducer: add}
limits: {max_steps: 20}
start: ask
nodes:
  ask:
    type: llm
    with: {tools: [lookup, create_entity]}
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
kind: Pipeline
metadata: {name: form}
state:
  messages: {type: array, reducer: messages}
  answer: {type: object}
  notes: {type: integer, default: 0, reducer: add}
start: fill
nodes:
  fill:
    type: llm
    with:
      phase: form
      prompt: Answer.
      output_schema: {type: object, properties: {answer: {type: string}}, required: [answer]}
      output: answer
      methods: [prompt]
      attempts: 2
    next: END
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: desk}
state:
  notes: {type: integer}
rules:
  - key: desk:count_lookups
    on: after_tool_call
    when: result.tool_name == "lookup" && result.ok
    do: {set: {notes: "1"}}
  - key: desk:count_form_calls
    on: before_llm_call
    when: llm.phase == "form"
    do: {set: {notes: "1"}}
  - key: desk:hitl_on_mutating
    on: before_tool_call
    when: tool.mutating
    do: {require_hitl: {checkpoint_type: mutation, resume_schema: {type: object, required: [reviewer], properties: {reviewer: {type: string}, ticket: {type: string}}}}}
  - key: desk:review_secrets
    on: after_tool_call
    when: result.tool_name == "lookup" && tool.args.name == "secret"
    do: {require_hitl: {checkpoint_type: disclosure, resume_schema: {type: object, required: [reviewer], properties: {reviewer: {type: string}}}}}
  - key: desk:second_opinion
    on: before_llm_call
    when: llm.phase == "form" && llm.call >= 2
    do: {require_hitl: {checkpoint_type: spend, resume_schema: {type: object, required: [reviewer], properties: {reviewer: {type: string}}}}}
---
apiVersion: runner/v1
kind: Agent
metadata: {name: desk}
pipeline: loop
model: tiny
rules: [desk]
budget: {max_tool_calls: 2}
---
apiVersion: runner/v1
kind: Agent
metadata: {name: filler}
pipeline: form
model: tiny
rules: [desk]
---
` + clerkTools

// gateKinds are the mixed rounds of each gate kind: one call the gate
// lets through and one it holds, in one round (a model round's tool
// calls, or a node's two model calls).
var gateKinds = []struct {
	name, agent string
	script      []dsl.Reply
}{
	{"before_tool_call", "desk", []dsl.Reply{
		{Node: "ask", ToolCalls: []dsl.ScriptedCall{
			{ID: "c1", Name: "lookup", Args: map[string]any{"name": "a"}},
			{ID: "c2", Name: "create_entity", Args: map[string]any{"name": "Acme"}}}},
		{Node: "ask", Text: "Done."},
	}},
	{"after_tool_call", "desk", []dsl.Reply{
		{Node: "ask", ToolCalls: []dsl.ScriptedCall{
			{ID: "c1", Name: "lookup", Args: map[string]any{"name": "a"}},
			{ID: "c2", Name: "lookup", Args: map[string]any{"name": "secret"}}}},
		{Node: "ask", Text: "Done."},
	}},
	{"before_llm_call", "filler", []dsl.Reply{
		{Node: "fill", Text: "not JSON", Usage: &dsl.ScriptedUsage{Input: 100, Output: 7}},
		{Node: "fill", Output: map[string]any{"answer": "42"}, Usage: &dsl.ScriptedUsage{Input: 130, Output: 9}},
	}},
}

// deskRig compiles deskSrc, its gates made notes when ungated, for agent.
func deskRig(t testing.TB, agent string, script []dsl.Reply, ungated bool) *runner.Graph {
	t.Helper()
	src := deskSrc
	if ungated {
		src = regexp.MustCompile(`do: \{require_hitl: .*\}`).ReplaceAllString(src, "do: {note: ungated}")
	}
	docs, diags := dsl.Parse("desk.yaml", []byte(src))
	c, proj := checked(t, docs, diags)
	a := proj.Agents[agent]
	g, err := c.Compile(proj, a.Pipeline, dsl.CompileOptions{Tool: builtins.Tool, Agent: a, Provider: builtins.ScriptedProviders(script)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var approvedBy = map[string]any{"approved": true, "reviewer": "dana"}

// TestMixedRoundOnce pauses a round that holds one call and let another
// through, at a gate of each kind, and approves it: no call is made
// again, no set rule applies twice, and the run ends with the state and
// the usage of a run without the gate — within a budget of two tool calls.
func TestMixedRoundOnce(t *testing.T) {
	for _, k := range gateKinds {
		t.Run(k.name, func(t *testing.T) {
			ref, err := engine(t).Run(context.Background(), deskRig(t, k.agent, k.script, true), "t", nil)
			if err != nil || ref.Status != runner.StatusCompleted {
				t.Fatalf("ungated run: %v %+v", err, ref)
			}
			g := deskRig(t, k.agent, k.script, false)
			e := engine(t)
			res, err := e.Run(context.Background(), g, "t", nil)
			if err != nil || res.Status != runner.StatusInterrupted {
				t.Fatalf("run: %v %+v, want it paused at the %s gate", err, res, k.name)
			}
			res, err = e.Resume(context.Background(), g, "t", runner.ResumeOptions{Value: approvedBy})
			if err != nil || res.Status != runner.StatusCompleted {
				t.Fatalf("approved: %v %+v", err, res)
			}
			if res.Usage != ref.Usage {
				t.Errorf("usage %+v, want %+v (the run without the gate)", res.Usage, ref.Usage)
			}
			if got, want := unrounded(t, res.State), unrounded(t, ref.State); got != want {
				t.Errorf("state\n%s\nwant (the run without the gate)\n%s", got, want)
			}
		})
	}
}

// TestMixedRoundCrash kills the store at every checkpoint of the approved
// resume of each mixed round and resumes in a new engine: each call is
// made once in all, and the run ends as the run without the gate.
func TestMixedRoundCrash(t *testing.T) {
	for _, k := range gateKinds {
		t.Run(k.name, func(t *testing.T) {
			ref, err := engine(t).Run(context.Background(), deskRig(t, k.agent, k.script, true), "t", nil)
			if err != nil {
				t.Fatal(err)
			}
			for n := 1; ; n++ {
				g := deskRig(t, k.agent, k.script, false)
				mem := store.NewMemory()
				if res, err := (&runner.Engine{Store: mem}).Run(context.Background(), g, "t", nil); err != nil || res.Status != runner.StatusInterrupted {
					t.Fatalf("run: %v %+v", err, res)
				}
				_, err := (&runner.Engine{Store: &dyingStore{Store: mem, n: n}}).Resume(context.Background(), g, "t", runner.ResumeOptions{Value: approvedBy})
				if err == nil {
					break // the resume needed fewer checkpoints
				}
				e := &runner.Engine{Store: mem}
				res, err := e.Resume(context.Background(), g, "t", runner.ResumeOptions{})
				if errors.Is(err, runner.ErrInvalidResume) { // died before the verdict was journaled: give it again
					res, err = e.Resume(context.Background(), g, "t", runner.ResumeOptions{Value: approvedBy})
				}
				if err != nil || res.Status != runner.StatusCompleted {
					t.Fatalf("killed at put %d: resume: %v %+v", n, err, res)
				}
				if res.Usage != ref.Usage {
					t.Errorf("killed at put %d: usage %+v, want %+v", n, res.Usage, ref.Usage)
				}
				if got, want := unrounded(t, res.State), unrounded(t, ref.State); got != want {
					t.Errorf("killed at put %d: state\n%s\nwant\n%s", n, got, want)
				}
			}
		})
	}
}

// TestEveryGateChecksItsVerdict gives each kind of gate verdicts its rule
// must refuse — missing the reviewer its resume_schema requires, with a
// key it does not know, a decision its trigger cannot take — and checks
// that each is refused as bad input, with nothing changed, before an
// approval naming the reviewer is taken and journaled with the reviewer.
func TestEveryGateChecksItsVerdict(t *testing.T) {
	bad := []struct {
		name  string
		value any
		want  string
	}{
		{"no reviewer", map[string]any{"approved": true}, "missing property 'reviewer'"},
		{"comment for message", map[string]any{"approved": false, "reviewer": "dana", "comment": "no"}, `key "comment" that it does not know: did you mean "message"?`},
		{"unknown key in a decision", map[string]any{"reviewer": "dana", "decisions": []any{map[string]any{"type": "reject", "reson": "no"}}},
			`decision 1 has a key "reson" that it does not know: did you mean "message"?`},
		{"edit of a result or a model call", map[string]any{"reviewer": "dana", "decisions": []any{map[string]any{"type": "edit",
			"edited_action": map[string]any{"name": "lookup", "args": map[string]any{"name": "b"}}}}}, "edit is not allowed on this gate"},
	}
	for _, k := range gateKinds {
		t.Run(k.name, func(t *testing.T) {
			g := deskRig(t, k.agent, k.script, false)
			e := engine(t)
			if _, err := e.Run(context.Background(), g, "t", nil); err != nil {
				t.Fatal(err)
			}
			before := history(t, e)
			for _, b := range bad {
				if k.name == "before_tool_call" && b.name == "edit of a result or a model call" {
					continue // an edit is allowed there (TestEditKeepsTheTool)
				}
				_, err := e.Resume(context.Background(), g, "t", runner.ResumeOptions{Value: b.value})
				if !errors.Is(err, runner.ErrInvalidResume) || !errors.Is(err, runner.ErrInput) || !strings.Contains(err.Error(), b.want) {
					t.Errorf("%s: %v, want a refusal (invalid resume, invalid input) containing %q", b.name, err, b.want)
				}
			}
			if after := history(t, e); after != before {
				t.Fatalf("refused verdicts changed the thread:\n%s\nwant\n%s", after, before)
			}
			ev := &ruleEvents{}
			e.Sink = ev.sink
			res, err := e.Resume(context.Background(), g, "t", runner.ResumeOptions{Value: approvedBy})
			if err != nil || res.Status != runner.StatusCompleted {
				t.Fatalf("approved by dana: %v %+v", err, res)
			}
			if got := decisionReviewers(ev); got != "dana" {
				t.Errorf("the decision event names reviewer %q, want dana", got)
			}
		})
	}
}

// TestEditKeepsTheTool: an edit that names another tool than the gated
// one is refused and nothing runs; a key the rule's resume_schema
// declares is taken and journaled with the decision.
func TestEditKeepsTheTool(t *testing.T) {
	k := gateKinds[0]
	g := deskRig(t, k.agent, k.script, false)
	e := engine(t)
	if _, err := e.Run(context.Background(), g, "t", nil); err != nil {
		t.Fatal(err)
	}
	before := history(t, e)
	edit := func(tool string) map[string]any {
		return map[string]any{"reviewer": "dana", "ticket": "OPS-7", "decisions": []any{map[string]any{"type": "edit",
			"edited_action": map[string]any{"name": tool, "args": map[string]any{"name": "Acme 2"}}}}}
	}
	_, err := e.Resume(context.Background(), g, "t", runner.ResumeOptions{Value: edit("lookup")})
	if !errors.Is(err, runner.ErrInput) || !strings.Contains(err.Error(), "the edit names tool lookup, but the gated call is create_entity") {
		t.Fatalf("an edit naming another tool: %v, want it refused", err)
	}
	if after := history(t, e); after != before {
		t.Fatalf("a refused edit changed the thread:\n%s\nwant\n%s", after, before)
	}
	ev := &ruleEvents{}
	e.Sink = ev.sink
	res, err := e.Resume(context.Background(), g, "t", runner.ResumeOptions{Value: edit("create_entity")})
	if err != nil || res.Status != runner.StatusCompleted || toolMessages(res)["c2"] != "created Acme 2" {
		t.Fatalf("the edit of create_entity: %v %+v", err, res)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, d := range ev.list {
		if d["action"] == "decision" {
			b, _ := json.Marshal(d["decisions"])
			if !strings.Contains(string(b), `"extra":{"ticket":"OPS-7"}`) {
				t.Errorf("the decision %s does not keep the ticket the resume_schema declares", b)
			}
		}
	}
}

// unrounded is comparable without the id of the assistant messages that
// asked for tool calls: a round a gate paused is put back under an id of
// its own.
func unrounded(t *testing.T, s runner.State) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(comparable(t, s)), &v); err != nil {
		t.Fatal(err)
	}
	msgs, _ := v["messages"].([]any)
	for _, m := range msgs {
		if mm := m.(map[string]any); mm["tool_calls"] != nil {
			delete(mm, "id")
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// history is the thread t's checkpoints as the test compares them.
func history(t *testing.T, e *runner.Engine) string {
	t.Helper()
	cps, err := e.Store.History(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, cp := range cps {
		full, err := e.Store.Load(context.Background(), "t", cp.ID)
		if err != nil {
			t.Fatal(err)
		}
		last := full[len(full)-1]
		b.WriteString(last.Status + " " + last.Next + " " + string(last.Meta) + "\n")
	}
	return b.String()
}

// decisionReviewers is the reviewer of the run's decision events.
func decisionReviewers(ev *ruleEvents) string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var out []string
	for _, d := range ev.list {
		if d["action"] == "decision" {
			r, _ := d["reviewer"].(string)
			out = append(out, r)
		}
	}
	return strings.Join(out, ",")
}

// TestLockedRuleHolds locks the platform's mutating-capability gate and
// has tenant acme replace it with a note: validate reports the weakening
// at the note, and a run of acme compiled all the same still pauses at the
// platform's gate (the runtime refuses the weakening too); an agent rule
// that weakens it is refused by the compiler.
func TestLockedRuleHolds(t *testing.T) {
	src := strings.Replace(gateSrc, "    when: tool.mutating\n    do:\n      require_hitl:", "    when: tool.mutating\n    locked: true\n    do:\n      require_hitl:", 1)
	src = strings.Replace(src, "do: {abort: {reason: 'acme does not allow ${tool.name}'}}", "do: {note: acme trusts its clerks}", 1)
	c, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := dsl.Parse("gate.yaml", []byte(src))
	proj, diags := c.Check(docs)
	if len(diags) != 1 || diags[0].Code != dsl.CodeRuleLocked || diags[0].Pos.Line != 48 ||
		!strings.Contains(diags[0].Message, "note is weaker than the locked rule's require_hitl") {
		t.Fatalf("diagnostics:\n%s\nwant one %s at gate.yaml:48, naming the weaker note", diags.Error(), dsl.CodeRuleLocked)
	}
	g, cnt := gateRigOf(t, c, proj, "clerk", askToCreate)
	e := engine(t)
	e.Tenant = "acme"
	res, err := e.Run(context.Background(), g, "t1", nil)
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.Rule != "platform:hitl_on_mutating_capability" || cnt.calls() != 0 {
		t.Fatalf("tenant acme: %v %+v, %d calls; want the locked gate to pause it", err, res, cnt.calls())
	}

	agentNote := strings.Replace(src, "rules:\n  - key: house:no_deletes", "rules:\n  - key: platform:hitl_on_mutating_capability\n    on: before_tool_call\n    do: {note: the clerk may create}\n  - key: house:no_deletes", 1)
	docs, _ = dsl.Parse("gate.yaml", []byte(agentNote))
	proj, _ = c.Check(docs)
	_, err = c.Compile(proj, "loop", dsl.CompileOptions{Tool: builtins.Tool, Agent: proj.Agents["clerk"], Provider: builtins.ScriptedProviders(askToCreate)})
	if err == nil || !strings.Contains(err.Error(), "weakens the locked rule of its key: note is weaker") {
		t.Errorf("an agent rule weakening the locked gate compiled: %v", err)
	}
}

// TestRequireGate proves gateSrc's tools gated, or finds the gaps: for
// each agent and each tenant with rules of its own, a tool matching the
// expression is covered by a before_tool_call require_hitl, deny or abort
// whose condition the tool satisfies; a condition that also depends on the
// call is a warning; skill rules and after_tool_call rules do not cover.
func TestRequireGate(t *testing.T) {
	cases := []struct {
		name, expr string
		edit       func(string) string
		want       []string // severity, code, then the message's start
	}{
		{"the mutating tool is gated", "tool.mutating", nil, nil},
		{"the destructive tool is denied", `"destructive" in tool.tags`, nil, nil},
		{"lookups are gated after the call or by a skill only", `tool.name == "lookup"`, nil, []string{
			"error gate.missing agent careful_clerk can call tool lookup (pipeline loop → node ask; pipeline loop → node act)",
			"error gate.missing agent careful_clerk for tenant acme can call tool lookup",
			"error gate.missing agent clerk can call tool lookup",
			"error gate.missing agent clerk for tenant acme can call tool lookup",
		}},
		{"a tenant's note replaces the gate", "tool.mutating", func(s string) string {
			return strings.Replace(s, "do: {abort: {reason: 'acme does not allow ${tool.name}'}}", "do: {note: acme trusts its clerks}", 1)
		}, []string{
			"error gate.missing agent careful_clerk for tenant acme can call tool create_entity",
			"error gate.missing agent clerk for tenant acme can call tool create_entity",
		}},
		{"a gate that depends on the call", "tool.mutating", func(s string) string {
			return strings.Replace(strings.Replace(s, "when: tool.mutating\n    do:\n      require_hitl", "when: tool.mutating && tool.args.name != \"test\"\n    do:\n      require_hitl", 1),
				"when: tool.mutating\n    do: {abort", "when: tool.mutating && tool.args.name != \"test\"\n    do: {abort", 1)
		}, []string{
			"warning gate.conditional agent careful_clerk calls tool create_entity (pipeline loop → node ask; pipeline loop → node act) gated only when a condition on the call or the state holds: platform:hitl_on_mutating_capability",
			"warning gate.conditional agent careful_clerk for tenant acme calls tool create_entity",
			"warning gate.conditional agent clerk calls tool create_entity",
			"warning gate.conditional agent clerk for tenant acme calls tool create_entity",
		}},
		{"a gate that never fires", "tool.mutating", func(s string) string {
			return strings.Replace(s, "when: tool.mutating\n    do:\n      require_hitl", "when: tool.mutating && !(tool.capability_key in [\"create_entity\"])\n    do:\n      require_hitl", 1)
		}, []string{
			"error gate.missing agent careful_clerk can call tool create_entity",
			"error gate.missing agent clerk can call tool create_entity",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := gateSrc
			if tc.edit != nil {
				src = tc.edit(src)
			}
			docs, diags := dsl.Parse("gate.yaml", []byte(src))
			c, proj := checked(t, docs, diags)
			got, err := c.RequireGate(proj, tc.expr, dsl.CompileOptions{Provider: builtins.ScriptedProviders(nil)})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("diagnostics:\n%s\nwant %d: %q", got.Error(), len(tc.want), tc.want)
			}
			for i, d := range got {
				line := fmt.Sprintf("%s %s %s", d.Severity, d.Code, d.Message)
				if !strings.HasPrefix(line, tc.want[i]) || d.Pos.File != "gate.yaml" {
					t.Errorf("diagnostic %d: %s: %s\nwant %s, at gate.yaml", i, d.Pos, line, tc.want[i])
				}
			}
		})
	}
	docs, diags := dsl.Parse("gate.yaml", []byte(gateSrc))
	c, proj := checked(t, docs, diags)
	if _, err := c.RequireGate(proj, "tool.mutatin", dsl.CompileOptions{Provider: builtins.ScriptedProviders(nil)}); err == nil || !strings.Contains(err.Error(), `did you mean "mutating"`) {
		t.Errorf("a misspelt --require-gate: %v", err)
	}
}

// TestReviewerIsThePrincipal: the reviewer a decision records is the
// principal who resumed the gate, not the one the verdict names; a
// principal of another tenant decides nothing, and the thread is as it
// was.
func TestReviewerIsThePrincipal(t *testing.T) {
	g := deskRig(t, "desk", gateKinds[0].script, false)
	e := engine(t)
	if _, err := e.Run(context.Background(), g, "t", nil); err != nil {
		t.Fatal(err)
	}
	before := history(t, e)
	_, err := e.Resume(context.Background(), g, "t", runner.ResumeOptions{Value: approvedBy,
		RunOptions: runner.RunOptions{As: access.Principal{Tenant: "other", Name: "erin"}}})
	if !errors.Is(err, access.ErrForbidden) || history(t, e) != before {
		t.Fatalf("another tenant's principal: %v, want ErrForbidden and the thread unchanged", err)
	}
	ev := &ruleEvents{}
	e.Sink = ev.sink
	res, err := e.Resume(context.Background(), g, "t", runner.ResumeOptions{Value: approvedBy, RunOptions: runner.RunOptions{As: access.Principal{Name: "erin"}}})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("approved by erin: %v %+v", err, res)
	}
	if got := decisionReviewers(ev); got != "erin" {
		t.Errorf("the decision event names reviewer %q, want erin (the verdict names dana)", got)
	}
}
