package builtins_test

import (
	"context"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner"
)

// TestNamedExpressions: a pipeline's and a rule set's named expressions
// are read, in either language, as if written out where they are read.
func TestNamedExpressions(t *testing.T) {
	g := compile(t, `apiVersion: runner/v1
kind: Pipeline
metadata: {name: p}
state:
  decision: {type: string, default: ""}
  risk: {type: integer, default: 0}
  verdict: {type: string, default: ""}
expressions:
  approved: lower(state.decision) in ["approve", "yes"]
  risky: {cel: 'state.risk >= 3'}
  label: 'approved && !risky ? "go" : "hold"'
start:
  - when: approved
    to: decide
  - to: END
nodes:
  decide:
    type: set
    with: {verdict: label}
    next:
      - when: {cel: 'risky && state.risk > 9'}
        to: END
      - to: END
output:
  verdict: state.verdict
  approved: approved
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: guard}
scope: platform
state:
  risk: {type: integer}
expressions:
  reckless: state.risk > 9
rules:
  - key: stop
    on: after_node
    when: reckless
    do: {abort: {reason: 'risk ${state.risk} is reckless'}}
`, "p", nil)
	for _, c := range []struct {
		decision string
		risk     int64
		status   string
		verdict  string
	}{
		{"YES", 1, runner.StatusCompleted, "go"},
		{"no", 1, runner.StatusCompleted, ""},
		{"approve", 5, runner.StatusCompleted, "hold"},
		{"approve", 10, runner.StatusFailed, "hold"},
	} {
		res, err := engine(t).Run(context.Background(), g, "t", map[string]any{"decision": c.decision, "risk": c.risk})
		if err != nil || res.Status != c.status || res.State["verdict"] != c.verdict {
			t.Errorf("%s, risk %d: %v %+v; want %s with verdict %q", c.decision, c.risk, err, res, c.status, c.verdict)
			continue
		}
		if c.status == runner.StatusFailed && !strings.Contains(res.Error.Message, "risk 10 is reckless") {
			t.Errorf("risk %d: error %v, want the rule's abort", c.risk, res.Error)
		}
		if out, _ := res.Output.(map[string]any); c.status == runner.StatusCompleted && out["approved"] != (c.verdict != "") {
			t.Errorf("%s: output %v", c.decision, res.Output)
		}
	}
}
