package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/server"
)

// actProject is an assistant whose one action a platform rule gates; its
// output says what was done and how many turns the thread has had.
const actProject = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: act, description: Acts on an item once a person approves.}
input:
  item: {type: string, required: true, description: What to act on.}
state:
  item: {type: string}
  done: {type: any}
  turns: {type: integer, reducer: add, default: 0}
start: act
nodes:
  act:
    type: tool
    with: {tool: act, args: {item: state.item}, output: done}
    next: count
  count: {type: set, with: {turns: '1'}, next: END}
output:
  done: state.done
  turns: state.turns
---
apiVersion: runner/v1
kind: Tool
metadata: {name: act}
mutating: true
parameters: {type: object, properties: {item: {type: string}}, required: [item]}
expr: '"unused"'
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: gate}
scope: platform
rules:
  - key: gate:act
    on: before_tool_call
    when: tool.name == "act"
    do: {require_hitl: {checkpoint_type: action, message: 'Act on ${tool.args.item}?'}}
`

// actGraph compiles actProject, its action counted in acted.
func actGraph(t *testing.T, acted *atomic.Int64) *runner.Graph {
	t.Helper()
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, diags := dsl.Parse("act.yaml", []byte(actProject))
	proj, more := checker.Check(docs)
	if all := append(diags, more...); all.HasErrors(false) {
		t.Fatalf("definitions: %v", all)
	}
	act := runner.ToolFunc(func(_ context.Context, call *runner.ToolCall) (any, error) {
		acted.Add(1)
		return "did " + call.Args["item"].(string), nil
	})
	g, err := checker.Compile(proj, "act", dsl.CompileOptions{Tool: builtins.Tool, Mocks: map[string]runner.Tool{"act": act}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// mcpEnv serves the test graphs and act over /mcp.
func mcpEnv(t *testing.T, acted *atomic.Int64) *env {
	t.Helper()
	g := actGraph(t, acted)
	return newEnv(t, func(c *server.Config) { c.Graphs["act"], c.MCP = g, true })
}

// keyed sets the API key on every request.
type keyed struct{ key string }

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Api-Key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpClient connects to the env's /mcp with key, answering forms with
// answer when it is not nil, speaking protocol (empty: the newest).
func mcpClient(t *testing.T, e *env, key, protocol string, answer func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if answer != nil {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return answer(req) }
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp",
		HTTPClient: &http.Client{Transport: keyed{key}}}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func approve(req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}, nil
}

func callAct(t *testing.T, cs *mcp.ClientSession, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "act", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	data, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return out
}

// TestMCPAssistants: the assistants are tools with their input schema; a
// call runs one to its output on a thread a later call continues.
func TestMCPAssistants(t *testing.T) {
	var acted atomic.Int64
	e := mcpEnv(t, &acted)
	cs := mcpClient(t, e, testKey, "", approve)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var act *mcp.Tool
	for _, tool := range tools.Tools {
		if tool.Name == "act" {
			act = tool
		}
	}
	schema, _ := json.Marshal(act.InputSchema)
	if act == nil || act.Description != "Acts on an item once a person approves." ||
		!strings.Contains(string(schema), `"item":{"description":"What to act on.","type":"string"}`) ||
		!strings.Contains(string(schema), `"required":["item"]`) || !strings.Contains(string(schema), `"thread_id":{`) {
		t.Fatalf("act's tool: %+v %s", act, schema)
	}
	res := callAct(t, cs, map[string]any{"item": "a"})
	out := structured(t, res)
	thread, _ := res.Meta["dev.runner/thread_id"].(string)
	if res.IsError || out["done"] != "did a" || out["turns"] != 1.0 || thread == "" || acted.Load() != 1 {
		t.Fatalf("first call: %+v, acted %d", res, acted.Load())
	}
	res = callAct(t, cs, map[string]any{"item": "b", "thread_id": thread})
	if out := structured(t, res); out["done"] != "did b" || out["turns"] != 2.0 || res.Meta["dev.runner/thread_id"] != thread {
		t.Errorf("the call continuing the thread: %+v", res)
	}
	res = callAct(t, cs, map[string]any{"itm": "c"})
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "item") {
		t.Errorf("a call without the required input: %+v", res)
	}
}

// TestMCPApprovalElicited: a run paused at an approval gate asks the
// client — one speaking multi round-trip requests, and an older one the
// server elicits from — and the answer resumes the same thread; the
// approved call runs once, a declined one not at all.
func TestMCPApprovalElicited(t *testing.T) {
	for _, protocol := range []string{"", "2025-11-25"} {
		t.Run("protocol "+protocol, func(t *testing.T) {
			var acted atomic.Int64
			e := mcpEnv(t, &acted)
			var asked []string
			cs := mcpClient(t, e, testKey, protocol, func(req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked = append(asked, req.Params.Message)
				if len(asked) == 2 {
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
				return approve(req)
			})
			res := callAct(t, cs, map[string]any{"item": "a"})
			if out := structured(t, res); out["done"] != "did a" || acted.Load() != 1 || len(asked) != 1 || asked[0] != "Act on a?" {
				t.Fatalf("approved: %+v %v, acted %d, asked %q", res, res.Content[0], acted.Load(), asked)
			}
			thread := res.Meta["dev.runner/thread_id"].(string)
			res = callAct(t, cs, map[string]any{"item": "b", "thread_id": thread})
			if out := structured(t, res); res.IsError || out["turns"] != 2.0 || acted.Load() != 1 || len(asked) != 2 {
				t.Errorf("declined: %+v, acted %d", res, acted.Load())
			}
		})
	}
}

// TestMCPApprovalAnsweredOnce: the answer to an input request resumes the
// thread once: the same answer sent again runs nothing more and says
// where the thread stands; a client that cannot fill forms gets the
// approval's id and how to answer it over the API.
func TestMCPApprovalAnsweredOnce(t *testing.T) {
	var acted atomic.Int64
	e := mcpEnv(t, &acted)
	plain := mcpClient(t, e, testKey, "", nil)
	res := callAct(t, plain, map[string]any{"item": "a"})
	out := structured(t, res)
	thread, _ := out["thread_id"].(string)
	if out["status"] != "paused" || thread == "" || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "/threads/"+thread+"/runs/wait") {
		t.Fatalf("a client without forms: %+v", res)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "manual"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { panic("asked directly") }})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: keyed{testKey}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	asked := callAct(t, cs, map[string]any{"thread_id": thread}) // the paused thread asks again
	if !asked.NeedsInput() || asked.RequestState == "" || len(asked.InputRequests) != 1 || acted.Load() != 0 {
		t.Fatalf("asking again: %+v", asked)
	}
	answers := mcp.InputResponseMap{}
	for id := range asked.InputRequests {
		answers[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}
	}
	for i := range 2 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "act", Arguments: map[string]any{},
			InputResponses: answers, RequestState: asked.RequestState})
		if out := structured(t, res); err != nil || out["done"] != "did a" || acted.Load() != 1 {
			t.Fatalf("answer %d: %v %+v, acted %d", i+1, err, res, acted.Load())
		}
	}
	other := mcpClient(t, e, otherKey, "", nil)
	res, err = other.CallTool(context.Background(), &mcp.CallToolParams{Name: "act", Arguments: map[string]any{},
		InputResponses: answers, RequestState: asked.RequestState})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not yours") {
		t.Errorf("another tenant's answer: %v %+v", err, res)
	}
	tampered := asked.RequestState[:len(asked.RequestState)-2] + "AA"
	res, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "act", Arguments: map[string]any{},
		InputResponses: answers, RequestState: tampered})
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not one this server signed") {
		t.Errorf("a tampered request state: %+v", res)
	}
}

// TestMCPSessionsPerTenant: a session opened with one tenant's key is not
// found with another's; without a key /mcp is 401; off, it is 404.
func TestMCPSessionsPerTenant(t *testing.T) {
	var acted atomic.Int64
	e := mcpEnv(t, &acted)
	cs := mcpClient(t, e, testKey, "2025-11-25", nil)
	for key, want := range map[string]int{otherKey: http.StatusNotFound, "": http.StatusUnauthorized, testKey: http.StatusOK} {
		req, _ := http.NewRequest("POST", e.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("key %q: %d, want %d", key, resp.StatusCode, want)
		}
	}
	off := newEnv(t)
	if resp := off.request("POST", "/mcp", map[string]any{}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/mcp when off: %d, want 404", resp.StatusCode)
	}
}
