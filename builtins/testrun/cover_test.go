package testrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
)

// TestCoverage runs Tests that take some of each kind of item and checks
// what the coverage says of every item.
func TestCoverage(t *testing.T) {
	suite := loadSuite(t, "testdata/cover.yaml")
	rep := suite.Report(context.Background(), suite.Tests(""), false, true)
	if rep.Failed > 0 {
		t.Fatalf("a Test failed: %+v", rep.Tests)
	}
	type seen struct {
		kind, what string
		line, hits int
	}
	var got []seen
	for _, g := range rep.Coverage.Groups {
		for _, it := range g.Items {
			got = append(got, seen{it.Kind, g.Name + ": " + it.What, it.Pos.Line, it.Hits})
		}
	}
	want := []seen{
		{ItemRule, "gates: gates:refund fires (before_tool_call)", 16, 3},
		{ItemDecision, "gates: gates:refund: approve", 19, 2},
		{ItemDecision, "gates: gates:refund: reject", 19, 1}, // by its on_expire,
		{ItemRule, "gates: gates:never fires (before_tool_call)", 20, 0},
		{ItemStart, `pay: start → ask (when state.kind == "ask")`, 34, 1},
		{ItemStart, "pay: start → pay (default)", 35, 3},
		{ItemInterrupt, "pay: ask resumed", 37, 2},
		{ItemRoute, "pay: ask → END (default)", 40, 2},
		{ItemOnError, "pay: pay on_error → ask (any error)", 44, 2},
		{ItemRoute, "pay: pay → END (when state.paid != nil)", 47, 1},
		{ItemRoute, "pay: pay → ask (default)", 48, 0},
	}
	slices.SortStableFunc(got, func(a, b seen) int { return a.line - b.line })
	slices.SortStableFunc(want, func(a, b seen) int { return a.line - b.line })
	if !slices.Equal(got, want) {
		t.Errorf("items\n got: %+v\nwant: %+v", got, want)
	}
	if c := rep.Coverage; c.Taken != 9 || c.Total != 11 {
		t.Errorf("coverage %d/%d, want 9/11", c.Taken, c.Total)
	}
	if rep := suite.Report(context.Background(), suite.Tests(""), false, false); rep.Coverage != nil || rep.Passed != 4 {
		t.Errorf("without cover: %+v, want 4 passed and no coverage", rep)
	}
}

// TestCoverageOfChildThreads: a subgraph's child thread takes the routes
// of its own pipeline, not those of the parent's node of the same name.
func TestCoverageOfChildThreads(t *testing.T) {
	suite := loadSuite(t, "testdata/cover_subgraph.yaml")
	rep := suite.Report(context.Background(), suite.Tests(""), false, true)
	var got []string
	for _, g := range rep.Coverage.Groups {
		for _, it := range g.Items {
			got = append(got, fmt.Sprintf("%s: %s %d", g.Name, it.What, it.Hits))
		}
	}
	want := []string{"outer: a → END (default) 1", "inner: a → END (when state.x == 2) 1", "inner: a → END (default) 0"}
	if rep.Failed > 0 || !slices.Equal(got, want) {
		t.Errorf("%d failed, items\n got: %q\nwant: %q", rep.Failed, got, want)
	}
}

// loadSuite checks the documents at paths into a Suite.
func loadSuite(t testing.TB, paths ...string) *Suite {
	t.Helper()
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, diags := dsl.Load(paths...)
	proj, more := checker.Check(docs)
	if diags = append(diags, more...); diags.HasErrors(false) {
		t.Fatal(diags)
	}
	return &Suite{Checker: checker, Project: proj}
}

// TestShippedCoverage: the shipped Tests take every route, on_error entry,
// interrupt, rule and decision of the shipped definitions, but those a
// "# not covered: WHAT — why" comment in a Tests file names; and each such
// comment names one they do not take.
func TestShippedCoverage(t *testing.T) {
	suite := loadSuite(t, "../../pipelines", "../../agents", "../../rules")
	rep := suite.Report(context.Background(), suite.Tests(""), false, true)
	if rep.Failed > 0 {
		t.Fatalf("%d shipped Tests failed", rep.Failed)
	}
	excused := map[string]string{} // what → the Tests file that says why
	files, _ := filepath.Glob("../../pipelines/*/tests.yaml")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			if what, ok := strings.CutPrefix(line, "# not covered: "); ok {
				what, _, _ = strings.Cut(strings.TrimSpace(what), " — ")
				excused[what] = f
			}
		}
	}
	for _, g := range rep.Coverage.Groups {
		for _, it := range g.Items {
			file, ok := excused[it.What]
			switch {
			case it.Hits == 0 && !ok:
				t.Errorf("%s: %s %s: no Test takes %s %s, and no Tests file says why", it.Pos, g.Kind, g.Name, it.Kind, it.What)
			case it.Hits > 0 && ok:
				t.Errorf("%s says no Test takes %s, but one does: drop the comment", file, it.What)
			}
			delete(excused, it.What)
		}
	}
	for what, file := range excused {
		t.Errorf("%s: # not covered: %s names nothing the definitions have", file, what)
	}
}
