package main

import (
	"os"
	"path/filepath"
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
