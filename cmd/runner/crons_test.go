package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestCronsCommands: crons create checks the schedule and the agent,
// list shows what it made, delete removes it.
func TestCronsCommands(t *testing.T) {
	defs, _ := filepath.Abs("testdata/contract.yaml")
	t.Setenv("RUNNER_PATHS", defs)
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--schedule", "0 25 * * *"}, "above maximum (23)"},
		{[]string{"--schedule", "@daily", "--timezone", "Mars/Olympus"}, "not an IANA time zone"},
		{[]string{"--schedule", "@daily", "--input", "[1]"}, "--input must be a JSON object"},
	} {
		code, _, errOut := runCLI(t, append([]string{"crons", "create", "contract"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("create %v: exit %d %s, want 2 saying %q", tc.args, code, errOut, tc.want)
		}
	}
	if code, _, errOut := runCLI(t, "crons", "create", "contrct", "--schedule", "@daily"); code != 2 || !strings.Contains(errOut, `did you mean "contract"`) {
		t.Errorf("create of an unknown agent: exit %d %s", code, errOut)
	}
	code, out, errOut := runCLI(t, "crons", "create", "contract", "--schedule", "0 18 * * 1-5", "--timezone", "Europe/Paris",
		"--input", `{"mode": "done"}`, "--keep")
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 36 {
		t.Fatalf("create: exit %d %q %s", code, out, errOut)
	}
	_, out, _ = runCLI(t, "crons", "list")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], id+"  contract") ||
		!strings.Contains(lines[1], "Europe/Paris") {
		t.Errorf("list:\n%s", out)
	}
	_, out, _ = runCLI(t, "crons", "list", "--format", "json")
	var list []struct {
		ID             string         `json:"id"`
		OnRunCompleted string         `json:"on_run_completed"`
		Payload        map[string]any `json:"payload"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0].ID != id || list[0].OnRunCompleted != "keep" ||
		list[0].Payload["input"] == nil {
		t.Errorf("list --format json: %v\n%s", err, out)
	}
	if _, out, _ := runCLI(t, "crons", "list", "--tenant", "other", "--format", "json"); out != "[]\n" {
		t.Errorf("another tenant's list: %s", out)
	}
	if code, _, errOut := runCLI(t, "crons", "delete", id); code != 0 {
		t.Errorf("delete: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "crons", "delete", id); code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("second delete: exit %d %s, want 1, not found", code, errOut)
	}
}
