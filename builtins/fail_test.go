package builtins_test

import (
	"context"
	"testing"

	"github.com/runner-dev/runner/runner"
)

const errorKindsSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: parent}
state:
  out: {type: string}
interrupt_before: [late]
start: call
nodes:
  call:
    type: subgraph
    with: {pipeline: slow}
    on_error:
      - when: [http_5xx, validation]
        next: other
      - when: timeout
        next: late
      - next: other
    next: END
  late:
    type: set
    with: {out: 'error.kind + " at " + error.node + ": " + error.message'}
    next: END
  other:
    type: set
    with: {out: '"other"'}
    next: END
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: slow}
state:
  out: {type: string}
limits: {timeout: 20ms}
start: wait
nodes:
  wait:
    type: tool
    with: {tool: stall, fatal: true}
    next: END
---
apiVersion: runner/v1
kind: Tool
metadata: {name: stall}
parameters: {type: object}
expr: '"never"'
`

// TestSubgraphTimeoutKind: a subgraph that times out is a timeout to its
// node's on_error, whose target (paused before by interrupt_before) sees
// the error after the resume.
func TestSubgraphTimeoutKind(t *testing.T) {
	ctx := context.Background()
	stall := runner.ToolFunc(func(ctx context.Context, _ *runner.ToolCall) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	g := compile(t, errorKindsSrc, "parent", map[string]runner.Tool{"stall": stall})
	e := engine(t)
	res, err := e.Run(ctx, g, "p", nil)
	if err != nil || res.Status != runner.StatusInterrupted || res.Interrupt.Kind != runner.KindBefore || res.Interrupt.Node != "late" {
		t.Fatalf("run: %v %+v", err, res)
	}
	res, err = e.Resume(ctx, g, "p", runner.ResumeOptions{})
	if err != nil || res.Status != runner.StatusCompleted || res.State["out"] != "timeout at call: pipeline slow timed out after 20ms" {
		t.Fatalf("resume: %v %+v", err, res)
	}
}
