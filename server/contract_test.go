package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/runner-dev/runner/server"
)

// typedProject is a pipeline with typed state that pauses for a name.
const typedProject = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: typed}
state:
  name: {type: string, default: ""}
  count: {type: integer, default: 0}
  tags: {type: array, items: {type: string}, reducer: append, default: []}
start: ask
nodes:
  ask:
    type: interrupt
    with: {kind: question, message: 'your name?', into: name, resume_schema: {type: string, minLength: 1}}
    next: END
`

// withTyped serves typedProject as the assistant typed.
func withTyped(t *testing.T) func(*server.Config) {
	t.Helper()
	g := compileSource(t, "typed.yaml", typedProject, "typed")
	return func(c *server.Config) { c.Graphs["typed"] = g }
}

// refusal sends a request that must be refused with status and a
// problem whose errors name path (none: path is ""), and returns the
// problem.
func (e *env) refusal(method, url string, body any, status int, path string) map[string]any {
	e.t.Helper()
	resp := e.request(method, url, body)
	defer resp.Body.Close()
	var p map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&p)
	if resp.StatusCode != status {
		e.t.Errorf("%s %s %v = %d %v, want %d", method, url, body, resp.StatusCode, p, status)
		return p
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		e.t.Errorf("%s %s: Content-Type %q, want application/problem+json", method, url, ct)
	}
	if id := resp.Header.Get("X-Request-Id"); id == "" || p["request_id"] != id {
		e.t.Errorf("%s %s: request_id %v, X-Request-Id %q: want the same id", method, url, p["request_id"], id)
	}
	if typ, _ := p["type"].(string); !strings.HasPrefix(typ, "https://runner.dev/problems/") {
		e.t.Errorf("%s %s: type %q, want one of the documented problem types", method, url, typ)
	}
	if path == "" {
		return p
	}
	errs, _ := p["errors"].([]any)
	for _, x := range errs {
		if fe, _ := x.(map[string]any); fe["path"] == path {
			return p
		}
	}
	e.t.Errorf("%s %s %v: errors %v, want one at %q", method, url, body, p["errors"], path)
	return p
}

// runCount is the number of runs of thread, and of threads the tenant has.
func (e *env) runCount(thread string) (runs, threads int) {
	e.t.Helper()
	return len(e.list("GET", "/threads/"+thread+"/runs", nil)), len(e.list("POST", "/threads/search", map[string]any{}))
}

// TestStrictRequests: an unknown enum value, a value of the wrong type or
// a negative limit in a run's request is a 422 naming the field, on every
// way to start a run, and makes no run.
func TestStrictRequests(t *testing.T) {
	e := newEnv(t)
	e.call("POST", "/threads", map[string]any{"thread_id": "t1"}, 200)
	cases := []struct {
		body map[string]any
		path string
	}{
		{map[string]any{"if_not_exists": "x"}, "if_not_exists"},
		{map[string]any{"on_completion": "x"}, "on_completion"},
		{map[string]any{"stream_mode": 5}, "stream_mode"},
		{map[string]any{"stream_mode": []any{"values", "x"}}, "stream_mode[1]"},
		{map[string]any{"multitask_strategy": "x"}, "multitask_strategy"},
		{map[string]any{"on_disconnect": "x"}, "on_disconnect"},
		{map[string]any{"durability": "x"}, "durability"},
		{map[string]any{"config": map[string]any{"recursion_limit": -5}}, "config.recursion_limit"},
		{map[string]any{"config": map[string]any{"recursion_limit": "ten"}}, "config.recursion_limit"},
		{map[string]any{"config": map[string]any{"tags": "x"}}, "config.tags"},
		{map[string]any{"metadata": "x"}, "metadata"},
		{map[string]any{"assistant_id": 7}, "assistant_id"},
		{map[string]any{"after_seconds": -1}, "after_seconds"},
		{map[string]any{"interrupt_before": 3}, "interrupt_before"},
		{map[string]any{"interrupt_before": []any{"a", 3}}, "interrupt_before[1]"},
		{map[string]any{"input": []any{1}}, "input"},
		{map[string]any{"command": map[string]any{"update": 3}}, "command.update"},
		{map[string]any{"stream_subgraphs": "yes"}, "stream_subgraphs"},
	}
	for _, url := range []string{"/threads/t1/runs", "/threads/t1/runs/wait", "/threads/t1/runs/stream", "/runs/wait", "/runs/stream"} {
		for _, c := range cases {
			body := map[string]any{"assistant_id": "steps"}
			for k, v := range c.body {
				body[k] = v
			}
			e.refusal("POST", url, body, http.StatusUnprocessableEntity, c.path)
		}
	}
	if runs, threads := e.runCount("t1"); runs != 0 || threads != 1 {
		t.Errorf("after the refusals: %d runs of t1, %d threads; want none, and t1 alone", runs, threads)
	}
	e.refusal("POST", "/threads/t1/runs/wait", strings.NewReader(`{"assistant_id": "steps"} {}`), http.StatusUnprocessableEntity, "")
	e.refusal("POST", "/threads/search", map[string]any{"limit": "ten"}, http.StatusUnprocessableEntity, "limit")
	e.refusal("POST", "/threads/search", map[string]any{"offset": -1}, http.StatusUnprocessableEntity, "offset")
	e.refusal("POST", "/assistants/search", map[string]any{"limit": -1}, http.StatusUnprocessableEntity, "limit")
}

// TestTypedWrites: a value that does not fit its state field's declared
// type is refused with the field's path wherever it is written — a state
// edit, command.update, a resumed run's input — and the thread is left as
// it was, paused, with no run made.
func TestTypedWrites(t *testing.T) {
	e := newEnv(t, withTyped(t))
	e.call("POST", "/threads", map[string]any{"thread_id": "t1"}, 200)
	paused := e.call("POST", "/threads/t1/runs/wait", map[string]any{"assistant_id": "typed", "input": map[string]any{"count": 1}}, 200)
	if paused["__interrupt__"] == nil {
		t.Fatalf("the run did not pause: %v", paused)
	}
	before := e.call("GET", "/threads/t1/state", nil, 200)
	e.refusal("POST", "/threads/t1/state", map[string]any{"values": map[string]any{"name": 7}}, 422, "values.name")
	e.refusal("POST", "/threads/t1/state", map[string]any{"values": map[string]any{"tags": []any{"a", 2}}}, 422, "values.tags[1]")
	e.refusal("POST", "/threads/t1/state", map[string]any{"values": map[string]any{"nmae": "x"}}, 422, "values.nmae")
	resume := func(extra map[string]any) map[string]any {
		body := map[string]any{"assistant_id": "typed", "command": map[string]any{"resume": "Ada"}}
		for k, v := range extra {
			body[k] = v
		}
		return body
	}
	for _, url := range []string{"/threads/t1/runs", "/threads/t1/runs/wait", "/threads/t1/runs/stream"} {
		e.refusal("POST", url, resume(map[string]any{"command": map[string]any{"resume": "Ada", "update": map[string]any{"count": "two"}}}),
			422, "command.update.count")
		e.refusal("POST", url, resume(map[string]any{"input": map[string]any{"count": 1.5}}), 422, "input.count")
		e.refusal("POST", url, resume(map[string]any{"command": map[string]any{"resume": ""}}), 422, "")
		e.refusal("POST", url, resume(map[string]any{"command": map[string]any{"resume": 3}}), 422, "")
	}
	if runs, _ := e.runCount("t1"); runs != 1 {
		t.Errorf("t1 has %d runs after the refusals, want its first alone", runs)
	}
	if after := e.call("GET", "/threads/t1/state", nil, 200); after["checkpoint"].(map[string]any)["checkpoint_id"] != before["checkpoint"].(map[string]any)["checkpoint_id"] {
		t.Errorf("a refused write moved the thread: %v, was %v", after["checkpoint"], before["checkpoint"])
	}
	e.call("POST", "/threads/t1/state", map[string]any{"values": map[string]any{"tags": "b", "count": 2}}, 200)
	done := e.call("POST", "/threads/t1/runs/wait", resume(nil), 200)
	if done["name"] != "Ada" || done["count"] != float64(2) || len(done["tags"].([]any)) != 1 {
		t.Errorf("the thread after its resume: %v", done)
	}
	e.refusal("POST", "/threads/t1/runs/wait", resume(nil), http.StatusConflict, "")
}

// TestRequestID: a request id a client sends is kept; one that is
// not plausible is replaced.
func TestRequestID(t *testing.T) {
	e := newEnv(t)
	resp := e.request("GET", "/threads/nope", nil, "X-Request-Id", "client-1")
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "client-1" {
		t.Errorf("X-Request-Id %q, want the client's", got)
	}
	resp = e.request("GET", "/threads/nope", nil, "X-Request-Id", "a b c")
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got == "" || got == "a b c" {
		t.Errorf("X-Request-Id %q, want a new one", got)
	}
}
