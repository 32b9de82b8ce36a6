package main

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExecOutputContract: stdout carries the declared output alone, and
// only on success, by default; under --output json one report whose keys
// do not depend on the exit code. The command stderr offers next (a resume,
// a completed input) works when pasted.
func TestExecOutputContract(t *testing.T) {
	t.Setenv("RUNNER_PATHS", "testdata/contract.yaml")
	db := "sqlite:" + filepath.Join(t.TempDir(), "state.db")
	cases := []struct {
		name   string
		args   []string
		code   int
		status string
		stderr string // in both modes
		next   string // the prefix of the command offered next, "" for none
	}{
		{"completed", []string{"--input", `{"mode": "done"}`}, exitCompleted, "completed", "thread ", ""},
		{"failed", []string{"--input", `{"mode": "fail"}`}, exitFailed, "failed",
			"runner: node_error: node broken failed", "runner exec contract --resume "},
		{"refused", nil, exitUsage, "refused",
			`input field "mode" is required`, `runner exec contract --input '{"mode":"done"}' --store ` + db},
		{"paused", []string{"--input", `{"mode": "ask"}`}, exitPaused, "interrupted",
			"paused at ask (question): Go on?", "runner exec contract --resume "},
	}
	var keys [][]string
	for _, c := range cases {
		for _, format := range []string{"value", "json"} {
			t.Run(c.name+"/"+format, func(t *testing.T) {
				args := append([]string{"exec", "contract", "--store", db, "--output", format}, c.args...)
				code, out, errOut := runCLI(t, args...)
				if code != c.code || !strings.Contains(errOut, c.stderr) {
					t.Fatalf("exit %d, want %d with %q on stderr\n%s%s", code, c.code, c.stderr, out, errOut)
				}
				next := offered(errOut)
				if !strings.HasPrefix(next, c.next) || (c.next == "") != (next == "") {
					t.Errorf("stderr offers %q, want a command starting %q", next, c.next)
				}
				if format == "value" {
					want := ""
					if code == exitCompleted {
						want = "{\n  \"answer\": null,\n  \"mode\": \"done\"\n}\n"
					}
					if out != want {
						t.Errorf("stdout %q, want %q", out, want)
					}
					return
				}
				var rep map[string]any
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
				}
				keys = append(keys, slices.Sorted(maps.Keys(rep)))
				if rep["status"] != c.status || (rep["next"] != nil) != (c.next != "") || (c.next != "" && rep["next"] != next) {
					t.Errorf("report %s, want status %s and next %q", out, c.status, next)
				}
				if (rep["thread"] == nil) != (code == exitUsage) || (rep["error"] == nil) != (code == exitCompleted || code == exitPaused) ||
					(rep["interrupt"] == nil) != (code != exitPaused) {
					t.Errorf("report %s: thread, error and interrupt do not fit exit %d", out, code)
				}
			})
		}
	}
	for _, k := range keys[1:] {
		if !slices.Equal(k, keys[0]) {
			t.Errorf("the report's keys vary with the exit code: %v and %v", keys[0], k)
		}
	}
	if want := []string{"error", "interrupt", "next", "output", "status", "thread", "usage"}; !slices.Equal(keys[0], want) {
		t.Errorf("the report's keys are %v, want %v", keys[0], want)
	}
}

// TestExecNextCommandsWork pastes the command a refused and a paused run
// offer: each runs.
func TestExecNextCommandsWork(t *testing.T) {
	t.Setenv("RUNNER_PATHS", "testdata/contract.yaml")
	db := "sqlite:" + filepath.Join(t.TempDir(), "state.db")
	for _, c := range []struct {
		name string
		args []string
		want int // the exit code of the command offered
	}{
		{"refused", []string{"exec", "contract", "--store", db}, exitCompleted},
		{"paused", []string{"exec", "contract", "--store", db, "--input", `{"mode": "ask"}`}, exitCompleted},
	} {
		_, _, errOut := runCLI(t, c.args...)
		next := shellWords(t, offered(errOut))
		if len(next) < 2 || next[0] != "runner" {
			t.Fatalf("%s: no command offered:\n%s", c.name, errOut)
		}
		if code, out, errOut := runCLI(t, next[1:]...); code != c.want {
			t.Errorf("%s: the command offered, %q, exits %d, want %d\n%s%s", c.name, next, code, c.want, out, errOut)
		}
	}
}

// offered is the command a stderr offers to run next ("" for none).
func offered(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		for _, label := range []string{"resume with: ", "run it with: "} {
			if cmd, ok := strings.CutPrefix(l, label); ok {
				return cmd
			}
		}
	}
	return ""
}

// shellWords splits a command line into words as a POSIX shell does
// with plain words, single quotes and backslashes.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted, escaped := false, false, false
	for _, r := range line {
		switch {
		case escaped:
			w.WriteRune(r)
			escaped = false
		case r == '\\' && !quoted:
			escaped, inWord = true, true
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
			}
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted || escaped {
		t.Fatalf("%q: a quote or an escape is not closed", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
