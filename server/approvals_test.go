package server_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestApprovalForms resumes rule_37's require_hitl gate on create_entity
// through command.resume with each decision of both forms reviewer UIs
// send: LangChain v1's {decisions: [...]} and Agent Inbox's {type, args}.
// An approved call runs (with the edited args when edited), a rejected
// one does not, a response stands for its result.
func TestApprovalForms(t *testing.T) {
	edited := map[string]any{"name": "Mitchell Ranch 4H", "entity_type": "well", "api_number": "42-329-12400"}
	cases := []struct {
		name   string
		resume any
		status string // of the create_entity record
		args   string // the name it ran with
	}{
		{"langchain approve", map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}, "SUCCESS", "Mitchell Ranch 3H"},
		{"langchain edit", map[string]any{"decisions": []any{map[string]any{"type": "edit",
			"edited_action": map[string]any{"name": "create_entity", "args": edited}}}}, "SUCCESS", "Mitchell Ranch 4H"},
		{"langchain reject", map[string]any{"decisions": []any{map[string]any{"type": "reject", "message": "not this lease"}}}, "DENIED", ""},
		{"langchain respond", map[string]any{"decisions": []any{map[string]any{"type": "respond", "message": "exists already"}}}, "ANSWERED", ""},
		{"inbox accept", map[string]any{"type": "accept", "args": nil}, "SUCCESS", "Mitchell Ranch 3H"},
		{"inbox edit", map[string]any{"type": "edit", "args": map[string]any{"action": "create_entity", "args": edited}}, "SUCCESS", "Mitchell Ranch 4H"},
		{"inbox ignore", map[string]any{"type": "ignore", "args": nil}, "DENIED", ""},
		{"inbox response", []any{map[string]any{"type": "response", "args": "exists already"}}, "ANSWERED", ""},
	}
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			thread := fmt.Sprintf("conv-%d", i)
			e.call("POST", "/threads", map[string]any{"thread_id": thread}, 200)
			paused := e.call("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "rule_37",
				"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the Mitchell Ranch 3H well."}}}}, 200)
			if paused["__interrupt__"] == nil {
				t.Fatalf("no approval gate: %v", paused)
			}
			out := e.call("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "rule_37",
				"command": map[string]any{"resume": c.resume}}, 200)
			if out["__error__"] != nil || out["__interrupt__"] != nil {
				t.Fatalf("resumed: %v", out)
			}
			rec := createRecord(out)
			if rec == nil || rec["status"] != c.status {
				t.Fatalf("create_entity record %v, want status %s", rec, c.status)
			}
			if c.args != "" && rec["input"].(map[string]any)["name"] != c.args {
				t.Errorf("create_entity ran with %v, want name %s", rec["input"], c.args)
			}
		})
	}
}

// createRecord is the create_entity record of a run's tool_results.
func createRecord(values map[string]any) map[string]any {
	recs, _ := values["tool_results"].([]any)
	for _, r := range recs {
		if m, ok := r.(map[string]any); ok && m["tool_name"] == "create_entity" {
			return m
		}
	}
	return nil
}

// TestGateInterruptValue: a gate's interrupt value is LangChain's HITL
// request and nothing else at its top — action_requests of {name, args,
// description}, review_configs of {action_name, allowed_decisions} — with
// what runner adds under "runner"; and command.goto __end__ ("Mark as
// Resolved") ends the paused run without the gated call.
func TestGateInterruptValue(t *testing.T) {
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}))
	e.call("POST", "/threads", map[string]any{"thread_id": "conv"}, 200)
	paused := e.call("POST", "/threads/conv/runs/wait", map[string]any{"assistant_id": "rule_37",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the Mitchell Ranch 3H well."}}}}, 200)
	intr, _ := paused["__interrupt__"].([]any)
	if len(intr) != 1 {
		t.Fatalf("no approval gate: %v", paused)
	}
	value := intr[0].(map[string]any)["value"].(map[string]any)
	if got := sortedKeys(value); got != "[action_requests review_configs runner]" {
		t.Errorf("interrupt value keys %s, want the HITL request's and runner", got)
	}
	action := value["action_requests"].([]any)[0].(map[string]any)
	if got := sortedKeys(action); got != "[args description name]" || action["name"] != "create_entity" {
		t.Errorf("action request %v", action)
	}
	if got := sortedKeys(value["review_configs"].([]any)[0].(map[string]any)); got != "[action_name allowed_decisions]" {
		t.Errorf("review config keys %s", got)
	}
	extra := value["runner"].(map[string]any)
	if extra["kind"] == nil || extra["rule"] == nil || len(extra["calls"].([]any)) != 1 || extra["node"] == nil {
		t.Errorf("runner's extras %v, want kind, node, rule, calls", extra)
	}
	out := e.call("POST", "/threads/conv/runs/wait", map[string]any{"assistant_id": "rule_37", "command": map[string]any{"goto": "__end__"}}, 200)
	if out["__interrupt__"] != nil || out["__error__"] != nil {
		t.Fatalf("after goto __end__: %v", out)
	}
	if rec := createRecord(out); rec != nil {
		t.Errorf("the gated call left a record after goto __end__: %v", rec)
	}
	if th := e.call("GET", "/threads/conv", nil, 200); th["status"] != "idle" {
		t.Errorf("thread after goto __end__ is %v", th["status"])
	}
}

func sortedKeys(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return fmt.Sprint(keys)
}

// TestApprovalRefused: a verdict the gate refuses — not a decision, a key
// it does not know, an edit of another tool or with arguments the tool
// refuses — is a 422 naming what to fix, before any run starts: the thread
// still waits on the same interrupt, no run is left, and an approval then
// runs create_entity once.
func TestApprovalRefused(t *testing.T) {
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}))
	e.call("POST", "/threads", map[string]any{"thread_id": "conv"}, 200)
	e.call("POST", "/threads/conv/runs/wait", map[string]any{"assistant_id": "rule_37",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the Mitchell Ranch 3H well."}}}}, 200)
	before := e.call("GET", "/threads/conv/state", nil, 200)
	runs := len(e.list("GET", "/threads/conv/runs", nil))
	edit := func(name string, args map[string]any) map[string]any {
		return map[string]any{"decisions": []any{map[string]any{"type": "edit", "edited_action": map[string]any{"name": name, "args": args}}}}
	}
	for _, c := range []struct {
		resume any
		want   string
	}{
		{map[string]any{"approved": "yes"}, "approved is true or false"},
		{map[string]any{"approved": false, "comment": "wrong lease"}, `did you mean "message"?`},
		{edit("delete_entity", map[string]any{"name": "Mitchell Ranch 3H"}), "the edit names tool delete_entity, but the gated call is create_entity"},
		{edit("create_entity", map[string]any{"name": "M"}), "invalid arguments"},
	} {
		p := e.call("POST", "/threads/conv/runs/wait", map[string]any{"assistant_id": "rule_37", "command": map[string]any{"resume": c.resume}}, 422)
		if detail, _ := p["detail"].(string); !strings.Contains(detail, c.want) {
			t.Errorf("resume %v: detail %q, want it to say %q", c.resume, detail, c.want)
		}
	}
	after := e.call("GET", "/threads/conv/state", nil, 200)
	if fmt.Sprint(after["tasks"], after["checkpoint"]) != fmt.Sprint(before["tasks"], before["checkpoint"]) {
		t.Errorf("refused verdicts changed the thread: %v, was %v", after, before)
	}
	if n := len(e.list("GET", "/threads/conv/runs", nil)); n != runs {
		t.Errorf("%d runs after the refusals, want %d", n, runs)
	}
	out := e.call("POST", "/threads/conv/runs/wait", map[string]any{"assistant_id": "rule_37", "command": map[string]any{"resume": map[string]any{"approved": true}}}, 200)
	if rec := createRecord(out); rec == nil || rec["status"] != "SUCCESS" {
		t.Errorf("approved after the refusals: %v", out)
	}
}
