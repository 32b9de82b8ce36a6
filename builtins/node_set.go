package builtins

import (
	"context"
	"fmt"
	"sort"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

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
	Build:  buildSet,
}

func buildSet(cfg any, _ *dsl.Build) (runner.Node, error) {
	var n setNode
	for f, e := range *cfg.(*SetConfig) {
		n = append(n, setField{name: f.Name, expr: e.Program})
	}
	sort.Slice(n, func(i, j int) bool { return n[i].name < n[j].name })
	return n, nil
}

// setNode evaluates every field against the state before the node.
type setNode []setField

type setField struct {
	name string
	expr *dsl.Program
}

// Run computes the update.
func (n setNode) Run(_ context.Context, in *runner.Input) (runner.Update, error) {
	vars := in.Vars()
	upd := make(runner.Update, len(n))
	for _, f := range n {
		v, err := f.expr.Eval(vars)
		if err != nil {
			return nil, runner.Permanent(fmt.Errorf("%s: %w", f.name, err))
		}
		upd[f.name] = v
	}
	return upd, nil
}
