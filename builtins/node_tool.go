package builtins

import (
	"time"

	"github.com/runner-dev/runner/dsl"
)

// ToolConfig is the with: block of a tool node.
type ToolConfig struct {
	// Tool is the tool to run, by name; or Select picks one of Tools.
	Tool   dsl.ToolRef    `yaml:"tool"`
	Select dsl.Expression `yaml:"select"`
	Tools  []dsl.ToolRef  `yaml:"tools"`
	// Args are the call's arguments, each an expression over the state.
	Args map[string]dsl.Expression `yaml:"args"`
	// Output receives the tool's result; with Merge the result is an object
	// of state updates instead.
	Output dsl.FieldRef `yaml:"output"`
	Merge  bool         `yaml:"merge"`
	// Record, when set, receives a ToolExecution {tool_name, input, output,
	// execution_time_ms, status, error_message, timestamp}; Completed, when
	// set, receives the tool's name. Both are usually append fields.
	Record    dsl.FieldRef  `yaml:"record"`
	Completed dsl.FieldRef  `yaml:"completed"`
	Timeout   time.Duration `yaml:"timeout"`
	// Fatal makes a failed or timed-out call fail the node.
	Fatal bool `yaml:"fatal"`
}

// ToolNode runs one tool and records its execution.
var ToolNode = dsl.NodeType{
	Name: "tool",
	Doc:  "Runs one tool — named, or selected by an expression from a list — and records a ToolExecution. A failed or timed-out call is recorded and is not fatal unless `fatal: true`.",
	Schema: `{
  "type": "object",
  "properties": {
    "tool": {"$ref": "defs.json#/$defs/name"},
    "select": {"$ref": "defs.json#/$defs/expression"},
    "tools": {"$ref": "defs.json#/$defs/names"},
    "args": {"type": "object", "additionalProperties": {"$ref": "defs.json#/$defs/expression"}},
    "output": {"$ref": "defs.json#/$defs/name"},
    "merge": {"type": "boolean"},
    "record": {"$ref": "defs.json#/$defs/name"},
    "completed": {"$ref": "defs.json#/$defs/name"},
    "timeout": {"$ref": "defs.json#/$defs/duration"},
    "fatal": {"type": "boolean"}
  },
  "oneOf": [
    {"required": ["tool"], "not": {"required": ["select"]}},
    {"required": ["select", "tools"], "not": {"required": ["tool"]}}
  ],
  "additionalProperties": false
}`,
	Config: func() any { return &ToolConfig{} },
}
