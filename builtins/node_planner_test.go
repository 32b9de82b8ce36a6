package builtins_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// plannerSrc is a planner in LLM mode over tools a and b. With loop false
// it decides once; with loop true it marks each chosen tool completed and
// plans again until COMPLETE. Agent frugal allows one LLM call.
const plannerSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: plan}
state:
  completed_steps: {type: array, items: {type: string}, reducer: append}
  next_action: {type: string, default: ""}
  step_count: {type: integer, default: 0}
  planner_decisions: {type: array, items: {type: object}, reducer: append}
  turn_metrics: {type: array, reducer: append}
  use_llm: {type: boolean, default: true}
  loop: {type: boolean, default: false}
limits: {max_steps: 20}
start: planner
nodes:
  planner:
    type: planner
    with:
      tools: [a, b]
      fallback: [a, b]
      llm:
        when: state.use_llm
        timeout: 200ms
        system: You plan.
        prompt: 'Done: ${state.completed_steps ?? []}. Tools: ${join(map(tools, .name + " (" + .description + ")"), ", ")}'
        constraints:
          - rule: '!(decision.tool in (state.completed_steps ?? []))'
            message: never repeat a completed tool
          - rule: 'decision.confidence == nil || decision.confidence >= 0.5'
    next:
      - when: state.loop && state.next_action != "COMPLETE"
        to: mark
      - to: END
  mark:
    type: set
    with: {completed_steps: '[state.next_action]'}
    next: planner
---
apiVersion: runner/v1
kind: Agent
metadata: {name: planner_agent}
pipeline: plan
model: tiny
---
apiVersion: runner/v1
kind: Agent
metadata: {name: frugal}
pipeline: plan
model: tiny
budget: {max_llm_calls: 1, on_exceed: fail}
---
apiVersion: runner/v1
kind: Model
metadata: {name: tiny}
provider: scripted
---
apiVersion: runner/v1
kind: Tool
metadata: {name: a, description: first tool}
parameters: {type: object}
expr: '"a"'
---
apiVersion: runner/v1
kind: Tool
metadata: {name: b, description: second tool}
parameters: {type: object}
expr: '"b"'
`

// decision is a scripted planner reply.
func decision(tool string, confidence float64) dsl.Reply {
	return dsl.Reply{Node: "planner", Output: map[string]any{"tool": tool, "reason": "because " + tool, "confidence": confidence}}
}

// runPlanner compiles plannerSrc for agent with script and runs it.
func runPlanner(ctx context.Context, t *testing.T, agent string, script []dsl.Reply, input map[string]any) *runner.Result {
	t.Helper()
	return runPlannerWith(ctx, t, agent, builtins.Scripted(script), input)
}

// runPlannerWith compiles plannerSrc for agent with the provider p and
// runs it.
func runPlannerWith(ctx context.Context, t *testing.T, agent string, p runner.Provider, input map[string]any) *runner.Result {
	t.Helper()
	docs, diags := dsl.Parse("planner.yaml", []byte(plannerSrc))
	c, proj := checked(t, docs, diags)
	providers := func(*dsl.ModelDef) (runner.Provider, error) { return p, nil }
	g, err := c.Compile(proj, "plan", dsl.CompileOptions{Tool: builtins.Tool, Agent: proj.Agents[agent], Provider: providers})
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine(t).Run(ctx, g, "t", input)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestPlannerLLM(t *testing.T) {
	tests := []struct {
		name   string
		script []dsl.Reply
		input  map[string]any
		// want: the first decision's tool, decider and fallback_reason
		// (its start), and the run's LLM calls.
		tool, by, why string
		calls         int
	}{
		{name: "valid decision", script: []dsl.Reply{decision("b", 0.9)},
			tool: "b", by: "llm", calls: 1},
		{name: "COMPLETE is a valid decision", script: []dsl.Reply{decision("COMPLETE", 0.9)},
			tool: "COMPLETE", by: "llm", calls: 1},
		{name: "unknown tool", script: []dsl.Reply{decision("zz", 0.9)},
			tool: "a", by: "fallback", why: "llm answer invalid: no valid structured reply after 1 methods × 1 attempts; last: schema method, attempt 1: does not satisfy the schema: /tool: value must be one of 'a', 'b', 'COMPLETE'", calls: 1},
		{name: "repeated tool", script: []dsl.Reply{decision("a", 0.9)}, input: map[string]any{"completed_steps": []any{"a"}},
			tool: "b", by: "fallback", why: "llm chose a, which breaks a constraint: never repeat a completed tool", calls: 1},
		{name: "violated custom constraint", script: []dsl.Reply{decision("b", 0.2)},
			tool: "a", by: "fallback", why: "llm chose b, which breaks a constraint: decision.confidence == nil || decision.confidence >= 0.5", calls: 1},
		{name: "LLM timeout", script: []dsl.Reply{{Node: "planner", Delay: time.Minute, Output: map[string]any{"tool": "b"}}},
			tool: "a", by: "fallback", why: "llm timed out after 200ms", calls: 1},
		{name: "provider error", script: []dsl.Reply{{Node: "planner", Error: &dsl.ScriptedError{Status: 500, Message: "boom"}}},
			tool: "a", by: "fallback", why: "llm call failed: scripted model tiny: HTTP 500: boom", calls: 1},
		{name: "unparseable reply", script: []dsl.Reply{{Node: "planner", Text: "I think b"}},
			tool: "a", by: "fallback", why: "llm answer invalid: no valid structured reply", calls: 1},
		{name: "when false skips the LLM", script: []dsl.Reply{}, input: map[string]any{"use_llm": false},
			tool: "a", by: "fallback", why: "llm.when is false", calls: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runPlanner(context.Background(), t, "planner_agent", tt.script, tt.input)
			if res.Status != runner.StatusCompleted {
				t.Fatalf("status %s (%v), want completed", res.Status, res.Error)
			}
			d := res.State["planner_decisions"].([]any)[0].(map[string]any)
			why, _ := d["fallback_reason"].(string)
			if d["selected_tool"] != tt.tool || d["decided_by"] != tt.by || !strings.HasPrefix(why, tt.why) || (tt.why == "") != (why == "") {
				t.Errorf("decision %v\n got: %v by %v (%q)\nwant: %v by %v (%q…)", d, d["selected_tool"], d["decided_by"], why, tt.tool, tt.by, tt.why)
			}
			if got := res.Usage.LLMCalls; got != tt.calls {
				t.Errorf("LLM calls: got %d, want %d", got, tt.calls)
			}
			if got, want := res.State["next_action"], tt.tool; got != want {
				t.Errorf("next_action: got %v, want %v", got, want)
			}
		})
	}
}

// TestPlannerLLMPrompt checks the messages the model gets: the prompt's
// list of tools, rendered when the planner is built, and its state, at
// each call.
func TestPlannerLLMPrompt(t *testing.T) {
	rec := &recorder{Provider: builtins.Scripted([]dsl.Reply{decision("b", 0.9)})}
	runPlannerWith(context.Background(), t, "planner_agent", rec, map[string]any{"completed_steps": []any{"a"}})
	var got []string
	for _, m := range rec.request(t, 0).Messages {
		got = append(got, m.Role+": "+m.Content)
	}
	want := []string{"system: You plan.", `user: Done: ["a"]. Tools: a (first tool), b (second tool)`}
	if !slices.Equal(got, want) {
		t.Errorf("messages %q, want %q", got, want)
	}
}

// TestPlannerLLMDecisionLog checks what an LLM decision logs: its reason
// and confidence, the step, and one turn_metrics record.
func TestPlannerLLMDecisionLog(t *testing.T) {
	res := runPlanner(context.Background(), t, "planner_agent", []dsl.Reply{decision("b", 0.9)}, nil)
	d := res.State["planner_decisions"].([]any)[0].(map[string]any)
	for key, want := range map[string]any{"reason": "because b", "confidence": 0.9, "step": int64(1)} {
		if got := d[key]; got != want {
			t.Errorf("%s: got %v (%T), want %v", key, got, got, want)
		}
	}
	if _, ok := d["fallback_reason"]; ok {
		t.Errorf("an LLM decision has a fallback_reason: %v", d)
	}
	metrics, _ := res.State["turn_metrics"].([]any)
	if len(metrics) != 1 || metrics[0].(map[string]any)["phase"] != "planner" {
		t.Errorf("turn_metrics: got %v, want one planner record", metrics)
	}
}

// TestPlannerLLMLoop lets the model drive a whole run: it picks b before
// a, then completes.
func TestPlannerLLMLoop(t *testing.T) {
	script := []dsl.Reply{decision("b", 0.9), decision("a", 0.8), decision("COMPLETE", 0.7)}
	res := runPlanner(context.Background(), t, "planner_agent", script, map[string]any{"loop": true})
	var got []string
	for _, v := range res.State["planner_decisions"].([]any) {
		d := v.(map[string]any)
		got = append(got, d["selected_tool"].(string)+"/"+d["decided_by"].(string))
	}
	if want := "b/llm a/llm COMPLETE/llm"; strings.Join(got, " ") != want {
		t.Errorf("decisions: got %v, want %s", got, want)
	}
}

// TestPlannerLLMErrorsAreNotFallenBack checks that a budget exceeded and a
// cancelled run end the run instead of falling back.
func TestPlannerLLMErrorsAreNotFallenBack(t *testing.T) {
	t.Run("budget exceeded", func(t *testing.T) {
		res := runPlanner(context.Background(), t, "frugal", []dsl.Reply{decision("a", 0.9), decision("b", 0.9)}, map[string]any{"loop": true})
		if res.Status != runner.StatusFailed || res.Error == nil || res.Error.Code != "budget_exceeded" || res.Error.Node != "planner" {
			t.Fatalf("got status %s, error %+v; want failed with budget_exceeded at planner", res.Status, res.Error)
		}
		if got := len(res.State["planner_decisions"].([]any)); got != 1 {
			t.Errorf("decisions: got %d, want 1 (the second step must not fall back)", got)
		}
	})
	t.Run("cancelled run", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		slow := dsl.Reply{Node: "planner", Delay: time.Minute, Output: map[string]any{"tool": "b"}}
		res := runPlanner(ctx, t, "planner_agent", []dsl.Reply{slow}, nil)
		if res.Status != runner.StatusCancelled || res.State["planner_decisions"] != nil {
			t.Fatalf("got status %s, decisions %v; want cancelled with no decision", res.Status, res.State["planner_decisions"])
		}
	})
}
