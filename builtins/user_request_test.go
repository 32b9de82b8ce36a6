package builtins_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// What reference workload 001 (pipelines/user_request) needs beyond its
// YAML tests: the text its LLM calls really receive, and its rules on
// choregraph_run, which its own routes never let fire.

// recorder is a scripted provider that keeps every request it answers.
type recorder struct {
	runner.Provider
	mu   sync.Mutex
	reqs []*runner.ChatRequest
}

func (r *recorder) Chat(ctx context.Context, req *runner.ChatRequest) (*runner.ChatResponse, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Provider.Chat(ctx, req)
}

// request returns the n-th request (from 0).
func (r *recorder) request(t *testing.T, n int) *runner.ChatRequest {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if n >= len(r.reqs) {
		t.Fatalf("only %d LLM calls were made, want call %d", len(r.reqs), n+1)
	}
	return r.reqs[n]
}

// userRequestRig is the shipped user_request agent, compiled with the
// given replies and mocks.
type userRequestRig struct {
	graph    *runner.Graph
	provider *recorder
	engine   *runner.Engine
}

// mocks builds the mocked tools from the checked project, which holds
// their parameters.
func newUserRequestRig(t *testing.T, script []dsl.Reply, mocks func(*dsl.Project) map[string]runner.Tool) *userRequestRig {
	t.Helper()
	docs, diags := dsl.Load("../pipelines", "../agents", "../rules")
	c, proj := checked(t, docs, diags)
	rec := &recorder{Provider: builtins.Scripted(script)}
	var ms map[string]runner.Tool
	if mocks != nil {
		ms = mocks(proj)
	}
	g, err := c.Compile(proj, "user_request", dsl.CompileOptions{Tool: builtins.Tool, Agent: proj.Agents["user_request"], Mocks: ms,
		Provider: func(*dsl.ModelDef) (runner.Provider, error) { return rec, nil }})
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	t.Cleanup(func() { st.Close() })
	return &userRequestRig{graph: g, provider: rec, engine: &runner.Engine{Store: st}}
}

// mockTool wraps fn as the tool name, held to its parameters.
func mockTool(t *testing.T, proj *dsl.Project, name string, fn runner.ToolFunc) runner.Tool {
	t.Helper()
	tool, err := builtins.Checked(proj.Tools[name], fn)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func completedRun(_ context.Context, _ *runner.ToolCall) (any, error) {
	return map[string]any{"run_id": "run-1", "status": "completed", "error": ""}, nil
}

var (
	webInput = map[string]any{"input": map[string]any{"message": "Wave at me", "request_id": "r1", "session_id": "s1", "language": "en", "is_api": false}}
	accepted = dsl.Reply{Node: "transformation", Output: map[string]any{"early_exit": false, "clarification_question": "",
		"options": []any{}, "rewritten_request": "Stand up and wave."}}
	goodPlan = dsl.Reply{Node: "planning", Output: map[string]any{"list_steps": []any{
		map[string]any{"action": "stand_up", "argument": ""}, map[string]any{"action": "wave", "argument": ""}}, "suggestions": []any{}}}
	goodXML = dsl.Reply{Node: "viz_generation",
		Text: `<ChoregrapheProject xar_version="3"><Box name="root" id="-1"><Diagram><Box name="stand_up" id="1"/><Box name="wave" id="2"/></Diagram></Box></ChoregrapheProject>`}
)

// TestUserRequestFeedbackReachesTheModel follows one request through a
// clarification, an unsatisfiable plan and an invalid XML, and checks what
// each retried LLM call was sent: the user's reply in the transformation's
// messages, the solver's conflict in the planner's prompt, the parser's
// error and line in the generator's.
func TestUserRequestFeedbackReachesTheModel(t *testing.T) {
	ask := dsl.Reply{Node: "transformation", Output: map[string]any{"early_exit": true, "clarification_question": "Which hand?",
		"options": []any{"Left", "Right"}, "rewritten_request": ""}}
	badPlan := dsl.Reply{Node: "planning", Output: map[string]any{"list_steps": []any{map[string]any{"action": "wave", "argument": ""}}, "suggestions": []any{}}}
	badXML := dsl.Reply{Node: "viz_generation", Text: "<ChoregrapheProject xar_version=\"3\">\n<Box name=\"root\">\n</Diagram>"}
	rig := newUserRequestRig(t, []dsl.Reply{ask, accepted, badPlan, goodPlan, badXML, goodXML}, func(proj *dsl.Project) map[string]runner.Tool {
		return map[string]runner.Tool{"choregraph_run": mockTool(t, proj, "choregraph_run", completedRun)}
	})
	ctx := context.Background()
	res, err := rig.engine.Run(ctx, rig.graph, "t", webInput)
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt == nil || res.Interrupt.Message != "Which hand?" {
		t.Fatalf("run: %v %+v; want a pause asking which hand", err, res)
	}
	if res, err = rig.engine.Resume(ctx, rig.graph, "t", runner.ResumeOptions{Value: "The right one"}); err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}

	second := rig.provider.request(t, 1)
	if second.Node != "transformation" {
		t.Fatalf("call 2 is %s, want transformation", second.Node)
	}
	var convo []string
	for _, m := range second.Messages {
		if m.Role != "system" {
			convo = append(convo, m.Role+": "+m.Content)
		}
	}
	if want := []string{"user: Wave at me", "assistant: Which hand?", "user: The right one"}; !slices.Equal(convo, want) {
		t.Errorf("the second transformation call's conversation:\n got %q\nwant %q", convo, want)
	}
	if sys := systemText(rig.provider.request(t, 1)); !strings.Contains(sys, "You have asked 1 clarification question(s) in a row already") {
		t.Errorf("the second transformation call does not say a question was asked:\n%s", sys)
	}
	replan := rig.provider.request(t, 3)
	if sys := systemText(replan); replan.Node != "planning" ||
		!strings.Contains(sys, "Your previous plan failed: the ASP solver found no valid execution: step 1 (wave) needs the robot standing or sitting, but it is crouching") {
		t.Errorf("the second planning call (%s) is not told why the first plan failed:\n%s", replan.Node, sys)
	}
	if sys := systemText(rig.provider.request(t, 2)); strings.Contains(sys, "previous plan failed") {
		t.Errorf("the first planning call already carries feedback:\n%s", sys)
	}
	regen := rig.provider.request(t, 5)
	if sys := systemText(regen); regen.Node != "viz_generation" ||
		!strings.Contains(sys, "Your previous XML was rejected: line 3: element <Box> closed by </Diagram>") {
		t.Errorf("the second viz call (%s) is not told what the parser found:\n%s", regen.Node, sys)
	}
}

// systemText joins a request's system messages.
func systemText(req *runner.ChatRequest) string {
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role == "system" {
			b.WriteString(m.Content)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestUserRequestRules checks the two rules that govern choregraph_run
// (rules/user_request.yaml). The graph only reaches the call with
// validated XML for a web request, so the test starts the run at the call
// with the state each rule is about; the call must not run.
func TestUserRequestRules(t *testing.T) {
	var mu sync.Mutex
	runs := 0
	rig := newUserRequestRig(t, nil, func(proj *dsl.Project) map[string]runner.Tool {
		return map[string]runner.Tool{"choregraph_run": mockTool(t, proj, "choregraph_run", func(ctx context.Context, call *runner.ToolCall) (any, error) {
			mu.Lock()
			runs++
			mu.Unlock()
			return completedRun(ctx, call)
		})}
	})
	g := *rig.graph
	g.Start = "choregraph_http_run"
	g.CheckInput = nil // the test seeds the processing fields a request may not set
	cases := []struct {
		name   string
		isAPI  bool
		valid  bool
		status string
		err    string
		runs   int
	}{
		{"unvalidated XML", false, false, runner.StatusFailed, "rule user_request:choregraph_runs_validated_xml: refusing to run behaviour XML that has not passed validation", 0},
		{"an SDK request", true, true, runner.StatusFailed, "rule user_request:sdk_runs_choregraph_locally: an SDK request runs Choregraph locally", 0},
		{"validated XML of a web request", false, true, runner.StatusCompleted, "", 1},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			runs = 0
			mu.Unlock()
			input := map[string]any{
				"input":      map[string]any{"message": "Wave", "request_id": "r1", "is_api": c.isAPI},
				"xml_output": "<ChoregrapheProject xar_version=\"3\"/>",
				"xml_valid":  c.valid,
				"planning":   map[string]any{"list_steps": []any{map[string]any{"action": "nod", "argument": ""}}, "suggestions": []any{}},
			}
			res, err := rig.engine.Run(context.Background(), &g, "rules-"+string(rune('a'+i)), input)
			if err != nil {
				t.Fatal(err)
			}
			msg := ""
			if res.Error != nil {
				msg = res.Error.Message
			}
			mu.Lock()
			defer mu.Unlock()
			if res.Status != c.status || !strings.Contains(msg, c.err) || runs != c.runs {
				t.Errorf("status %s, error %q, %d runs; want %s, %q, %d", res.Status, msg, runs, c.status, c.err, c.runs)
			}
		})
	}
}

// TestUserRequestScript runs the demo of docs/workloads.md: the shipped script, an SDK
// request that pauses for the local Choregraph run, a refused resume and
// the one that finishes it.
func TestUserRequestScript(t *testing.T) {
	script, err := dsl.LoadScript("../pipelines/user_request/script.json")
	if err != nil {
		t.Fatal(err)
	}
	rig := newUserRequestRig(t, script, nil)
	ctx := context.Background()
	input := map[string]any{"input": map[string]any{"message": "Make the robot greet visitors", "request_id": "r1", "is_api": true}}
	res, err := rig.engine.Run(ctx, rig.graph, "t", input)
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt == nil || res.Interrupt.Kind != "sdk_choregraph" {
		t.Fatalf("run: %v %+v; want a pause for the SDK", err, res)
	}
	if xml, _ := res.Interrupt.Payload["xml"].(string); !strings.HasPrefix(xml, "<?xml") {
		t.Errorf("the pause does not carry the XML: %v", res.Interrupt.Payload)
	}
	if _, err := rig.engine.Resume(ctx, rig.graph, "t", runner.ResumeOptions{Value: map[string]any{"reason": "done"}}); err == nil ||
		!strings.Contains(err.Error(), "value must be 'sdk_processing_complete'") {
		t.Errorf("a wrong reason: err = %v, want it refused", err)
	}
	res, err = rig.engine.Resume(ctx, rig.graph, "t", runner.ResumeOptions{Value: map[string]any{"reason": "sdk_processing_complete"}})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}
	out, _ := res.Output.(map[string]any)
	if out["text"] != "Your behaviour is ready (3 steps: stand_up, wave, say) and the SDK has run it on Choregraph." || len(out["suggestions"].([]any)) != 3 {
		t.Errorf("output = %v", out)
	}
}
