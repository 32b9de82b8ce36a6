package builtins

import (
	"context"
	"fmt"
	"time"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// PlannerConfig is the with: block of a planner node.
type PlannerConfig struct {
	// Tools the planner may choose from.
	Tools []dsl.ToolRef `yaml:"tools"`
	// Fallback is the deterministic sequence: the first tool not yet in
	// Completed is chosen; when all are done the decision is COMPLETE.
	Fallback []dsl.ToolRef `yaml:"fallback"`
	// Completed is read; Next, Step and Decisions are written.
	Completed dsl.FieldRef `yaml:"completed"`
	Next      dsl.FieldRef `yaml:"next"`
	Step      dsl.FieldRef `yaml:"step"`
	Decisions dsl.FieldRef `yaml:"decisions"`
}

// PlannerNode picks the next tool to run, or COMPLETE.
var PlannerNode = dsl.NodeType{
	Name: "planner",
	Doc:  "Picks the next tool, or COMPLETE: the first tool of the fallback sequence not yet completed. Appends a PlannerDecision {step, selected_tool, reason, confidence, timestamp} and increments the step counter.",
	Schema: `{
  "type": "object",
  "properties": {
    "tools": {"$ref": "defs.json#/$defs/names", "minItems": 1},
    "fallback": {"$ref": "defs.json#/$defs/names", "minItems": 1},
    "completed": {"$ref": "defs.json#/$defs/name"},
    "next": {"$ref": "defs.json#/$defs/name"},
    "step": {"$ref": "defs.json#/$defs/name"},
    "decisions": {"$ref": "defs.json#/$defs/name"}
  },
  "required": ["tools", "fallback"],
  "additionalProperties": false
}`,
	Config: func() any {
		return &PlannerConfig{
			Completed: dsl.FieldRef{Name: "completed_steps"}, Next: dsl.FieldRef{Name: "next_action"},
			Step: dsl.FieldRef{Name: "step_count"}, Decisions: dsl.FieldRef{Name: "planner_decisions"},
		}
	},
	Build: buildPlanner,
}

// Complete is the planner's decision to finish.
const Complete = "COMPLETE"

func buildPlanner(cfg any, b *dsl.Build) (runner.Node, error) {
	c := cfg.(*PlannerConfig)
	allowed := map[string]bool{}
	for _, t := range c.Tools {
		allowed[t.Name] = true
	}
	n := &planner{completed: c.Completed.Name, next: c.Next.Name, step: c.Step.Name, decisions: c.Decisions.Name}
	for _, t := range c.Fallback {
		if !allowed[t.Name] {
			return nil, fmt.Errorf("fallback tool %s is not in tools", t.Name)
		}
		n.fallback = append(n.fallback, t.Name)
	}
	return n, nil
}

// planner picks the first fallback tool not yet completed.
type planner struct {
	fallback                         []string
	completed, next, step, decisions string
}

// Run decides the next action and logs a PlannerDecision.
func (p *planner) Run(_ context.Context, in *runner.Input) (runner.Update, error) {
	done := map[string]bool{}
	list, _ := in.State[p.completed].([]any)
	for _, v := range list {
		if s, ok := v.(string); ok {
			done[s] = true
		}
	}
	choice, reason := Complete, "every tool of the fallback sequence has run"
	for _, t := range p.fallback {
		if !done[t] {
			choice, reason = t, "fallback sequence: first tool not yet completed"
			break
		}
	}
	step := toInt(in.State[p.step]) + 1
	return runner.Update{
		p.next: choice,
		p.step: step,
		p.decisions: map[string]any{
			"step": step, "selected_tool": choice, "reason": reason, "confidence": 1.0,
			"decided_by": "fallback", "timestamp": in.Run.Now().UTC().Format(time.RFC3339Nano),
		},
	}, nil
}

// toInt reads a JSON-like integer (nil is 0).
func toInt(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}
