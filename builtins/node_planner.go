package builtins

import "github.com/runner-dev/runner/dsl"

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
}
