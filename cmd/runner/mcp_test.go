package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.Serve() // when a test starts this binary as an MCP server
	os.Exit(m.Run())
}

// mcpProject writes a project whose MCP server is this test binary
// serving mcptest's tools with opts, with the shipped rules, and returns
// its runner.yaml and the server's file.
func mcpProject(t *testing.T, opts string) (config, file string) {
	t.Helper()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := filepath.Abs("../../rules")
	file = filepath.Join(dir, "tools.yaml")
	src := `# The test's MCP server.
apiVersion: runner/v1
kind: MCPServer
metadata: {name: test}
command: ` + exe + `
env:
  ` + mcptest.Env + `: "` + opts + `"
  ` + mcptest.CountFile + `: ` + filepath.Join(dir, "count") + `
tools:
  - {tool: echo, mutating: false}
  - {include: ["co*"]}
# what follows stays
`
	config = filepath.Join(dir, "runner.yaml")
	write(t, file, src)
	write(t, config, "paths: [tools.yaml, "+rules+"]\n")
	return config, file
}

func write(t *testing.T, file, src string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMCPPin: pin records the selected tools in the server's own
// document and leaves the rest of the file alone; pinning again changes
// nothing; a server whose tool changed is reported, and the new pin taken.
func TestMCPPin(t *testing.T) {
	config, file := mcpProject(t, "")
	if code, out, errOut := runCLI(t, "mcp", "pin", "--config", config); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	pinned, _ := os.ReadFile(file)
	for _, want := range []string{"# The test's MCP server.\n", "  - {include: [\"co*\"]}\npins: # written by runner mcp pin\n", "    schema_sha256: ", "\n# what follows stays\n",
		"  count:\n    description: 'Counts its calls: appends the call''s idempotency key to a file.'\n",
		"  echo:\n    description: Echoes its text.\n    parameters:\n      properties:\n        text:\n          type: string\n      required:\n        - text\n      type: object\n    schema_sha256: "} {
		if !strings.Contains(string(pinned), want) {
			t.Errorf("the file lacks %q:\n%s", want, pinned)
		}
	}
	if strings.Contains(string(pinned), "change_echo") || strings.Contains(string(pinned), "crash") {
		t.Errorf("tools no entry selects were pinned:\n%s", pinned)
	}
	if code, out, errOut := runCLI(t, "validate", "--strict", "--config", config, file); code != 0 {
		t.Fatalf("the pinned file does not validate: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "mcp", "pin", "--config", config); code != 0 || !strings.Contains(errOut, "test: 2 tools pinned, none changed") {
		t.Errorf("pinning again: exit %d, %s", code, errOut)
	}
	again, _ := os.ReadFile(file)
	if string(again) != string(pinned) {
		t.Errorf("pinning again changed the file:\n%s", again)
	}
	write(t, file, strings.Replace(string(pinned), mcptest.Env+`: ""`, mcptest.Env+`: "changed"`, 1)) // the server now serves echo changed
	code, out, errOut := runCLI(t, "mcp", "call", "test", "echo", "--args", `{"text": "a"}`, "--config", config)
	if code != 1 || !strings.Contains(errOut, "tool echo changed since it was pinned: its input schema has /properties/text/type = \"integer\" (pinned: \"string\")") {
		t.Errorf("a call of the changed tool: exit %d, %s%s", code, out, errOut)
	}
	code, _, errOut = runCLI(t, "mcp", "pin", "test", "--config", config)
	if code != 0 || !strings.Contains(errOut, "echo changed: its input schema has /properties/text/type = \"integer\" (pinned: \"string\")") {
		t.Errorf("pinning the changed tool: exit %d, %s", code, errOut)
	}
	code, out, errOut = runCLI(t, "mcp", "call", "test", "echo", "--args", `{"text": 1}`, "--config", config)
	if code != 0 || strings.TrimSpace(out) != `"1"` {
		t.Errorf("a call once pinned again: exit %d, %s%s", code, out, errOut)
	}
}

// TestMCPToolsAndCall: tools lists what the server offers with the
// project's view of each; call goes through the call path — a tool not
// declared read-only waits for approval, and runs once approved.
func TestMCPToolsAndCall(t *testing.T) {
	config, file := mcpProject(t, "")
	if code, out, errOut := runCLI(t, "mcp", "pin", "--config", config); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runCLI(t, "mcp", "tools", "test", "--format", "json", "--config", config)
	var rows []struct{ Tool, Name, Pin string }
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s%s", code, err, out, errOut)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.Tool] = r.Name + "/" + r.Pin
	}
	if got["echo"] != "echo/pinned" || got["count"] != "count/pinned" || got["crash"] != "/-" {
		t.Errorf("tools: %v", got)
	}
	code, out, _ = runCLI(t, "mcp", "call", "test", "echo", "--args", `{"text": "hi"}`, "--config", config)
	if code != 0 || strings.TrimSpace(out) != `"hi"` {
		t.Errorf("echo: exit %d, %s", code, out)
	}
	count := filepath.Join(filepath.Dir(file), "count")
	code, _, errOut = runCLI(t, "mcp", "call", "test", "count", "--config", config)
	if keys, _ := mcptest.Counted(count); code != exitPaused || !strings.Contains(errOut, "rule platform:hitl_on_mcp_mutating holds the call") || len(keys) != 0 {
		t.Errorf("count without approval: exit %d, ran %d times, %s", code, len(keys), errOut)
	}
	code, out, errOut = runCLI(t, "mcp", "call", "test", "count", "--approve", "--config", config)
	if keys, _ := mcptest.Counted(count); code != 0 || strings.TrimSpace(out) != `"call 1"` || len(keys) != 1 {
		t.Errorf("count approved: exit %d, ran %d times, %s%s", code, len(keys), out, errOut)
	}
	code, _, errOut = runCLI(t, "mcp", "call", "test", "crash", "--config", config)
	if code != exitUsage || !strings.Contains(errOut, "tool crash of MCP server test is not selected") {
		t.Errorf("a tool the project does not select: exit %d, %s", code, errOut)
	}
}

// TestMCPToolsInTests: a Test mocks an MCP tool as any tool, and no
// server is started (its command does not even exist); one it does not
// mock is refused, unless --live.
func TestMCPToolsInTests(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "defs.yaml"), `apiVersion: runner/v1
kind: MCPServer
metadata: {name: nowhere}
command: /nonexistent/mcp-server
tools: [{tool: read_file, mutating: false}, {tool: list, mutating: false}]
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: p}
input: {tool: {type: string}}
state:
  tool: {type: string}
  out: {type: any}
start: a
nodes:
  a:
    type: tool
    with: {select: state.tool, tools: [read_file, list], args: {path: '"README.md"'}, output: out, fatal: true}
    next: END
---
apiVersion: runner/v1
kind: Test
metadata: {name: with_mock}
pipeline: p
input: {tool: read_file}
mocks:
  read_file: {result: "# README"}
expect:
  status: completed
  tool_runs: {read_file: 1}
  assert: ['state.out == "# README"']
---
apiVersion: runner/v1
kind: Test
metadata: {name: without_mock}
pipeline: p
input: {tool: list}
expect: {status: completed}
`)
	code, out, errOut := runCLI(t, "test", "--run", "with_mock", dir)
	if code != 0 {
		t.Errorf("the mocked Test: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "test", "--run", "without_mock", dir)
	if code != 1 || !strings.Contains(out+errOut, "mcp tool list was called, but the Test does not mock it") {
		t.Errorf("the unmocked Test: exit %d\n%s%s", code, out, errOut)
	}
}
