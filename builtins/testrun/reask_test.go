package testrun

import (
	"context"
	"strings"
	"testing"
)

// TestFailureNamesTheReplyThatDidNotFit: a scripted reply that breaks the
// output schema makes the node ask again; the Test fails on the missing
// reply, and its first problem is the reply that did not fit, at its field.
func TestFailureNamesTheReplyThatDidNotFit(t *testing.T) {
	suite := loadSuite(t, "testdata/reask.yaml")
	rep := suite.Report(context.Background(), suite.Tests(""), false, false)
	if rep.Failed != 1 || len(rep.Tests) != 1 {
		t.Fatalf("want the one Test failed: %+v", rep)
	}
	problems := rep.Tests[0].Problems
	if len(problems) < 2 || !strings.Contains(problems[0], "node rate asked its model again: the reply did not fit its output schema") ||
		!strings.Contains(problems[0], "priority") || !strings.Contains(problems[1], "script has 1 replies") {
		t.Errorf("problems do not lead with the reply that did not fit:\n%s", strings.Join(problems, "\n"))
	}
}
