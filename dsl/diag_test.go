package dsl_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runner-dev/runner/dsl"
)

// TestErrorsDoNotHideEachOther: a schema error confines itself to the part
// it is in (a node, a state field, a rule), the rest of the document is
// still checked, and nothing that follows from a reported error is
// reported again.
func TestErrorsDoNotHideEachOther(t *testing.T) {
	const head = "apiVersion: runner/v1\nkind: Pipeline\nmetadata: {name: p}\n"
	tests := []struct {
		name string
		src  string
		want []string // one regular expression a diagnostic, in order
	}{
		{
			name: "three errors in three nodes",
			src: head + `state:
  n: {type: integer}
start: a
nodes:
  a:
    type: sett
    next: b
  b:
    type: noop
    next:
      - when: state.n >=
        to: c
      - to: END
  c:
    type: noop
    next: nowhere
`,
			want: []string{`:9:11: .*"sett" is not one of`, `:14:24: .*unexpected token`, `:19:11: .*route to unknown node "nowhere"`},
		},
		{
			name: "a broken state field is still declared",
			src: head + `state:
  n: {type: integr}
  m: {type: integer}
start: a
nodes:
  a:
    type: set
    with: {n: state.n + 1, m: state.x}
    next: END
`,
			want: []string{`:5:13: .*"integr" is not one of`, `:11:31: .*unknown name|no field "x"`},
		},
		{
			name: "a node whose routes are refused may lead anywhere",
			src: head + `start: a
nodes:
  a: {type: noop, next: {to: b}}
  b: {type: noop, next: END}
  c: {type: noop, next: b}
`,
			want: []string{`:6:25: .*wrong shape in nodes.a.next`},
		},
		{
			name: "limits with an error may bound any cycle",
			src: head + `limits: {max_steps: many}
start: a
nodes:
  a: {type: noop, next: [{when: "true", to: a}, {to: END}]}
  b: {type: noop, next: END}
`,
			want: []string{`:4:21: .*expected an integer in limits.max_steps`, `:8:3: .*node "b" is unreachable`},
		},
		{
			name: "a missing start leaves reachability unknown",
			src: head + `nodes:
  a: {type: noop, next: END}
  b: {type: noop, next: missing}
`,
			want: []string{`:1:1: .*missing required field "start"`, `:6:25: .*route to unknown node "missing"`},
		},
		{
			name: "a broken rule does not hide the next one",
			src: `apiVersion: runner/v1
kind: RuleSet
metadata: {name: r}
rules:
  - {key: a, on: before_tool_cal, do: {deny: {reason: x}}}
  - {key: b, on: before_tool_call, when: tool.nme == "x", do: {note: hi}}
`,
			want: []string{`:5:18: .*"before_tool_cal" is not one of`, `:6:47: .*no field "nme"`},
		},
	}
	c := newChecker(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, diags := dsl.Parse("p.yaml", []byte(tt.src))
			_, more := c.Check(docs)
			diags = append(diags, more...)
			if len(diags) != len(tt.want) {
				t.Fatalf("got %d diagnostics, want %d:\n%s", len(diags), len(tt.want), list(diags))
			}
			for i, w := range tt.want {
				got := diags[i].Error()
				if ok, _ := regexp.MatchString(w, got); !ok {
					t.Errorf("diagnostic %d = %s, want it to match %q", i, got, w)
				}
			}
		})
	}
}

// TestDiagnosticCodes: every diagnostic the invalid corpus produces
// carries one of the documented codes, and each code is documented once.
func TestDiagnosticCodes(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range dsl.Codes {
		if seen[c.Code] || c.Meaning == "" || !regexp.MustCompile(`^[a-z]+\.[a-z-]+$`).MatchString(c.Code) {
			t.Errorf("code %q is listed twice, without a meaning, or not as phase.name", c.Code)
		}
		seen[c.Code] = true
	}
	c := newChecker(t)
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	used := map[string]bool{}
	for _, file := range files {
		docs, diags := dsl.Load(file)
		_, more := c.Check(docs)
		for _, d := range append(diags, more...) {
			if !dsl.KnownCode(d.Code) {
				t.Errorf("%s: diagnostic without a documented code (got %q)", d.Error(), d.Code)
			}
			used[d.Code] = true
		}
	}
	t.Logf("the invalid corpus uses %d of %d codes", len(used), len(dsl.Codes))
}

// TestCodesDocumented: the language reference's table lists every code.
func TestCodesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range dsl.Codes {
		if !strings.Contains(string(readme), "| `"+c.Code+"` |") {
			t.Errorf("docs/language.md does not list code %s", c.Code)
		}
	}
}
