package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// values is a thread's values.
func (e *env) values(thread string) map[string]any {
	e.t.Helper()
	return e.call("GET", "/threads/"+thread+"/state", nil, 200)["values"].(map[string]any)
}

// TestInterruptBeforeAfter pauses a run before (after) the nodes it
// names, "*" naming all; a run without input goes on; an unknown node is
// a 422 naming it.
func TestInterruptBeforeAfter(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	out := e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "steps", "interrupt_before": []string{"b"}}, 200)
	if fmt.Sprint(out["path"]) != "[a]" || out["__interrupt__"] == nil {
		t.Errorf("values paused before b: %v", out)
	}
	st := e.call("GET", "/threads/"+id+"/state", nil, 200)
	if fmt.Sprint(st["next"]) != "[b]" || len(st["interrupts"].([]any)) != 1 {
		t.Errorf("state paused before b: next %v interrupts %v", st["next"], st["interrupts"])
	}
	if got := e.call("GET", "/threads/"+id, nil, 200)["status"]; got != "interrupted" {
		t.Errorf("thread paused before b is %v", got)
	}
	out = e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "steps", "interrupt_after": "*"}, 200)
	if fmt.Sprint(out["path"]) != "[a b]" {
		t.Errorf("resumed with interrupt_after *: %v", out)
	}
	if st := e.call("GET", "/threads/"+id+"/state", nil, 200); fmt.Sprint(st["next"]) != "[c]" {
		t.Errorf("paused after b: next %v", st["next"])
	}
	out = e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "steps"}, 200)
	if fmt.Sprint(out["path"]) != "[a b c]" || out["__interrupt__"] != nil {
		t.Errorf("continued to the end: %v", out)
	}
	for _, body := range []map[string]any{{"interrupt_before": []string{"b", "nope"}}, {"interrupt_after": "nope"}, {"command": map[string]any{"goto": "nope"}}} {
		body["assistant_id"] = "steps"
		p := e.call("POST", "/threads/"+id+"/runs", body, 422)
		if !strings.Contains(p["detail"].(string), `"nope"`) {
			t.Errorf("%v: problem %v does not name the node", body, p)
		}
	}
}

// TestCommandUpdateGoto writes command.update through the reducers and
// continues the thread at command.goto's node.
func TestCommandUpdateGoto(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "steps"}, 200)
	out := e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "steps",
		"command": map[string]any{"update": map[string]any{"note": "edited", "path": "x"}, "goto": []string{"c"}}}, 200)
	if fmt.Sprint(out["path"]) != "[a b c x c]" || out["note"] != "edited" {
		t.Errorf("after update and goto c: %v", out)
	}
	out = e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "steps", "interrupt_before": []string{"b"},
		"command": map[string]any{"update": map[string]any{"note": "again"}}}, 200)
	if fmt.Sprint(out["path"]) != "[a b c x c a]" || out["note"] != "again" {
		t.Errorf("a new turn after an update: %v", out)
	}
	out = e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "steps", "command": map[string]any{"update": map[string]any{"note": "paused"}}}, 200)
	if fmt.Sprint(out["path"]) != "[a b c x c a b c]" || out["note"] != "paused" {
		t.Errorf("an update to a thread paused before b, continued: %v", out)
	}
	fresh := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	e.call("POST", "/threads/"+fresh+"/runs", map[string]any{"assistant_id": "steps", "command": map[string]any{"goto": "b"}}, 409)
	out = e.call("POST", "/threads/"+fresh+"/runs/wait", map[string]any{"assistant_id": "steps", "command": map[string]any{"update": map[string]any{"note": "first"}}}, 200)
	if out["note"] != "first" || fmt.Sprint(out["path"]) != "[a b c]" {
		t.Errorf("update as a new thread's input: %v", out)
	}
	for _, cmd := range []map[string]any{{"goto": []string{"a", "b"}}, {"goto": map[string]any{"node": "a"}}, {"goto": "a", "resume": 1}, {"update": []int{1}}} {
		e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "steps", "command": cmd}, 422)
	}
}

// TestRollback: multitask_strategy rollback and cancel action=rollback
// stop the run, undo its checkpoints and delete it; the thread is as it
// was before the run.
func TestRollback(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "hold"}, 200)
	before := e.values(id)
	if before["n"] != 1.0 {
		t.Fatalf("first run left %v", before)
	}
	blocked := func() string {
		run := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "hold", "input": map[string]any{"block": true}}, 200)["run_id"].(string)
		e.waitStatus(id, run, "running")
		for e.values(id)["n"] != 2.0 { // it has checkpointed its first step
			time.Sleep(5 * time.Millisecond)
		}
		return run
	}
	run := blocked()
	e.call("POST", "/threads/"+id+"/runs/"+run+"/cancel?action=rollback&wait=true", nil, 204)
	e.call("GET", "/threads/"+id+"/runs/"+run, nil, 404)
	if got := e.values(id); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("after cancel rollback the thread has %v, want %v", got, before)
	}
	if got := e.call("GET", "/threads/"+id, nil, 200)["status"]; got != "idle" {
		t.Errorf("thread after rollback is %v", got)
	}

	run = blocked()
	next := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "hold", "multitask_strategy": "rollback"}, 200)["run_id"].(string)
	e.waitStatus(id, next, "success")
	e.call("GET", "/threads/"+id+"/runs/"+run, nil, 404)
	if got := e.values(id); got["n"] != 2.0 || got["block"] != false {
		t.Errorf("the run after the rolled-back one left %v, want n 2 (1 + its own)", got)
	}
	if runs := e.list("GET", "/threads/"+id+"/runs", nil); len(runs) != 2 {
		t.Errorf("%d runs left, want the 2 not rolled back", len(runs))
	}

	fresh := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	run = e.call("POST", "/threads/"+fresh+"/runs", map[string]any{"assistant_id": "hold", "input": map[string]any{"block": true}}, 200)["run_id"].(string)
	e.waitStatus(fresh, run, "running")
	e.call("POST", "/threads/"+fresh+"/runs/"+run+"/cancel?action=rollback&wait=1", nil, 204)
	if th := e.call("GET", "/threads/"+fresh, nil, 200); len(th["values"].(map[string]any)) != 0 {
		t.Errorf("a new thread rolled back has values %v", th["values"])
	}
}

// TestCommandGotoEnd: command.goto __end__ on a paused thread ends the
// run (success), drops the pending interrupt and runs nothing of the
// paused step (agent-chat-ui's "Mark as Resolved"); the thread is idle,
// its values kept, and a new turn starts fresh.
func TestCommandGotoEnd(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	if out := e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{"topic": "t"}}, 200); out["__interrupt__"] == nil {
		t.Fatalf("the run did not pause: %v", out)
	}
	before := effects.Load()
	run := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "approval", "command": map[string]any{"goto": "__end__"}}, 200)["run_id"].(string)
	e.waitStatus(id, run, "success")
	if got := effects.Load(); got != before {
		t.Errorf("the paused step's action ran %d times after goto __end__", got-before)
	}
	th := e.call("GET", "/threads/"+id, nil, 200)
	if th["status"] != "idle" || len(th["interrupts"].(map[string]any)) != 0 || th["values"].(map[string]any)["topic"] != "t" {
		t.Errorf("thread after goto __end__: %v", th)
	}
	if st := e.call("GET", "/threads/"+id+"/state", nil, 200); len(st["next"].([]any)) != 0 || len(st["tasks"].([]any)) != 0 {
		t.Errorf("state after goto __end__: next %v, tasks %v", st["next"], st["tasks"])
	}
	e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": map[string]any{"approved": true}}}, 409)
	if out := e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{"topic": "u"}}, 200); out["__interrupt__"] == nil {
		t.Errorf("a new turn after goto __end__: %v", out)
	}
}
