package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// llmExec runs exec on testdata/llm_agent.yaml with a store in dir.
func llmExec(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("RUNNER_PATHS", "testdata/llm_agent.yaml")
	return runCLI(t, execArgs(dir, args...)...)
}

func TestExecScript(t *testing.T) {
	code, out, errOut := llmExec(t, t.TempDir(), "calc", "--script", "testdata/llm_script.yaml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var state map[string]any
	if err := json.Unmarshal([]byte(out), &state); err != nil || state["summary"].(map[string]any)["answer"] != 5.0 {
		t.Fatalf("state %s (%v)", out, err)
	}
	if n := len(state["turn_metrics"].([]any)); n != 3 {
		t.Errorf("%d turn metrics, want 3", n)
	}
}

// TestExecBudgetOverride lowers the agent's token budget from the
// environment: the run pauses for a human, who extends it.
func TestExecBudgetOverride(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RUNNER_BUDGET_MAX_TOKENS", "1500")
	code, out, errOut := llmExec(t, dir, "calc", "--script", "testdata/llm_script.yaml", "--thread", "b1")
	if code != exitPaused || !strings.Contains(errOut, "paused at summarize (budget): budget max_tokens exceeded: used 2320 of 1500") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = llmExec(t, dir, "calc", "--script", "testdata/llm_script.yaml", "--resume", "b1", "--value", `{"max_tokens": 5000}`)
	if code != exitCompleted || !strings.Contains(out, `"answer": 5`) {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	t.Setenv("RUNNER_BUDGET_ON_EXCEED", "fail")
	code, _, errOut = llmExec(t, dir, "calc", "--script", "testdata/llm_script.yaml")
	if code != exitFailed || !strings.Contains(errOut, "budget_exceeded") || !strings.Contains(errOut, "raise budget.max_tokens") {
		t.Fatalf("on_exceed fail: exit %d\n%s", code, errOut)
	}
}

func TestExecScriptErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("- node: ask\n  txt: hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no script for a scripted model", nil, "model tiny is scripted: give its replies with --script FILE"},
		{"unknown key", []string{"--script", bad}, bad + ": line 2: field txt not found in a scripted Reply"},
		{"missing file", []string{"--script", "nope.yaml"}, "nope.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := llmExec(t, t.TempDir(), append([]string{"calc"}, tc.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
}
