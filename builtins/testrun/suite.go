package testrun

import (
	"context"
	"strings"
	"time"

	"github.com/runner-dev/runner/dsl"
)

// Suite is a project's Test documents, checked by Checker: what runner
// test and the server's POST /tests/run both run.
type Suite struct {
	Checker *dsl.Checker
	Project *dsl.Project
}

// Outcome is how one Test went; each of its problems starts with the
// position it is about (an expectation's, or the Test's).
type Outcome struct {
	Name     string        `json:"name"`
	Position string        `json:"position"`
	Passed   bool          `json:"passed"`
	Problems []string      `json:"problems,omitempty"`
	Took     time.Duration `json:"-"`
}

// Tests returns the Tests whose name contains filter, in document order.
func (s *Suite) Tests(filter string) []*dsl.TestDef {
	var out []*dsl.TestDef
	for _, t := range s.Project.Tests {
		if strings.Contains(t.Name, filter) {
			out = append(out, t)
		}
	}
	return out
}

// Report is how a run of Tests went: what runner test --format json
// prints and POST /tests/run answers.
type Report struct {
	Passed int       `json:"passed"`
	Failed int       `json:"failed"`
	Tests  []Outcome `json:"tests"`
	// Coverage, when asked for, is what the Tests took of the project.
	Coverage *Coverage `json:"coverage,omitempty"`
}

// Report runs tests as Run does and counts how they went; with cover, it
// also reports what they took of the project's pipelines and rule sets
// (all of them, the Tests run or not).
func (s *Suite) Report(ctx context.Context, tests []*dsl.TestDef, live, cover bool) *Report {
	var hits map[mark]int
	if cover {
		hits = map[mark]int{}
	}
	rep := &Report{Tests: s.run(ctx, tests, live, hits)}
	for _, o := range rep.Tests {
		if o.Passed {
			rep.Passed++
		} else {
			rep.Failed++
		}
	}
	if cover {
		rep.Coverage = coverage(s.Project, hits)
	}
	return rep
}

// Run runs tests one after the other; live lets unmocked calls through.
func (s *Suite) Run(ctx context.Context, tests []*dsl.TestDef, live bool) []Outcome {
	return s.run(ctx, tests, live, nil)
}

// run is Run; with hits set, it counts in it what the Tests take.
func (s *Suite) run(ctx context.Context, tests []*dsl.TestDef, live bool, hits map[mark]int) []Outcome {
	out := make([]Outcome, 0, len(tests))
	for _, t := range tests {
		start := time.Now()
		var tr *tracker
		if hits != nil {
			tr = newTracker(hits, t.Tenant)
		}
		problems := runTest(ctx, s.Checker, s.Project, t, live, tr)
		pos := t.Doc.Pos(t.Doc.Root).String()
		for i, p := range problems {
			if !strings.HasPrefix(p, t.Doc.File+":") { // not at an expectation: at the Test
				problems[i] = pos + ": " + p
			}
		}
		out = append(out, Outcome{Name: t.Name, Position: pos, Passed: len(problems) == 0, Problems: problems, Took: time.Since(start)})
	}
	return out
}
