package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/runner-dev/runner/server"
)

// rpc calls an A2A JSON-RPC method of assistant id and returns its
// result, or its error.
func (e *env) rpc(id, method string, params any) (result, rpcErr map[string]any) {
	e.t.Helper()
	out := e.call("POST", "/a2a/"+id, map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, 200)
	if out["id"] != 7.0 || out["jsonrpc"] != "2.0" {
		e.t.Fatalf("%s answered %v", method, out)
	}
	result, _ = out["result"].(map[string]any)
	rpcErr, _ = out["error"].(map[string]any)
	return result, rpcErr
}

func textMessage(text string) map[string]any {
	return map[string]any{"message": map[string]any{"kind": "message", "messageId": "m-" + text, "role": "user",
		"parts": []any{map[string]any{"kind": "text", "text": text}}}}
}

// TestA2A serves rule_37 over A2A: the agent card; message/send pauses at
// the approval gate as an input-required task on the message's thread; a
// message naming the task answers it with its data, resuming the same
// thread, and the task completes with the answer as an artifact;
// tasks/get reads it; message/stream streams the task and its final
// status; unknown methods and tasks, and another tenant's, are JSON-RPC
// errors.
func TestA2A(t *testing.T) {
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}))
	id := server.AssistantID("rule_37")
	card := e.call("GET", "/.well-known/agent-card.json?assistant_id=rule_37", nil, 200)
	if card["protocolVersion"] != "0.3.0" || !strings.HasSuffix(card["url"].(string), "/a2a/"+id) || card["preferredTransport"] != "JSONRPC" ||
		card["capabilities"].(map[string]any)["streaming"] != true {
		t.Errorf("agent card %v", card)
	}
	task, rpcErr := e.rpc(id, "message/send", textMessage("Add the Mitchell Ranch 3H well."))
	if rpcErr != nil {
		t.Fatal(rpcErr)
	}
	status := task["status"].(map[string]any)
	if task["kind"] != "task" || status["state"] != "input-required" || task["contextId"] == "" {
		t.Fatalf("paused task %v", task)
	}
	parts := status["message"].(map[string]any)["parts"].([]any)
	if len(parts) != 2 || parts[1].(map[string]any)["data"].(map[string]any)["interrupts"] == nil {
		t.Errorf("the input-required message's parts %v: want its text and the interrupts as data", parts)
	}
	taskID, thread := task["id"].(string), task["contextId"].(string)
	if th := e.call("GET", "/threads/"+thread, nil, 200); th["status"] != "interrupted" {
		t.Errorf("the task's thread is %v", th["status"])
	}
	if got, _ := e.rpc(id, "tasks/get", map[string]any{"id": taskID}); got["status"].(map[string]any)["state"] != "input-required" {
		t.Errorf("tasks/get of the paused task = %v", got)
	}
	answer := map[string]any{"message": map[string]any{"kind": "message", "messageId": "m-2", "role": "user", "taskId": taskID, "contextId": thread,
		"parts": []any{map[string]any{"kind": "data", "data": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}}}}
	done, rpcErr := e.rpc(id, "message/send", answer)
	if rpcErr != nil {
		t.Fatal(rpcErr)
	}
	if done["id"] != taskID || done["contextId"] != thread || done["status"].(map[string]any)["state"] != "completed" {
		t.Fatalf("answered task %v", done)
	}
	art := done["artifacts"].([]any)[0].(map[string]any)["parts"].([]any)[0].(map[string]any)
	if art["text"] != "Created the well entity Mitchell Ranch 3H." {
		t.Errorf("the answer's artifact %v", art)
	}
	if got, _ := e.rpc(id, "tasks/get", map[string]any{"id": taskID}); got["status"].(map[string]any)["state"] != "completed" || got["artifacts"] == nil {
		t.Errorf("tasks/get of the completed task = %v", got)
	}
	if _, rpcErr := e.rpc(id, "message/send", answer); rpcErr == nil || rpcErr["code"] != -32602.0 {
		t.Errorf("answering a completed task: %v", rpcErr)
	}

	resp := e.request("POST", "/a2a/"+id, map[string]any{"jsonrpc": "2.0", "id": "s", "method": "message/stream", "params": textMessage("Add it again.")})
	evs := readData(t, resp)
	if len(evs) != 2 || evs[0]["kind"] != "task" || evs[0]["status"].(map[string]any)["state"] != "working" ||
		evs[1]["kind"] != "status-update" || evs[1]["final"] != true || evs[1]["status"].(map[string]any)["state"] != "input-required" {
		t.Errorf("stream %v", evs)
	}

	for _, c := range []struct {
		method string
		params any
		code   float64
	}{{"tasks/cancel", map[string]any{"id": taskID}, -32601}, {"tasks/get", map[string]any{"id": "nope"}, -32001}, {"message/send", map[string]any{}, -32602}} {
		if _, rpcErr := e.rpc(id, c.method, c.params); rpcErr["code"] != c.code {
			t.Errorf("%s: error %v, want code %v", c.method, rpcErr, c.code)
		}
	}
	e.key = otherKey
	if _, rpcErr := e.rpc(id, "tasks/get", map[string]any{"id": taskID}); rpcErr["code"] != -32001.0 {
		t.Errorf("another tenant's tasks/get: %v", rpcErr)
	}
}

// readData reads an SSE stream of JSON-RPC answers to its end: each
// event's result (an error fails the test).
func readData(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ans map[string]any
		if err := json.Unmarshal([]byte(data), &ans); err != nil || ans["error"] != nil {
			t.Fatalf("stream event %s: %v", data, err)
		}
		out = append(out, ans["result"].(map[string]any))
	}
	return out
}
