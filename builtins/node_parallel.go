package builtins

import "github.com/runner-dev/runner/dsl"

// ParallelConfig is the with: block of a parallel node.
type ParallelConfig struct {
	Branches       []SubgraphConfig `yaml:"branches"`
	MaxConcurrency int              `yaml:"max_concurrency"`
	// OnFailure is fail (the default: the first failure fails the node) or
	// continue (failed branches are skipped).
	OnFailure string `yaml:"on_failure"`
}

// ParallelNode runs pipelines side by side and joins them via reducers.
var ParallelNode = dsl.NodeType{
	Name: "parallel",
	Doc:  "Runs several pipelines concurrently (at most max_concurrency at once) and merges each branch's output mapping through the state reducers.",
	Schema: `{
  "type": "object",
  "properties": {
    "branches": {"type": "array", "minItems": 1, "items": ` + subgraphSchema + `},
    "max_concurrency": {"type": "integer", "minimum": 1},
    "on_failure": {"enum": ["fail", "continue"]}
  },
  "required": ["branches"],
  "additionalProperties": false
}`,
	Config: func() any { return &ParallelConfig{} },
}
