package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRequireGateShipped proves the shipped definitions' mutating tools
// gated for every agent and tenant (two are gated only under a condition
// on the call or the state: warnings), then removes the
// mutating-capability rule — the platform's, and the RRC agents' own with
// its reviewers: the proof fails, at create_entity's definition, in text
// and in GitHub annotations.
func TestRequireGateShipped(t *testing.T) {
	code, out, errOut := runCLI(t, append([]string{"validate", "--require-gate", "tool.mutating"}, shipped...)...)
	if code != 0 || strings.Contains(out, "error") || strings.Count(out, "warning: ") != 2 {
		t.Fatalf("shipped: exit %d, want 0 with two warnings\n%s%s", code, out, errOut)
	}

	dir := t.TempDir()
	for _, d := range shipped {
		if err := os.CopyFS(filepath.Join(dir, filepath.Base(d)), os.DirFS(d)); err != nil {
			t.Fatal(err)
		}
	}
	platform := filepath.Join(dir, "rules", "platform.yaml")
	src, err := os.ReadFile(platform)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(src), "\n---\n") // the first document holds the mutating-capability rule
	writeFile(t, platform, rest)
	// The RRC agents replace it with their own, with reviewers: the last
	// rule set of rules/rrc.yaml, rrc_reviewers.
	rrc := filepath.Join(dir, "rules", "rrc.yaml")
	if src, err = os.ReadFile(rrc); err != nil {
		t.Fatal(err)
	}
	writeFile(t, rrc, string(src[:strings.LastIndex(string(src), "\n---\n")+1]))
	agents := filepath.Join(dir, "agents", "rrc.yaml")
	if src, err = os.ReadFile(agents); err != nil {
		t.Fatal(err)
	}
	writeFile(t, agents, strings.ReplaceAll(string(src), ", rrc_reviewers]", "]"))
	tools := filepath.Join(dir, "pipelines", "orchestration", "tools.yaml")
	line := lineOf(t, tools, "  name: create_entity")
	paths := []string{filepath.Join(dir, "pipelines"), filepath.Join(dir, "agents"), filepath.Join(dir, "rules")}

	code, out, _ = runCLI(t, append([]string{"validate", "--require-gate", "tool.mutating"}, paths...)...)
	want := fmt.Sprintf("%s:%d:9: error: agent rule_32 can call tool create_entity (pipeline orchestration → node ", tools, line)
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("without the rule: exit %d, want 1 with\n%s\n%s", code, want, out)
	}
	code, out, _ = runCLI(t, append([]string{"validate", "--format", "github", "--require-gate", "tool.mutating"}, paths...)...)
	want = fmt.Sprintf("::error file=%s,line=%d,col=9,title=gate.missing::agent rule_32 can call tool create_entity", tools, line)
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("without the rule, --format github: exit %d, want 1 with\n%s\n%s", code, want, out)
	}
	if code, _, errOut := runCLI(t, append([]string{"validate", "--require-gate", "tool.mutatin"}, shipped...)...); code != 2 || !strings.Contains(errOut, `did you mean "mutating"`) {
		t.Errorf("a misspelt expression: exit %d, want 2\n%s", code, errOut)
	}
}

// lineOf is the line number of the first line of file that is text.
func lineOf(t *testing.T, file, text string) int {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(src), "\n") {
		if l == text {
			return i + 1
		}
	}
	t.Fatalf("%s has no line %q", file, text)
	return 0
}
