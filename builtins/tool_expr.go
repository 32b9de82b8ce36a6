package builtins

import (
	"context"
	"fmt"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// exprTool evaluates a pure expression over the call's args and state. An
// evaluation error is permanent: the same args and state fail again.
func exprTool(name string, p *dsl.Program) runner.ToolFunc {
	return func(ctx context.Context, call *runner.ToolCall) (any, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v, err := p.Eval(map[string]any{"args": call.Args, "state": map[string]any(call.State)})
		if err != nil {
			return nil, runner.Permanent(fmt.Errorf("tool %s: %w", name, err))
		}
		return v, nil
	}
}
