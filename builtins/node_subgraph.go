package builtins

import "github.com/runner-dev/runner/dsl"

// SubgraphConfig is the with: block of a subgraph node, and of each branch
// of a parallel node.
type SubgraphConfig struct {
	Pipeline dsl.PipelineRef `yaml:"pipeline"`
	// Input maps the parent state to the child's input.
	Input map[string]dsl.Expression `yaml:"input"`
	// Output maps the child's final state (as `result`) to parent fields.
	Output map[dsl.FieldRef]dsl.Expression `yaml:"output" vars:"result"`
}

const subgraphSchema = `{
  "type": "object",
  "properties": {
    "pipeline": {"$ref": "defs.json#/$defs/name"},
    "input": {"type": "object", "additionalProperties": {"$ref": "defs.json#/$defs/expression"}},
    "output": {"type": "object", "additionalProperties": {"$ref": "defs.json#/$defs/expression"}}
  },
  "required": ["pipeline"],
  "additionalProperties": false
}`

// SubgraphNode runs another pipeline as one step.
var SubgraphNode = dsl.NodeType{
	Name:   "subgraph",
	Doc:    "Runs another pipeline with an input mapping and maps its final state back; its checkpoints live under the parent thread.",
	Schema: subgraphSchema,
	Config: func() any { return &SubgraphConfig{} },
}
