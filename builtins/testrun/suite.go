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

// Run runs tests one after the other; live lets unmocked calls through.
func (s *Suite) Run(ctx context.Context, tests []*dsl.TestDef, live bool) []Outcome {
	out := make([]Outcome, 0, len(tests))
	for _, t := range tests {
		start := time.Now()
		problems := Run(ctx, s.Checker, s.Project, t, live)
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
