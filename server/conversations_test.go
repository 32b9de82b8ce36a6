package server_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestExecuteAndConversationStream runs rule_37 with seed 000's POST
// /execute to its approval gate, then follows the resuming execution on
// GET /conversations/{id}/stream: node_end per step, then done.
func TestExecuteAndConversationStream(t *testing.T) {
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}))
	first := e.call("POST", "/execute", map[string]any{"agent_type": "rule_37", "conversation_id": "conv-9",
		"message": "Add the Mitchell Ranch 3H well."}, 200)
	if first["status"] != "awaiting_hitl" || first["conversation_id"] != "conv-9" || first["execution_id"] == "" || first["interrupt"] == nil {
		t.Fatalf("first execution %v", first)
	}
	if first["tokens_used"] != 1234.0 {
		t.Errorf("tokens_used %v, want 1234", first["tokens_used"])
	}
	st := first["state"].(map[string]any)
	if st["conversation_id"] != "conv-9" || st["tenant_id"] != "acme" {
		t.Errorf("state identity %v %v", st["conversation_id"], st["tenant_id"])
	}

	resp := e.request("GET", "/conversations/conv-9/stream", nil)
	done := make(chan []sse)
	go func() {
		evs, _ := readSSE(t, resp)
		done <- evs
	}()
	second := e.call("POST", "/execute", map[string]any{"agent_type": "rule_37", "conversation_id": "conv-9",
		"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}, 200)
	out := second["output"].(map[string]any)
	if second["status"] != "completed" || out["answer"] != "Created the well entity Mitchell Ranch 3H." {
		t.Fatalf("second execution %v", second)
	}
	evs := <-done
	last := evs[len(evs)-1]
	if last.Event != "done" {
		t.Fatalf("stream %v: want done last", evs)
	}
	d := last.Data.(map[string]any)["data"].(map[string]any)
	if d["execution_id"] != second["execution_id"] || d["status"] != "completed" || d["tokens_used"] != 1312.0 {
		t.Errorf("done %v", d)
	}
	var nodes []string
	for _, ev := range evs[:len(evs)-1] {
		body := ev.Data.(map[string]any)
		if ev.Event != "node_end" || body["event"] != "node_end" || body["data"].(map[string]any)["status"] == nil {
			t.Fatalf("event %v", ev)
		}
		nodes = append(nodes, body["node"].(string))
	}
	if nodes[0] != "tool_node" || nodes[len(nodes)-1] != "memory_record" {
		t.Errorf("nodes %v: want tool_node (resumed) first, memory_record last", nodes)
	}
	for _, ev := range evs {
		if b := ev.Data.(map[string]any); b["node"] == "initial_llm_call" {
			if m := b["data"].(map[string]any)["message"].(map[string]any); m["role"] != "assistant" {
				t.Errorf("initial_llm_call's message %v", m)
			}
		}
	}

	e.key = otherKey // the id is acme's: for another tenant it is a new conversation
	e.call("GET", "/conversations/conv-9/stream", nil, 404)
	theirs := e.call("POST", "/execute", map[string]any{"agent_type": "rule_37", "conversation_id": "conv-9", "message": "hi"}, 200)
	if st := theirs["state"].(map[string]any); st["tenant_id"] != "other" || strings.Contains(fmt.Sprint(theirs), "Add the Mitchell Ranch 3H well.") {
		t.Errorf("the other tenant's conversation conv-9 = %v, want a new one of its own", st)
	}
	e.key = ""
	e.call("POST", "/execute", map[string]any{"agent_type": "rule_37", "message": "hi"}, 401)
	e.key = testKey
	e.call("POST", "/execute", map[string]any{"agent_type": "nope", "message": "hi"}, 404)
	e.call("POST", "/execute", map[string]any{"agent_type": "rule_37"}, 422)
}
