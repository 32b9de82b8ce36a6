package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// coverFile has Tests that take 9 of its 11 items (see the testrun
// package's TestCoverage).
const coverFile = "../../builtins/testrun/testdata/cover.yaml"

func TestTestCover(t *testing.T) {
	code, out, errOut := runCLI(t, "test", "--cover", coverFile)
	for _, want := range []string{
		"routes  on_error  interrupts  rules  decisions  covered\n",
		"Pipeline pay   4/5     1/1       1/1         -      -          85.7%\n",
		"RuleSet gates  -       -         -           1/2    2/2        75.0%\n",
		"total          4/5     1/1       1/1         1/2    2/2        81.8%\n",
		"cover.yaml:48:13: warning: Pipeline pay: route pay → ask (default) not taken by any Test\n",
		"cover.yaml:20:5: warning: RuleSet gates: rule gates:never fires (before_tool_call) not taken by any Test\n",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("exit %d, want 0 and %q in\n%s%s", code, want, out, errOut)
		}
	}
	if code, out, _ := runCLI(t, "test", coverFile); strings.Contains(out, "covered") {
		t.Errorf("without --cover: exit %d, a coverage table\n%s", code, out)
	}
}

func TestTestCoverMin(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"above", []string{"--min", "70"}, 0, ""},
		{"below", []string{"--min", "81.9"}, 1, "coverage 81.8% is below --min 81.9%"},
		{"out of range", []string{"--min", "101"}, 2, "give a percentage from 0 to 100"},
		{"unknown format", []string{"--format", "xml"}, 2, `unknown --format "xml"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append(append([]string{"test"}, tt.args...), coverFile)...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, want %d and %q\n%s%s", code, tt.code, tt.want, out, errOut)
			}
		})
	}
}

func TestTestCoverFormats(t *testing.T) {
	code, out, errOut := runCLI(t, "test", "--cover", "--format", "json", coverFile)
	var rep struct {
		Passed   int `json:"passed"`
		Coverage struct {
			Taken, Total int
			Groups       []struct {
				Kind, Name string
				Items      []struct {
					Kind, What string
					Position   struct{ File string }
					Hits       int
				}
			}
		} `json:"coverage"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if c := rep.Coverage; rep.Passed != 4 || c.Taken != 9 || c.Total != 11 || len(c.Groups) != 2 || c.Groups[0].Name != "pay" ||
		c.Groups[0].Items[0].Kind != "start" || !strings.HasSuffix(c.Groups[0].Items[0].Position.File, "cover.yaml") {
		t.Errorf("report %+v", rep)
	}
	code, out, _ = runCLI(t, "test", "--cover", "--format", "github", coverFile)
	want := "::warning file=" + coverFile + ",line=48,col=13,title=not-covered::Pipeline pay: route pay → ask (default) not taken by any Test\n"
	if code != 0 || !strings.Contains(out, want) || strings.Count(out, "::warning ") != 2 {
		t.Errorf("exit %d, want 2 annotations with %q\n%s", code, want, out)
	}
}
