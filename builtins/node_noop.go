package builtins

import (
	"context"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// NoopNode does nothing; it is a join point or a place to route from.
var NoopNode = dsl.NodeType{
	Name:   "noop",
	Doc:    "Does nothing: a join point, or a place to hang routes on.",
	Schema: `{"type": "object", "additionalProperties": false}`,
	Config: func() any { return &struct{}{} },
	Build:  func(any, *dsl.Build) (runner.Node, error) { return noop{}, nil },
}

type noop struct{}

// Run returns no update.
func (noop) Run(context.Context, *runner.Input) (runner.Update, error) { return nil, nil }
