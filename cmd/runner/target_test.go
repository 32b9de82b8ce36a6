package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A file or a directory names what it defines: exec and graph take them.
func TestTargetPaths(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"exec a pipeline's directory", execArgs(dir, "pipelines/ops_actions", "--input", `{"user_input": "what is the status"}`), 0, `"mode": "dry_run"`},
		{"exec an agent's file", execArgs(dir, "agents/fraud_investigator.yaml", "--input", `{"transaction_id": "txn_1001"}`), 0, `"severity": "CRITICAL"`},
		{"graph a pipeline file", []string{"graph", "pipelines/ops_actions/pipeline.yaml"}, 0, "dry_run -->"},
		{"a file of several agents", execArgs(dir, "agents/rrc.yaml"), 2, "name the one to run instead of the path"},
		{"a file of no agent or pipeline", []string{"graph", "pipelines/ops_actions/tools.yaml"}, 2, "defines no agent and no pipeline"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want %d with %q\n%s%s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
}

// A file outside the project's paths is loaded with them.
func TestTargetOutsideProject(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hello.yaml")
	doc := `apiVersion: runner/v1
kind: Pipeline
metadata: {name: hello}
state: {greeting: {type: string, default: ""}}
start: greet
nodes:
  greet:
    type: set
    with: {greeting: '"hello"'}
    next: END
`
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir("../..")
	code, out, errOut := runCLI(t, "exec", "--store", "memory:", file)
	if code != 0 || !strings.Contains(out, `"greeting": "hello"`) {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

// The paths of a settings file are relative to its directory, whatever
// the working directory.
func TestConfigPathsRelativeToFile(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	settings := "paths: [" + filepath.Join(root, "pipelines") + ", " + filepath.Join(root, "agents") + ", " + filepath.Join(root, "rules") + ", local]\n"
	if err := os.WriteFile(filepath.Join(project, "runner.yaml"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(project, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // somewhere else
	code, out, errOut := runCLI(t, "graph", "--config", filepath.Join(project, "runner.yaml"), "ops_actions")
	if code != 0 || !strings.Contains(out, "dry_run") {
		t.Errorf("graph with --config from elsewhere: exit %d\n%s%s", code, out, errOut)
	}
}

// A run whose parallel branches both pause lists each interrupt with its
// ID; a resume keyed by one ID answers that one, and the other still waits.
func TestExecSeveralInterrupts(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../builtins/testdata/two_asks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "two.yaml"), string(src))
	t.Setenv("RUNNER_PATHS", filepath.Join(dir, "two.yaml"))
	db := "sqlite:" + filepath.Join(dir, "s.db")
	code, _, errOut := runCLI(t, "exec", "two_asks", "--store", db, "--thread", "tt")
	ids := regexp.MustCompile(`(?m)^  ([0-9a-f-]{36})  ask \(question\): (colour|size)\?$`).FindAllStringSubmatch(errOut, -1)
	if code != 3 || len(ids) != 2 || !strings.Contains(errOut, "2 interrupts wait for input") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	code, _, errOut = runCLI(t, "exec", "two_asks", "--store", db, "--resume", "tt", "--value", `{"`+ids[0][1]+`": "red"}`)
	if code != 3 || !strings.Contains(errOut, "size?") || strings.Contains(errOut, "colour?") {
		t.Fatalf("after one answer: exit %d\n%s", code, errOut)
	}
	code, out, errOut := runCLI(t, "exec", "two_asks", "--store", db, "--resume", "tt", "--value", `"large"`)
	if code != 0 || !strings.Contains(out, `"a": "red"`) || !strings.Contains(out, `"b": "large"`) {
		t.Fatalf("after both: exit %d\n%s%s", code, out, errOut)
	}
}

// threads fork --checkpoint without --to branches the thread itself: the
// new checkpoint's parent is the one replayed, and a resume replays from
// there.
func TestThreadsBranch(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "state.db")
	if code, _, errOut := runCLI(t, execArgs(dir, "ops_actions", "--thread", "b", "--input", `{"user_input": "restart nginx.service"}`)...); code != 3 {
		t.Fatalf("exec: exit %d %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "threads", "fork", "b", "--checkpoint", "2", "--store", db)
	if code != 0 || !strings.Contains(out, `"parent": 2`) || !strings.Contains(out, `"next": "retrieve"`) {
		t.Fatalf("branch: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, execArgs(dir, "ops_actions", "--resume", "b")...)
	if code != 3 || !strings.Contains(errOut, "paused at approve") {
		t.Fatalf("replay of the branch: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "threads", "fork", "b", "--store", db); code != 2 || !strings.Contains(errOut, "--checkpoint ID") {
		t.Errorf("fork without --checkpoint or --to: exit %d %s", code, errOut)
	}
}
