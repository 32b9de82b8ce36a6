package dsl_test

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/dsl"
)

// corpus generates n documents in groups of five: a pipeline with eight
// nodes and a dozen expressions, two tools, a rule set and an agent.
func corpus(n int) []byte { return generate(n, false) }

// namedCorpus is corpus with the pipelines' route conditions and part of
// the rule sets' conditions written once, as named expressions.
func namedCorpus(n int) []byte { return generate(n, true) }

func generate(n int, named bool) []byte {
	cond := map[string]string{
		"finished": `state.next_action == "COMPLETE" || state.step_count >= 20`,
		"high":     `state.score > 0.9`,
		"review":   `state.flagged && state.score > 0.5`,
		"failing":  `result.status == "FAILED" && budget.tool_calls > 10`,
	}
	pipelineExprs, ruleExprs := "", ""
	if named {
		pipelineExprs = fmt.Sprintf("expressions:\n  finished: '%s'\n  high: '%s'\n  review: '%s'\n", cond["finished"], cond["high"], cond["review"])
		ruleExprs = "expressions:\n  many: budget.tool_calls > 10\n"
		cond = map[string]string{"finished": "finished", "high": "high", "review": "review", "failing": `result.status == "FAILED" && many`}
	}
	var b strings.Builder
	for i := 0; i < n/5; i++ {
		fmt.Fprintf(&b, `apiVersion: runner/v1
kind: Pipeline
metadata: {name: p%[1]d}
%[2]sstate:
  status: {type: string, default: PENDING}
  step_count: {type: integer, default: 0}
  next_action: {type: string, default: ""}
  completed_steps: {type: array, items: {type: string}, reducer: append}
  planner_decisions: {type: array, reducer: append}
  tool_executions: {type: array, reducer: append}
  score: {type: number, default: 0}
  flagged: {type: boolean, default: false}
limits: {max_steps: 40, timeout: 60s}
start: planner
nodes:
  planner:
    type: planner
    with: {tools: [a%[1]d, b%[1]d], fallback: [a%[1]d, b%[1]d]}
    next:
      - when: '%[3]s'
        to: score
      - to: exec
  exec:
    type: tool
    with: {select: state.next_action, tools: [a%[1]d, b%[1]d], args: {n: state.step_count}, merge: true, record: tool_executions}
    timeout: 10s
    retry: {max_attempts: 3, backoff: 100ms}
    next: planner
  score:
    type: set
    with:
      score: 'len(state.completed_steps) * 0.25 + (state.flagged ? 0.5 : 0.0)'
      flagged: state.score > 0.7 || "b%[1]d" in state.completed_steps
    next:
      - when: '%[4]s'
        to: escalate
      - when: '%[5]s'
        to: review
      - to: done
  escalate: {type: set, with: {status: '"ESCALATED"'}, next: done}
  review: {type: set, with: {status: '"REVIEW"'}, next: done}
  done:
    type: set
    with: {status: 'state.status == "PENDING" ? "COMPLETED" : state.status'}
    next: END
output:
  status: state.status
  score: state.score
---
apiVersion: runner/v1
kind: Tool
metadata: {name: a%[1]d}
parameters: {type: object, properties: {n: {type: integer}}}
expr: '{"score": args.n * 0.1, "flagged": args.n > 3}'
---
apiVersion: runner/v1
kind: Tool
metadata: {name: b%[1]d}
parameters: {type: object, properties: {n: {type: integer}}}
expr: '{"score": min(1.0, args.n / 10.0)}'
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: r%[1]d}
%[6]sstate:
  step_count: {type: integer}
rules:
  - key: gate
    on: before_tool_call
    when: tool.capability_key in ["create_entity", "update_entity"] && state.step_count > 2
    do: {require_hitl: {checkpoint_type: mutation}}
  - key: cap
    on: after_tool_call
    when: '%[7]s'
    do: {abort: {reason: too many failures}}
---
apiVersion: runner/v1
kind: Agent
metadata: {name: agent%[1]d}
pipeline: p%[1]d
rules: [r%[1]d]
budget: {max_tokens: 100000, max_cost_usd: 5, on_exceed: fail}
---
`, i, pipelineExprs, cond["finished"], cond["high"], cond["review"], ruleExprs, cond["failing"])
	}
	return []byte(b.String())
}

func TestCorpusIsValid(t *testing.T) {
	for _, src := range [][]byte{corpus(200), namedCorpus(200)} {
		docs, diags := dsl.Parse("corpus.yaml", src)
		_, more := newChecker(t).Check(docs)
		if diags = append(diags, more...); len(diags) > 0 || len(docs) != 200 {
			t.Fatalf("%d documents, diagnostics:\n%s", len(docs), list(diags))
		}
	}
}

// BenchmarkValidate200 validates 200 documents: parse, schema, expressions,
// references and graphs. The target is under 200 ms per operation.
func BenchmarkValidate200(b *testing.B) {
	src := corpus(200)
	c := newChecker(b)
	b.ReportAllocs()
	for b.Loop() {
		docs, _ := dsl.Parse("corpus.yaml", src)
		if _, diags := c.Check(docs); len(diags) > 0 {
			b.Fatal(diags)
		}
	}
}

// BenchmarkYAMLDecode200 is the baseline: decoding the same bytes into
// yaml.Nodes and nothing else.
func BenchmarkYAMLDecode200(b *testing.B) {
	src := corpus(200)
	b.ReportAllocs()
	for b.Loop() {
		decodeAll(b, src)
	}
}

// BenchmarkValidateRatio times validating the corpus and decoding it into
// yaml.Nodes alternately, one after the other in each iteration, and
// reports the median of each and their ratio (the target is 2): on a
// shared machine, load that comes and goes weighs on both alike. The
// ratio of the CPU time the process spent in each (cpu-ratio) does not
// count the time other processes held the cores.
func BenchmarkValidateRatio(b *testing.B) { validateRatio(b, corpus(200)) }

// BenchmarkValidateNamedRatio is BenchmarkValidateRatio with conditions
// written as named expressions: the target is 2 too.
func BenchmarkValidateNamedRatio(b *testing.B) { validateRatio(b, namedCorpus(200)) }

func validateRatio(b *testing.B, src []byte) {
	c := newChecker(b)
	var validate, decode, validateCPU, decodeCPU []time.Duration
	for b.Loop() {
		t0, c0 := now()
		docs, _ := dsl.Parse("corpus.yaml", src)
		if _, diags := c.Check(docs); len(diags) > 0 {
			b.Fatal(diags)
		}
		t1, c1 := now()
		decodeAll(b, src)
		t2, c2 := now()
		validate, decode = append(validate, t1.Sub(t0)), append(decode, t2.Sub(t1))
		validateCPU, decodeCPU = append(validateCPU, c1-c0), append(decodeCPU, c2-c1)
	}
	v, d := median(validate), median(decode)
	b.ReportMetric(float64(v.Microseconds())/1000, "validate-ms")
	b.ReportMetric(float64(d.Microseconds())/1000, "decode-ms")
	b.ReportMetric(float64(v)/float64(d), "ratio")
	if _, ok := cpuTime(); ok {
		b.ReportMetric(float64(median(validateCPU))/float64(median(decodeCPU)), "cpu-ratio")
	}
}

// now reads the clock and the process's CPU time.
func now() (time.Time, time.Duration) {
	cpu, _ := cpuTime()
	return time.Now(), cpu
}

// decodeAll decodes every document of src into a yaml.Node.
func decodeAll(b *testing.B, src []byte) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err == io.EOF {
			return
		} else if err != nil {
			b.Fatal(err)
		}
	}
}

// median returns the median of ds (which it sorts).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkNewChecker is the fixed cost of a validate run: compiling the
// document schemas.
func BenchmarkNewChecker(b *testing.B) {
	for b.Loop() {
		newChecker(b)
	}
}
