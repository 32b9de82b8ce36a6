package builtins

import "github.com/runner-dev/runner/dsl"

// MapConfig is the with: block of a map node.
type MapConfig struct {
	// Over is the list to fan out over; each element is `item`, its
	// position `index`.
	Over dsl.Expression `yaml:"over"`
	// Tool runs per element with Args.
	Tool dsl.ToolRef               `yaml:"tool"`
	Args map[string]dsl.Expression `yaml:"args" vars:"item,index"`
	Into dsl.FieldRef              `yaml:"into"`
	// MaxConcurrency bounds the fan-out; OnFailure is fail or continue.
	MaxConcurrency int    `yaml:"max_concurrency"`
	OnFailure      string `yaml:"on_failure"`
}

// MapNode runs a tool once per element of a list.
var MapNode = dsl.NodeType{
	Name: "map",
	Doc:  "Runs a tool once per element of a list (at most max_concurrency at once) and writes the results, in list order, to `into`.",
	Schema: `{
  "type": "object",
  "properties": {
    "over": {"$ref": "defs.json#/$defs/expression"},
    "tool": {"$ref": "defs.json#/$defs/name"},
    "args": {"type": "object", "additionalProperties": {"$ref": "defs.json#/$defs/expression"}},
    "into": {"$ref": "defs.json#/$defs/name"},
    "max_concurrency": {"type": "integer", "minimum": 1},
    "on_failure": {"enum": ["fail", "continue"]}
  },
  "required": ["over", "tool", "into"],
  "additionalProperties": false
}`,
	Config: func() any { return &MapConfig{} },
}
