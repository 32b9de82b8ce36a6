package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/builtins/testrun"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/server"
)

// testsSrc is a pipeline with three Tests: one that passes, one that
// fails at its assertion (line 26), and one of tenant other, whose rule
// set comes last.
const testsSrc = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: count}
state:
  n: {type: integer, default: 0}
start: add
nodes:
  add:
    type: set
    with: {n: state.n + 1}
    next: END
---
apiVersion: runner/v1
kind: Test
metadata: {name: count_adds_one}
pipeline: count
expect: {status: completed, assert: [state.n == 1]}
---
apiVersion: runner/v1
kind: Test
metadata: {name: count_adds_two}
pipeline: count
expect:
  status: completed
  assert:
    - state.n == 2
---
apiVersion: runner/v1
kind: Test
metadata: {name: count_for_other}
pipeline: count
tenant: other
expect: {status: completed}
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: other_limits}
tenant: other
state:
  n: {type: integer}
rules:
  - key: other:too_many
    on: after_node
    when: state.n > 100
    do: {abort: {reason: too many}}
`

// suite loads src as a project's Test documents.
func suite(t *testing.T, src string) *testrun.Suite {
	t.Helper()
	path := filepath.Join(t.TempDir(), "count.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, diags := dsl.Load(path)
	proj, more := checker.Check(docs)
	if all := append(diags, more...); all.HasErrors(false) {
		t.Fatal(all)
	}
	return &testrun.Suite{Checker: checker, Project: proj}
}

func TestRunTestDocuments(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Tests = suite(t, testsSrc) })
	rep := e.call("POST", "/tests/run", map[string]any{}, 200)
	tests, _ := rep["tests"].([]any)
	if rep["passed"] != 1.0 || rep["failed"] != 1.0 || len(tests) != 2 {
		t.Fatalf("report %v; want 1 passed, 1 failed, the other tenant's Test left out", rep)
	}
	failed := tests[1].(map[string]any)
	problems, _ := failed["problems"].([]any)
	if failed["name"] != "count_adds_two" || failed["passed"] != false || len(problems) != 1 ||
		!strings.Contains(problems[0].(string), "count.yaml:26:7: assertion failed: state.n == 2") {
		t.Errorf("failed Test %v; want its assertion's position and text", failed)
	}

	e.key = otherKey
	rep = e.call("POST", "/tests/run", map[string]any{"filter": "other"}, 200)
	if tests, _ := rep["tests"].([]any); rep["passed"] != 1.0 || len(tests) != 1 || tests[0].(map[string]any)["name"] != "count_for_other" {
		t.Errorf("tenant other's run: %v", rep)
	}
	if p := e.call("POST", "/tests/run", map[string]any{"filter": "zzz"}, 404); !strings.Contains(p["detail"].(string), `no Test name contains "zzz"`) {
		t.Errorf("no match: %v", p)
	}
}

func TestRunTestDocumentsNotServed(t *testing.T) {
	e := newEnv(t)
	if p := e.call("POST", "/tests/run", nil, 404); !strings.Contains(p["detail"].(string), "serves no Test documents") {
		t.Errorf("%v", p)
	}
}

// TestRunTestDocumentsCover: a report with coverage shows the caller the
// pipelines and the rule sets of no tenant or its own, never another
// tenant's.
func TestRunTestDocumentsCover(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Tests = suite(t, testsSrc) })
	groups := func(rep map[string]any) []string {
		c, _ := rep["coverage"].(map[string]any)
		gs, _ := c["groups"].([]any)
		var out []string
		for _, g := range gs {
			g := g.(map[string]any)
			out = append(out, fmt.Sprintf("%s %s %v/%v", g["kind"], g["name"], g["taken"], g["total"]))
		}
		return out
	}
	if rep := e.call("POST", "/tests/run", map[string]any{}, 200); rep["coverage"] != nil {
		t.Errorf("coverage not asked for: %v", rep["coverage"])
	}
	rep := e.call("POST", "/tests/run", map[string]any{"cover": true}, 200)
	if got := groups(rep); !slices.Equal(got, []string{"Pipeline count 1/1"}) {
		t.Errorf("groups %v, want the pipeline alone", got)
	}
	e.key = otherKey
	rep = e.call("POST", "/tests/run", map[string]any{"cover": true}, 200)
	if got := groups(rep); !slices.Equal(got, []string{"Pipeline count 1/1", "RuleSet other_limits 0/1"}) {
		t.Errorf("tenant other's groups %v, want its rule set too", got)
	}
}

// TestRunTestDocumentsAs: POST /tests/run resumes a Test as the
// principals its resume steps name (as:, roles:), as runner test does:
// the payout's gate refuses an ops-lead and a second approval by the
// same cfo, and two distinct cfos pay once.
func TestRunTestDocumentsAs(t *testing.T) {
	payout, err := os.ReadFile("../cmd/runner/testdata/payout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := string(payout) + `---
apiVersion: runner/v1
kind: Test
metadata: {name: payout_by_two_cfos}
agent: payout
input: {amount: 20000}
resume:
  - {approve: true, as: bob, roles: [ops-lead], refused: "bob (roles ops-lead) is not among its reviewers (roles cfo)"}
  - {approve: true, as: carol, roles: [cfo]}
  - {approve: true, as: carol, roles: [cfo], refused: "carol has decided it already"}
  - {approve: true, as: dave, roles: [cfo]}
expect:
  status: completed
  tool_runs: {pay: 1}
`
	e := newEnv(t, func(c *server.Config) { c.Tests = suite(t, src) })
	rep := e.call("POST", "/tests/run", map[string]any{}, 200)
	if rep["passed"] != 1.0 || rep["failed"] != 0.0 {
		t.Fatalf("report %v; want the Test passed", rep)
	}
}
