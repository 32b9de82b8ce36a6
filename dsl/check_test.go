package dsl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
