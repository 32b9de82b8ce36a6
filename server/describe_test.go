package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAssistantDescribed: an assistant says what its definitions say —
// its description, its graph with node types and descriptions, each
// conditional route labelled with its condition's source, the interrupt
// node and the tools node marked; its input's JSON Schema (required
// fields gathered); its rules, budget, limits and tools with their
// parameters and the rules that gate them.
func TestAssistantDescribed(t *testing.T) {
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}))
	a := e.call("GET", "/assistants/rule_37", nil, 200)
	if a["description"] != "Prepares Rule 37 spacing exception filings." {
		t.Errorf("description %v", a["description"])
	}
	g := e.call("GET", "/assistants/rule_37/graph", nil, 200)
	nodes := map[string]map[string]any{}
	for _, n := range g["nodes"].([]any) {
		n := n.(map[string]any)
		nodes[n["id"].(string)] = n["data"].(map[string]any)
	}
	if d := nodes["approval_node"]; d["interrupt"] != "node" || d["type"] != "interrupt" || d["description"] == nil {
		t.Errorf("approval_node %v, want an interrupt node with its description", d)
	}
	if gated := fmt.Sprint(nodes["tool_node"]["gated_tools"]); !strings.Contains(gated, "create_entity") {
		t.Errorf("tool_node's gated tools %s, want create_entity", gated)
	}
	labels := map[string]bool{}
	for _, ed := range g["edges"].([]any) {
		ed := ed.(map[string]any)
		if ed["conditional"] == true {
			labels[fmt.Sprint(ed["source"], "→", ed["target"], ": ", ed["data"])] = true
		}
	}
	for _, want := range []string{"initial_llm_call→tool_node: len(state.pending_tool_calls) > 0", "initial_llm_call→skill_select_node: otherwise",
		"tool_node→output_format: state.iteration >= 20"} {
		if !labels[want] {
			t.Errorf("no conditional edge %q among %v", want, labels)
		}
	}
	in := e.call("GET", "/assistants/rule_37/schemas", nil, 200)["input_schema"].(map[string]any)
	if fmt.Sprint(in["required"]) != "[messages]" || in["properties"].(map[string]any)["messages"].(map[string]any)["type"] != "array" {
		t.Errorf("input schema %v", in)
	}
	p := e.call("GET", "/assistants/rule_37/policy", nil, 200)
	var gate map[string]any
	for _, r := range p["rules"].([]any) {
		if r := r.(map[string]any); r["key"] == "platform:hitl_on_mutating_capability" {
			gate = r
		}
	}
	if gate == nil || gate["action"] != "require_hitl" || !strings.Contains(gate["when"].(string), "create_entity") {
		t.Errorf("the platform gate rule %v", gate)
	}
	if b := p["budget"].(map[string]any); b["max_tokens"] != float64(150000) {
		t.Errorf("budget %v, want the agent's 150000 tokens", b)
	}
	for _, tl := range p["tools"].([]any) {
		tl := tl.(map[string]any)
		if tl["name"] == "create_entity" {
			if !strings.Contains(fmt.Sprint(tl["gated_by"]), "platform:hitl_on_mutating_capability") || tl["parameters"].(map[string]any)["properties"] == nil {
				t.Errorf("create_entity %v", tl)
			}
			return
		}
	}
	t.Errorf("no create_entity among the tools %v", p["tools"])
}

// TestThreadCopy: POST /threads/{id}/copy forks a thread from one of its
// checkpoints into a new thread of the tenant, which stands where the
// original stood then and continues from there; the original is not
// changed, and another tenant cannot copy it.
func TestThreadCopy(t *testing.T) {
	e := newEnv(t)
	e.call("POST", "/threads", map[string]any{"thread_id": "t"}, 200)
	e.call("POST", "/threads/t/runs/wait", map[string]any{"assistant_id": "steps"}, 200)
	c := e.call("POST", "/threads/t/copy", map[string]any{"checkpoint_id": "2", "thread_id": "t2"}, 200)
	if c["thread_id"] != "t2" || c["metadata"].(map[string]any)["graph_id"] != "steps" {
		t.Fatalf("copy %v", c)
	}
	st := e.call("GET", "/threads/t2/state", nil, 200)
	if fmt.Sprint(st["values"].(map[string]any)["path"]) != "[a]" || fmt.Sprint(st["next"]) != "[b]" {
		t.Errorf("the copy stands at %v next %v, want after a, before b", st["values"], st["next"])
	}
	out := e.call("POST", "/threads/t2/runs/wait", map[string]any{"assistant_id": "steps"}, 200)
	if fmt.Sprint(out["path"]) != "[a b c]" {
		t.Errorf("the copy continued to %v, want [a b c]", out["path"])
	}
	if orig := e.call("GET", "/threads/t/state", nil, 200); fmt.Sprint(orig["values"].(map[string]any)["path"]) != "[a b c]" {
		t.Errorf("the original changed: %v", orig["values"])
	}
	e.call("POST", "/threads/t/copy", map[string]any{"thread_id": "t2"}, 409)
	e.call("POST", "/threads/t/copy", map[string]any{"checkpoint_id": "99"}, 404)
	e.key = otherKey
	e.call("POST", "/threads/t/copy", map[string]any{}, 404)
}

// TestThreadSearchPages: the thread search filters by age and pages
// through the threads: offset and limit give consecutive pages, newest
// first, without one thread twice.
func TestThreadSearchPages(t *testing.T) {
	e := newEnv(t)
	for i := range 7 {
		e.call("POST", "/threads", map[string]any{"thread_id": fmt.Sprintf("t%d", i), "metadata": map[string]any{"n": i}}, 200)
	}
	var seen []string
	for offset := 0; offset < 10; offset += 3 {
		for _, th := range e.list("POST", "/threads/search", map[string]any{"limit": 3, "offset": offset}) {
			seen = append(seen, th.(map[string]any)["thread_id"].(string))
		}
	}
	if fmt.Sprint(seen) != "[t6 t5 t4 t3 t2 t1 t0]" {
		t.Errorf("pages gave %v, want every thread once, newest first", seen)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if got := e.list("POST", "/threads/search", map[string]any{"created_after": future}); len(got) != 0 {
		t.Errorf("created after an hour from now: %v", got)
	}
	if got := e.list("POST", "/threads/search", map[string]any{"created_before": future, "limit": 100}); len(got) != 7 {
		t.Errorf("created before an hour from now: %d threads, want 7", len(got))
	}
	e.call("POST", "/threads/search", map[string]any{"created_after": "yesterday"}, 422)
}

// TestApprovalsStream: GET /approvals/stream tells the tenant's listeners
// when a thread pauses (its run ended interrupted) and when it goes on (a
// resume was admitted) — and tells another tenant nothing.
func TestApprovalsStream(t *testing.T) {
	e := newEnv(t)
	open := func(key string) *bufio.Scanner {
		req, _ := http.NewRequest("GET", e.url+"/approvals/stream", nil)
		req.Header.Set("X-Api-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("approvals stream: %v %v", resp, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return bufio.NewScanner(resp.Body)
	}
	mine, theirs := open(testKey), open(otherKey)
	next := func(sc *bufio.Scanner) map[string]any {
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ch map[string]any
				_ = json.Unmarshal([]byte(data), &ch)
				return ch
			}
		}
		return nil
	}
	e.call("POST", "/threads", map[string]any{"thread_id": "p"}, 200)
	e.call("POST", "/threads/p/runs/wait", map[string]any{"assistant_id": "approval"}, 200)
	if ch := next(mine); ch["thread_id"] != "p" || ch["reason"] != "run_admitted" {
		t.Errorf("first change %v", ch)
	}
	if ch := next(mine); ch["reason"] != "run_ended" || ch["status"] != "interrupted" {
		t.Errorf("second change %v, want the pause", ch)
	}
	e.call("POST", "/threads/p/runs/wait", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": map[string]any{"approved": true}}}, 200)
	if ch := next(mine); ch["reason"] != "run_admitted" {
		t.Errorf("after the decision %v, want the resume admitted", ch)
	}
	got := make(chan map[string]any, 1)
	go func() { got <- next(theirs) }()
	select {
	case ch := <-got:
		t.Errorf("another tenant was told %v", ch)
	case <-time.After(300 * time.Millisecond):
	}
}
