package builtins

import "github.com/runner-dev/runner/dsl"

// SetConfig is the with: block of a set node: state fields and the
// expressions that compute their new values from the current state.
type SetConfig map[dsl.FieldRef]dsl.Expression

// SetNode writes state fields from expressions.
var SetNode = dsl.NodeType{
	Name: "set",
	Doc:  "Writes state fields from expressions over the current state; every expression sees the state before the node.",
	Schema: `{
  "type": "object",
  "minProperties": 1,
  "additionalProperties": {"$ref": "defs.json#/$defs/expression"}
}`,
	Config: func() any { return &SetConfig{} },
}
