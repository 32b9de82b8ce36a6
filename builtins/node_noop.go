package builtins

import "github.com/runner-dev/runner/dsl"

// NoopNode does nothing; it is a join point or a place to route from.
var NoopNode = dsl.NodeType{
	Name:   "noop",
	Doc:    "Does nothing: a join point, or a place to hang routes on.",
	Schema: `{"type": "object", "additionalProperties": false}`,
	Config: func() any { return &struct{}{} },
}
