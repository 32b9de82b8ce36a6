package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
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

// BenchmarkQuorumDecide times the decide path of a gated call whose rule
// asks for a quorum of three distinct approvals — each resume by its own
// principal: two that record a vote and pause again, the third that
// decides and makes the call — against the resume of the same call under
// a single approval (BenchmarkGateDecide's decide path), alternately in
// each iteration, on the memory store. It reports the medians and the
// ratios of a vote and of the deciding approval to the single approval.
func BenchmarkQuorumDecide(b *testing.B) {
	quorum := strings.Replace(gateProject, "resume_schema: {type: object, required: [reviewer]}", "quorum: 3, reviewers: [role:cfo]", 1)
	single := callGraph(compileRules(b, gateProject), benchTool(), 1, nil)
	three := callGraph(compileRules(b, quorum), benchTool(), 1, nil)
	e := &runner.Engine{Store: store.NewMemory()}
	ctx := context.Background()
	verdict := map[string]any{"approved": true, "reviewer": "dana"}
	as := func(name string) runner.ResumeOptions {
		return runner.ResumeOptions{Value: verdict, RunOptions: runner.RunOptions{As: access.Principal{Name: name, Roles: []string{"cfo"}}}}
	}
	pause := func(g *runner.Graph, thread string) {
		if res, err := e.Run(ctx, g, thread, nil); err != nil || res.Status != runner.StatusInterrupted {
			b.Fatalf("the gated call did not pause: %v %+v", err, res)
		}
	}
	timed := func(g *runner.Graph, thread string, opt runner.ResumeOptions, want string) time.Duration {
		t0 := time.Now()
		res, err := e.Resume(ctx, g, thread, opt)
		d := time.Since(t0)
		if err != nil || res.Status != want {
			b.Fatalf("resume of %s: %v %+v, want %s", thread, err, res, want)
		}
		return d
	}
	var base, vote, final []time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		one, q := fmt.Sprintf("one-%d", i), fmt.Sprintf("q-%d", i)
		pause(single, one)
		pause(three, q)
		base = append(base, timed(single, one, as("dana"), runner.StatusCompleted))
		vote = append(vote, timed(three, q, as("r1"), runner.StatusInterrupted))
		vote = append(vote, timed(three, q, as("r2"), runner.StatusInterrupted))
		final = append(final, timed(three, q, as("r3"), runner.StatusCompleted))
	}
	s, v, f := medianOf(base), medianOf(vote), medianOf(final)
	b.ReportMetric(float64(s.Nanoseconds())/1000, "single-µs")
	b.ReportMetric(float64(v.Nanoseconds())/1000, "vote-µs")
	b.ReportMetric(float64(f.Nanoseconds())/1000, "deciding-µs")
	b.ReportMetric(float64(v)/float64(s), "vote-ratio")
	b.ReportMetric(float64(f)/float64(s), "deciding-ratio")
}
