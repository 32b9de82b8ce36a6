package examples

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/builtins/testrun"
	"github.com/runner-dev/runner/dsl"
)

// TestExamples: every folder validates without a warning, has Tests, and
// every Test passes.
func TestExamples(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			checker, err := dsl.NewChecker(builtins.Registry())
			if err != nil {
				t.Fatal(err)
			}
			docs, diags := dsl.Load(e.Name())
			proj, more := checker.Check(docs)
			for _, d := range append(diags, more...).Sorted() {
				t.Errorf("%s", d.Error())
			}
			if t.Failed() {
				return
			}
			suite := &testrun.Suite{Checker: checker, Project: proj}
			tests := suite.Tests("")
			if len(tests) == 0 {
				t.Fatalf("%s has no Test: add one for each route", e.Name())
			}
			for _, o := range suite.Run(context.Background(), tests, false) {
				if !o.Passed {
					t.Errorf("%s failed:\n%s", o.Name, strings.Join(o.Problems, "\n"))
				}
			}
		})
	}
}
