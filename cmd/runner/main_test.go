package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// runCLI runs the command line in-process and returns exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

var shipped = []string{"../../pipelines", "../../agents", "../../rules"}

func TestValidateShipped(t *testing.T) {
	code, out, errOut := runCLI(t, append([]string{"validate", "--strict"}, shipped...)...)
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s%s", code, out, errOut)
	}
}

func TestValidateText(t *testing.T) {
	code, out, _ := runCLI(t, "validate", "testdata/invalid.yaml")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"testdata/invalid.yaml:11:21: error: state has no field \"consecutive_faild_resolves\"; did you mean \"consecutive_failed_resolves\"?\n" +
			"          - when: state.consecutive_faild_resolves >= 3\n" +
			"                        ^\n",
		`testdata/invalid.yaml:13:13: error: route to unknown node "ENDD"; did you mean "END"?`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateJSON(t *testing.T) {
	code, out, _ := runCLI(t, "validate", "--format", "json", "testdata/invalid.yaml")
	var got struct {
		Diagnostics []struct {
			Pos struct {
				File      string
				Line, Col int
			}
			End *struct {
				Line, Col int
			}
			Severity string
			Code     string
			Message  string
			Hint     string
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if code != 1 || len(got.Diagnostics) != 2 {
		t.Fatalf("exit %d with %d diagnostics, want 1 with 2", code, len(got.Diagnostics))
	}
	d := got.Diagnostics[0]
	if d.Pos.Line != 11 || d.Pos.Col != 21 || d.Severity != "error" || d.Code != "expr.unknown-field" || d.Hint == "" {
		t.Errorf("first diagnostic = %+v", d)
	}
	d = got.Diagnostics[1] // route to unknown node "ENDD": a plain scalar, with its extent
	if d.Code != "ref.unknown" || d.End == nil || d.End.Line != 13 || d.End.Col != d.Pos.Col+len("ENDD") {
		t.Errorf("second diagnostic = %+v", d)
	}
}

func TestValidateGitHub(t *testing.T) {
	_, out, _ := runCLI(t, "validate", "--format", "github", "testdata/invalid.yaml")
	want := "::error file=testdata/invalid.yaml,line=11,col=21,title=expr.unknown-field::state has no field"
	if !strings.HasPrefix(out, want) {
		t.Errorf("output = %q, want prefix %q", out, want)
	}
}

func TestValidateExitCodes(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"warnings pass", []string{"validate", "testdata/warn_only.yaml"}, 0},
		{"strict fails on warnings", []string{"validate", "--strict", "testdata/warn_only.yaml"}, 1},
		{"invalid", []string{"validate", "testdata/invalid.yaml"}, 1},
		{"missing path", []string{"validate", "testdata/nope.yaml"}, 2},
		{"bad format", []string{"validate", "--format", "xml", "testdata/warn_only.yaml"}, 2},
		{"unknown flag", []string{"validate", "--strikt"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, out, errOut := runCLI(t, c.args...); got != c.want {
				t.Errorf("exit %d, want %d\n%s%s", got, c.want, out, errOut)
			}
		})
	}
}

// TestConfigPaths checks that runner.yaml, then RUNNER_PATHS, choose what
// validate loads when no path is given.
func TestConfigPaths(t *testing.T) {
	dir := t.TempDir()
	abs, _ := filepath.Abs("testdata")
	writeFile(t, filepath.Join(dir, "runner.yaml"), "paths: ["+filepath.Join(abs, "warn_only.yaml")+"]\n")
	t.Chdir(dir)
	if code, out, _ := runCLI(t, "validate", "--strict"); code != 1 || !strings.Contains(out, "warn_only.yaml") {
		t.Errorf("runner.yaml paths: exit %d, output %q", code, out)
	}
	t.Setenv("RUNNER_PATHS", filepath.Join(abs, "invalid.yaml"))
	if code, out, _ := runCLI(t, "validate"); code != 1 || !strings.Contains(out, "invalid.yaml:11:21") {
		t.Errorf("RUNNER_PATHS: exit %d, output %q", code, out)
	}
}

func TestValidateNothing(t *testing.T) {
	t.Chdir(t.TempDir())
	if code, _, errOut := runCLI(t, "validate"); code != 2 || !strings.Contains(errOut, "no definitions") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestGraph(t *testing.T) {
	t.Chdir("../..")
	code, out, errOut := runCLI(t, "graph", "fraud_investigator")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"START([START]) --> planner",
		`planner -- "state.next_action == #quot;COMPLETE#quot; || state.step_count >= state.max_steps" --> completion`,
		"planner --> tool_executor",
		"record --> END",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, out)
		}
	}
	_, dot, _ := runCLI(t, "graph", "--format", "dot", "fraud_investigation")
	if !strings.Contains(dot, `"planner" -> "completion" [label="state.next_action == \"COMPLETE\" || state.step_count >= state.max_steps"];`) {
		t.Errorf("dot lacks the labelled route:\n%s", dot)
	}
	if code, _, _ := runCLI(t, "graph", "nope"); code != 2 {
		t.Errorf("unknown name: exit %d, want 2", code)
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNewcomerMistakes: what trips a newcomer gets a clear refusal (exit
// 2), not a silent success or a side effect.
func TestNewcomerMistakes(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo", "state.db")
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"version", []string{"--version"}, 0, "runner version"},
		{"-v is not the version", []string{"-v"}, 2, "-v is --verbose (runner exec -v, runner test -v); the version is runner --version"},
		{"-v is verbose", []string{"exec", "-v", "--store", "memory:", "counter"}, 0, "  bump  "},
		{"threads on a mistyped store", []string{"threads", "list", "--store", "sqlite:" + missing}, 0,
			"no threads yet: store sqlite:" + missing + " does not exist (runner exec creates it; if the runs used another, give it with --store)"},
		{"a thread of a mistyped store", []string{"threads", "show", "t1", "--store", "sqlite:" + missing}, 1, "no threads yet: store sqlite:"},
		{"a test filter that matches nothing", []string{"test", "--run", "zzz", "testdata/failing_test.yaml"}, 2, `no Test name contains "zzz"`},
		{"--value without --resume", []string{"exec", "--store", "memory:", "counter", "--value", "{}"}, 2, "go with --resume"},
	}
	t.Setenv("RUNNER_PATHS", "testdata/failing_test.yaml")
	for _, c := range cases {
		code, out, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", c.name, code, c.code, c.want, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Errorf("threads list created the mistyped store's directory (%v)", err)
	}
}

// TestValidateDirSkipsSettings: a project directory's runner.yaml holds
// settings, not documents.
func TestValidateDirSkipsSettings(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "runner.yaml"), "paths: [pipelines]\n")
	src, err := os.ReadFile("testdata/failing_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "pipelines"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "pipelines", "p.yaml"), string(src))
	if code, out, errOut := runCLI(t, "validate", dir); code != 0 {
		t.Errorf("validate DIR: exit %d\n%s%s", code, out, errOut)
	}
}

// TestValidateNeverEchoesASecret: a key pasted where its variable's name
// belongs appears nowhere in validate's output, source line included.
func TestValidateNeverEchoesASecret(t *testing.T) {
	file := filepath.Join(t.TempDir(), "m.yaml")
	writeFile(t, file, "apiVersion: runner/v1\nkind: Model\nmetadata: {name: m}\nprovider: openai\napi_key_env: sk-proj-Zq81secret\n")
	for _, format := range []string{"text", "json", "github"} {
		code, out, errOut := runCLI(t, "validate", "--format", format, file)
		if code != 1 || strings.Contains(out+errOut, "Zq81secret") || !strings.Contains(out+errOut, "schema.secret") && format != "text" {
			t.Errorf("%s: exit %d, output shows the secret or lacks its code:\n%s%s", format, code, out, errOut)
		}
	}
}

// TestProfiles: RUNNER_CPUPROFILE and RUNNER_MEMPROFILE have a command
// write its CPU and allocation profiles (pprof's gzipped format).
func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	t.Setenv(cpuProfileEnv, cpu)
	t.Setenv(memProfileEnv, mem)
	if code, out, errOut := runCLI(t, append([]string{"validate"}, shipped...)...); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, path := range []string{cpu, mem} {
		raw, err := os.ReadFile(path)
		if err != nil || len(raw) < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
			t.Errorf("%s: %d bytes, %v; want a gzipped profile", path, len(raw), err)
		}
	}
}

// TestSetGC checks that a command's GC percent applies only while the
// user has not set GOGC (serve's is checked in TestServeTelemetry).
func TestSetGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, c := range []struct {
		gogc string
		want int
	}{{"", oneShotGC}, {"100", 100}} {
		t.Setenv("GOGC", c.gogc)
		debug.SetGCPercent(100)
		setGC(oneShotGC)
		if got := debug.SetGCPercent(100); got != c.want {
			t.Errorf("GOGC=%q: GC percent %d, want %d", c.gogc, got, c.want)
		}
	}
}
