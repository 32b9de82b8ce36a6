package server_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/server"
)

// a2aTool builds the a2a tool of url, sending the API key in $A2A_KEY.
func a2aTool(t *testing.T, url string) runner.Tool {
	t.Helper()
	def := &dsl.ToolDef{Name: "ask", A2A: &dsl.A2ADef{URL: url, APIKeyEnv: "A2A_KEY"}}
	tool, err := builtins.KindOf(def).Build(def, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// TestA2AToolCallsRunner: the a2a tool (the a2a-go client) calls rule_37
// served over runner's own /a2a: the gated run is an input-required
// task; a second call answers it with data, and the task completes with
// the agent's answer.
func TestA2AToolCallsRunner(t *testing.T) {
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}))
	t.Setenv("A2A_KEY", testKey)
	tool := a2aTool(t, e.url+"/a2a/"+server.AssistantID("rule_37"))
	out, err := tool.Call(context.Background(), &runner.ToolCall{Name: "ask", Args: map[string]any{"message": "Add the Mitchell Ranch 3H well."}})
	if err != nil {
		t.Fatal(err)
	}
	paused := out.(map[string]any)
	if paused["state"] != "input-required" || paused["task_id"] == "" || paused["context_id"] == "" {
		t.Fatalf("first call = %v, want an input-required task", paused)
	}
	out, err = tool.Call(context.Background(), &runner.ToolCall{Name: "ask", Args: map[string]any{"task_id": paused["task_id"],
		"context_id": paused["context_id"], "data": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	done := out.(map[string]any)
	if done["state"] != "completed" || done["task_id"] != paused["task_id"] || done["text"] != "Created the well entity Mitchell Ranch 3H." {
		t.Errorf("answering call = %v, want the task completed with the agent's answer", done)
	}
	t.Setenv("A2A_KEY", "sk-wrong")
	if _, err := tool.Call(context.Background(), &runner.ToolCall{Name: "ask", Args: map[string]any{"message": "hi"}}); err == nil {
		t.Error("a call with a wrong key succeeded")
	}
}

// TestA2AToolCallsJSServer: the a2a tool calls an agent served with the
// official A2A JS SDK's server (sdktest/a2a_server.mjs): an echo; a
// booking that asks which day (input-required) and a second call that
// answers it on the same task; a wrong key refused.
func TestA2AToolCallsJSServer(t *testing.T) {
	if _, err := os.Stat("sdktest/node_modules/@a2a-js/sdk"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the SDK suite is not installed: run npm ci in server/sdktest")
		}
		t.Skip("the SDK suite is not installed: run npm ci in server/sdktest to run it")
	}
	node := exec.Command("node", "a2a_server.mjs")
	node.Dir, node.Env, node.Stderr = "sdktest", append(os.Environ(), "A2A_KEY=sk-js"), os.Stderr
	stdout, _ := node.StdoutPipe()
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Process.Kill(); node.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	port, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("the JS server said %q, %v", line, err)
	}
	t.Setenv("A2A_KEY", "sk-js")
	tool := a2aTool(t, "http://127.0.0.1:"+port+"/")
	call := func(args map[string]any) map[string]any {
		t.Helper()
		out, err := tool.Call(context.Background(), &runner.ToolCall{Name: "ask", Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return out.(map[string]any)
	}
	if got := call(map[string]any{"message": "hello"}); got["state"] != "completed" || got["text"] != "echo: hello" {
		t.Errorf("echo = %v", got)
	}
	asked := call(map[string]any{"message": "book a table for two"})
	if asked["state"] != "input-required" || asked["text"] != "For which day?" {
		t.Fatalf("booking = %v, want input-required asking the day", asked)
	}
	booked := call(map[string]any{"message": "Friday", "task_id": asked["task_id"], "context_id": asked["context_id"]})
	if booked["state"] != "completed" || booked["text"] != "Booked for Friday." || booked["task_id"] != asked["task_id"] {
		t.Errorf("answer = %v, want the same task completed", booked)
	}
	t.Setenv("A2A_KEY", "sk-wrong")
	if _, err := tool.Call(context.Background(), &runner.ToolCall{Name: "ask", Args: map[string]any{"message": "hello"}}); err == nil {
		t.Error("a call with a wrong key succeeded")
	}
}

// callerSrc calls a remote agent through an a2a tool (its URL replaced),
// gated by a platform rule.
const callerSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: caller}
state:
  ask: {type: string}
  answer: {type: any}
start: call
nodes:
  call:
    type: tool
    with: {tool: ask_rrc, args: {message: state.ask}, output: answer, fatal: true}
    next: END
---
apiVersion: runner/v1
kind: Tool
metadata: {name: ask_rrc, description: "Ask the RRC agent."}
parameters: {type: object, properties: {message: {type: string}, task_id: {type: string}, context_id: {type: string}}, required: [message]}
a2a: {url: "URL", api_key_env: A2A_KEY}
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: guard}
scope: platform
rules:
  - key: guard:remote_agents
    on: before_tool_call
    when: tool.name == "ask_rrc"
    do: {require_hitl: {checkpoint_type: delegation, message: 'Ask the RRC agent "${tool.args.message}"?'}}
`

// TestA2AToolThroughTheCallPath: an a2a tool is called like any tool: a
// rule on it pauses the run before the remote agent is asked; approved,
// the call is made once and its answer (the remote task, input-required
// at its own gate) is the node's output.
func TestA2AToolThroughTheCallPath(t *testing.T) {
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}))
	t.Setenv("A2A_KEY", testKey)
	g := compileSource(t, "caller.yaml", strings.Replace(callerSrc, "URL", e.url+"/a2a/"+server.AssistantID("rule_37"), 1), "caller")
	ctx := context.Background()
	eng := &runner.Engine{Store: store.NewMemory()}
	res, err := eng.Run(ctx, g, "t1", map[string]any{"ask": "Add the Mitchell Ranch 3H well."})
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.Rule != "guard:remote_agents" {
		t.Fatalf("run = %+v, %v; want paused by guard:remote_agents", res, err)
	}
	if th := e.list("POST", "/threads/search", map[string]any{}); len(th) != 0 {
		t.Fatalf("the remote agent was asked before the approval: %v", th)
	}
	res, err = eng.Resume(ctx, g, "t1", runner.ResumeOptions{Value: map[string]any{"approved": true}})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("resume = %+v, %v", res, err)
	}
	answer, _ := res.State["answer"].(map[string]any)
	if answer["state"] != "input-required" || answer["task_id"] == "" {
		t.Errorf("the node's output = %v, want the remote input-required task", res.State["answer"])
	}
	if th := e.list("POST", "/threads/search", map[string]any{}); len(th) != 1 {
		t.Errorf("remote threads after the approved call: %d, want 1 (asked once)", len(th))
	}
}
