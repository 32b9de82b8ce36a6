package main

import (
	"os"
	"strings"
	"testing"
)

// TestInit writes a project into an empty directory and runs the next
// steps init prints, as pasted: the Test passes and the agent runs.
func TestInit(t *testing.T) {
	t.Chdir(t.TempDir())
	code, out, errOut := runCLI(t, "init", "proj")
	steps, found := strings.CutPrefix(out[strings.Index(out, "next:\n"):], "next:\n")
	if code != 0 || !found || !strings.HasPrefix(out, "wrote agents/hello.yaml, agents/hello_test.yaml, runner.yaml, scripts/hello.json and .gitignore in proj\n") {
		t.Fatalf("init: exit %d\n%s%s", code, out, errOut)
	}
	var ran []string
	for _, line := range strings.Split(strings.TrimSpace(steps), "\n") {
		words := shellWords(t, strings.TrimSpace(line))
		if words[0] == "cd" {
			t.Chdir(words[1])
			continue
		}
		code, out, errOut := runCLI(t, words[1:]...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", line, code, out, errOut)
		}
		ran = append(ran, out)
	}
	if len(ran) != 2 || !strings.Contains(ran[0], "1 passed, 0 failed") || ran[1] != "{\n  \"greeting\": \"Hello, Ada! Welcome aboard.\"\n}\n" {
		t.Errorf("the steps printed %q", ran)
	}
	if code, out, errOut := runCLI(t, "validate", "--strict"); code != 0 {
		t.Errorf("validate --strict: exit %d\n%s%s", code, out, errOut)
	}
	if data, _ := os.ReadFile(".gitignore"); string(data) != ".runner/\n" {
		t.Errorf(".gitignore = %q", data)
	}
}

// TestInitRefusesToOverwrite: init writes nothing where one of its files
// exists and says which; the command it offers overwrites them. An
// existing .gitignore is added to.
func TestInitRefusesToOverwrite(t *testing.T) {
	t.Chdir(t.TempDir())
	writeFile(t, "runner.yaml", "paths: [mine]\n")
	writeFile(t, ".gitignore", "node_modules/")
	code, out, errOut := runCLI(t, "init")
	want := "runner: runner.yaml already exists in .; nothing was written (to overwrite: runner init --force)\n"
	if code != 2 || errOut != want || out != "" {
		t.Fatalf("init over runner.yaml: exit %d, stderr %q, want 2 and %q", code, errOut, want)
	}
	if _, err := os.Stat("agents"); err == nil {
		t.Errorf("a refused init wrote agents/")
	}
	for range 2 {
		if code, out, errOut := runCLI(t, "init", "--force"); code != 0 {
			t.Fatalf("init --force: exit %d\n%s%s", code, out, errOut)
		}
	}
	if data, _ := os.ReadFile("runner.yaml"); !strings.Contains(string(data), "paths: [agents]") {
		t.Errorf("runner.yaml not overwritten:\n%s", data)
	}
	if data, _ := os.ReadFile(".gitignore"); string(data) != "node_modules/\n.runner/\n" {
		t.Errorf(".gitignore = %q, want the line added once", data)
	}
}
