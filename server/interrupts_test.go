package server_test

import (
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/server"
)

// withTwoAsks serves testdata two_asks: two parallel branches that each
// ask a human.
func withTwoAsks(t *testing.T) func(*server.Config) {
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, diags := dsl.Load("../builtins/testdata/two_asks.yaml")
	proj, more := checker.Check(docs)
	if all := append(diags, more...); all.HasErrors(false) {
		t.Fatalf("definitions: %v", all)
	}
	g, err := checker.Compile(proj, "two_asks", dsl.CompileOptions{Tool: builtins.Tool})
	if err != nil {
		t.Fatal(err)
	}
	return func(c *server.Config) { c.Graphs["two_asks"] = g }
}

// A thread whose parallel branches both pause lists both interrupts,
// each with its ID; command.resume keyed by one ID answers that one, the
// other still waits with the ID it had.
func TestSeveralInterruptsByID(t *testing.T) {
	e := newEnv(t, withTwoAsks(t))
	e.call("POST", "/threads", map[string]any{"thread_id": "t2"}, 200)
	out := e.call("POST", "/threads/t2/runs/wait", map[string]any{"assistant_id": "two_asks"}, 200)
	pending, _ := out["__interrupt__"].([]any)
	if len(pending) != 2 {
		t.Fatalf("paused run's values: %v", out)
	}
	first, second := pending[0].(map[string]any), pending[1].(map[string]any)
	thread := e.call("GET", "/threads/t2", nil, 200)
	if thread["status"] != "interrupted" {
		t.Fatalf("thread %v", thread)
	}
	out = e.call("POST", "/threads/t2/runs/wait", map[string]any{"assistant_id": "two_asks",
		"command": map[string]any{"resume": map[string]any{first["id"].(string): "red"}}}, 200)
	left, _ := out["__interrupt__"].([]any)
	if len(left) != 1 || left[0].(map[string]any)["id"] != second["id"] {
		t.Fatalf("after one answer: %v", out)
	}
	out = e.call("POST", "/threads/t2/runs/wait", map[string]any{"assistant_id": "two_asks",
		"command": map[string]any{"resume": map[string]any{second["id"].(string): "large"}}}, 200)
	if out["a"] != "red" || out["b"] != "large" || out["__interrupt__"] != nil {
		t.Fatalf("after both answers: %v", out)
	}
}
