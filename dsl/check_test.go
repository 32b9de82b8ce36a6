package dsl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
)

// want is one expected diagnostic, written in a case file as a comment
// (a regular expression, with \" for a quote):
//
//	# ERROR "regexp"        on the line it stands on
//	# WARNING:17 "regexp"   ... at column 17
//	# ERROR@-2:9 "regexp"   two lines up (for lines inside block scalars)
//
// The regular expression is written as is, except that \" stands for a
// quote: \( matches a parenthesis.
type want struct {
	sev  dsl.Severity
	line int
	col  int // 0: any column
	re   *regexp.Regexp
}

var annotation = regexp.MustCompile(`# (ERROR|WARNING)(?:@([+-]\d+))?(?::(\d+))? "((?:[^"\\]|\\.)*)"`)

func readWants(t *testing.T, file string) []want {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var ws []want
	for i, line := range strings.Split(string(src), "\n") {
		for _, m := range annotation.FindAllStringSubmatch(line, -1) {
			w := want{sev: dsl.Severity(strings.ToLower(m[1])), line: i + 1}
			if m[2] != "" {
				off, _ := strconv.Atoi(m[2])
				w.line += off
			}
			if m[3] != "" {
				w.col, _ = strconv.Atoi(m[3])
			}
			pat := strings.ReplaceAll(m[4], `\"`, `"`)
			re, err := regexp.Compile(pat)
			if err != nil {
				t.Fatalf("%s:%d: the expected diagnostic is not a regular expression: %v", file, i+1, err)
			}
			w.re = re
			ws = append(ws, w)
		}
	}
	return ws
}

func (w want) matches(d dsl.Diagnostic) bool {
	return d.Severity == w.sev && d.Pos.Line == w.line && (w.col == 0 || d.Pos.Col == w.col) &&
		w.re.MatchString(d.Message+"; "+d.Hint)
}

func newChecker(t testing.TB) *dsl.Checker {
	t.Helper()
	c, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestInvalid checks every case under testdata/invalid: each diagnostic
// must be announced on its line, and each announcement must be met.
func TestInvalid(t *testing.T) {
	c := newChecker(t)
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(files) < 40 {
		t.Fatalf("got %d invalid cases, want at least 40", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			wants := readWants(t, file)
			if len(wants) == 0 {
				t.Fatal("case announces no diagnostic")
			}
			docs, diags := dsl.Load(file)
			_, more := c.Check(docs)
			diags = append(diags, more...)
			met := make([]bool, len(wants))
			for _, d := range diags {
				found := false
				for i, w := range wants {
					if w.matches(d) {
						met[i], found = true, true
					}
				}
				if !found {
					t.Errorf("unexpected diagnostic %s", d.Error())
				}
			}
			for i, w := range wants {
				if !met[i] {
					t.Errorf("%s:%d:%d: missing %s matching %q; got:\n%s", file, w.line, w.col, w.sev, w.re, list(diags))
				}
			}
		})
	}
}

func list(ds dsl.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "\t%s\n", d.Error())
	}
	return b.String()
}

// TestDefaultIntegers: a YAML integer is an int64, exactly, even past
// the 53 bits a float64 holds.
func TestDefaultIntegers(t *testing.T) {
	src := `apiVersion: runner/v1
kind: Pipeline
metadata: {name: p}
state:
  big: {type: integer, default: 9007199254740993}
  small: {type: number, default: 2}
  half: {type: number, default: 0.5}
start: a
nodes:
  a: {type: noop, next: END}
`
	docs, diags := dsl.Parse("p.yaml", []byte(src))
	proj, more := newChecker(t).Check(docs)
	if diags = append(diags, more...); diags.HasErrors(false) {
		t.Fatal(diags.Error())
	}
	want := map[string]any{"big": int64(9007199254740993), "small": int64(2), "half": 0.5}
	for _, f := range proj.Pipelines["p"].Fields {
		if f.Default != want[f.Name] {
			t.Errorf("default of %s = %#v, want %#v", f.Name, f.Default, want[f.Name])
		}
	}
}

// notifySource routes a gate's approval events to the hooks reviewers
// and a misspelt one, and an agent's events to payments.
const notifySource = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: p}
notify: [audit]
state:
  messages: {type: array, reducer: messages}
start: ask
nodes:
  ask: {type: llm, next: END}
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: r}
rules:
  - key: r:gate
    on: before_tool_call
    when: tool.mutating
    do:
      require_hitl:
        checkpoint_type: mutation
        notify: [reviewers, revewers]
---
apiVersion: runner/v1
kind: Agent
metadata: {name: a}
pipeline: p
model: m
rules: [r]
notify: [payments, audit]
---
apiVersion: runner/v1
kind: Model
metadata: {name: m}
provider: scripted
`

// TestCheckHooks: a notify: entry that names no webhook of the settings
// is an error at its line:col, with a did-you-mean; the compiled graph
// holds the pipeline's and the agent's hooks, and the gate its own.
func TestCheckHooks(t *testing.T) {
	c := newChecker(t)
	docs, diags := dsl.Parse("notify.yaml", []byte(notifySource))
	proj, more := c.Check(docs)
	if all := append(diags, more...); all.HasErrors(false) {
		t.Fatalf("definitions: %v", all)
	}
	got := proj.CheckHooks([]string{"reviewers", "payments", "audit"})
	if len(got) != 1 || got[0].Pos.Line != 21 || got[0].Pos.Col != 29 || got[0].Code != dsl.CodeRefUnknown ||
		!strings.Contains(got[0].Message, `notify names webhook "revewers"`) || !strings.Contains(got[0].Hint, "reviewers") {
		t.Errorf("CheckHooks = %v", got)
	}
	if got := proj.CheckHooks([]string{"reviewers", "revewers", "payments", "audit"}); len(got) != 0 {
		t.Errorf("CheckHooks of defined hooks = %v", got)
	}
	a := proj.Agents["a"]
	g, err := c.Compile(proj, a.Pipeline, dsl.CompileOptions{Agent: a, Provider: builtins.ScriptedProviders(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Notify, []string{"audit", "payments"}) {
		t.Errorf("graph notify = %v, want audit, payments", g.Notify)
	}
	for _, r := range g.Rules {
		if r.Key == "r:gate" && !slices.Equal(r.Action.HITL.Notify, []string{"reviewers", "revewers"}) {
			t.Errorf("gate notify = %v", r.Action.HITL.Notify)
		}
	}
}
