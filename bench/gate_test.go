package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// gateProject gates the benchmark's tool with a platform rule whose
// resume_schema asks for the reviewer.
const gateProject = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: host}
start: idle
nodes:
  idle: {type: noop, next: END}
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: platform}
scope: platform
rules:
  - key: platform:approve_bench
    on: before_tool_call
    when: tool.name == "bench_tool"
    do: {require_hitl: {checkpoint_type: bench, resume_schema: {type: object, required: [reviewer]}}}
`

// BenchmarkGateDecide times the decide path of one gated call — the
// resume of a thread paused before it with an approval: the verdict read
// and checked, journaled, the call made, the step checkpointed, on the
// memory store — against the baseline of a run of the same call with no
// gate, alternately in each iteration, and reports the median of each and
// their ratio. A quorum of approvals is to be measured against
// decide-µs here.
func BenchmarkGateDecide(b *testing.B) {
	gated := callGraph(compileRules(b, gateProject), benchTool(), 1, nil)
	plain := callGraph(compileRules(b, ruleProject(0, 0, true)), benchTool(), 1, nil)
	e := &runner.Engine{Store: store.NewMemory()}
	ctx := context.Background()
	approve := runner.ResumeOptions{Value: map[string]any{"approved": true, "reviewer": "dana"}}
	var decide, base []time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		thread := fmt.Sprintf("t%d", i)
		if res, err := e.Run(ctx, gated, thread, nil); err != nil || res.Status != runner.StatusInterrupted {
			b.Fatalf("the gated call did not pause: %v %+v", err, res)
		}
		t0 := time.Now()
		res, err := e.Resume(ctx, gated, thread, approve)
		t1 := time.Now()
		if err = completed(res, err); err != nil {
			b.Fatal(err)
		}
		res, err = e.Run(ctx, plain, "plain-"+thread, nil)
		t2 := time.Now()
		if err = completed(res, err); err != nil {
			b.Fatal(err)
		}
		decide, base = append(decide, t1.Sub(t0)), append(base, t2.Sub(t1))
	}
	d, p := medianOf(decide), medianOf(base)
	b.ReportMetric(float64(d.Nanoseconds())/1000, "decide-µs")
	b.ReportMetric(float64(p.Nanoseconds())/1000, "ungated-run-µs")
	b.ReportMetric(float64(d)/float64(p), "ratio")
}

// medianOf is the median of ds.
func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
