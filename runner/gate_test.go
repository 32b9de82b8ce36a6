package runner_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runner-dev/runner/runner"
)

// gatedOneNode is oneNode with a gate on tool "guarded": where a gate can
// pause a step, the journal keeps every call the step makes.
func gatedOneNode(node runner.Node, step func(*runner.Step)) *runner.Graph {
	g := oneNode(node, step)
	g.Rules = []*runner.Rule{{Key: "g", On: runner.BeforeToolCall, Guard: &runner.Guard{Field: "name", Values: []string{"guarded"}},
		Action: runner.Action{Kind: runner.ActRequireHITL, HITL: &runner.HITL{}}}}
	return g
}

// counted is a tool that counts its calls and fails the first fail of
// them.
func counted(fail int) (*runner.ToolSpec, *[]string) {
	var keys []string
	return &runner.ToolSpec{Name: "count", Tool: runner.ToolFunc(func(_ context.Context, c *runner.ToolCall) (any, error) {
		keys = append(keys, c.Key)
		if len(keys) <= fail {
			return nil, errors.New("not yet")
		}
		return len(keys), nil
	})}, &keys
}

// TestOneToolTwiceInAStep: a node that calls one tool twice in a step
// makes two calls, each with an id of its own, though the journal keeps
// both.
func TestOneToolTwiceInAStep(t *testing.T) {
	spec, keys := counted(0)
	twice := fn(func(ctx context.Context, in *runner.Input) (runner.Update, error) {
		var outs []any
		for range 2 {
			o, err := in.Run.CallTool(ctx, runner.ToolRequest{Spec: spec, Args: map[string]any{}})
			if err != nil {
				return nil, err
			}
			outs = append(outs, o.Exec.Output)
		}
		return runner.Update{"out": outs}, nil
	})
	res, err := (&runner.Engine{}).Run(context.Background(), gatedOneNode(twice, nil), "t", nil)
	if err != nil || res.Status != runner.StatusCompleted || len(*keys) != 2 || (*keys)[0] != "t:work.0.0" || (*keys)[1] != "t:work.0.0#2" {
		t.Fatalf("%v %+v; calls %q, want two: t:work.0.0, t:work.0.0#2", err, res, *keys)
	}
}

// TestRetryMakesAFailedCallAgain: a node whose call failed, retried, makes
// the call again, though the journal kept the failed one.
func TestRetryMakesAFailedCallAgain(t *testing.T) {
	spec, keys := counted(1)
	fatal := fn(func(ctx context.Context, in *runner.Input) (runner.Update, error) {
		o, err := in.Run.CallTool(ctx, runner.ToolRequest{Spec: spec, Args: map[string]any{}})
		if err == nil {
			err = o.Err
		}
		if err != nil {
			return nil, err
		}
		return runner.Update{"out": o.Exec.Output}, nil
	})
	g := gatedOneNode(fatal, func(s *runner.Step) { s.Retry = runner.Retry{MaxAttempts: 2} })
	res, err := (&runner.Engine{}).Run(context.Background(), g, "t", nil)
	if err != nil || res.Status != runner.StatusCompleted || res.State["out"] != int64(2) || len(*keys) != 2 {
		t.Fatalf("%v %+v; %d calls, want completed after 2", err, res, len(*keys))
	}
}
