package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
)

// TestMCPEverything: the reference MCP server (npm's
// @modelcontextprotocol/server-everything), over stdio and over
// streamable HTTP, as a tool source: its tools listed with their hints,
// an error result reported as the call's error, its tools pinned and
// called (text, structured content, an image kept as a reference), and a
// tool whose description changed since it was pinned refused until it is
// pinned again.
func TestMCPEverything(t *testing.T) {
	suite := mcpSuite(t)
	main := filepath.Join(suite, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	for _, transport := range []string{"stdio", "streamable HTTP"} {
		t.Run(transport, func(t *testing.T) {
			reach := "command: node\nargs: [" + main + ", stdio]\n"
			if transport != "stdio" {
				reach = "url: " + everythingHTTP(t, main) + "\n"
			}
			dir := t.TempDir()
			file, config := filepath.Join(dir, "everything.yaml"), filepath.Join(dir, "runner.yaml")
			write(t, file, "apiVersion: runner/v1\nkind: MCPServer\nmetadata: {name: everything}\n"+reach+`tools:
  - {tool: echo, mutating: false}
  - {tool: get-sum, mutating: false}
  - {tool: get-tiny-image, mutating: false}
  - {tool: get-structured-content, mutating: false}
`)
			write(t, config, "paths: [everything.yaml]\n")
			cli := func(args ...string) (int, string, string) {
				t.Helper()
				return runCLI(t, append(args, "--config", config)...)
			}
			code, out, errOut := cli("mcp", "tools", "everything", "--format", "json")
			var rows []mcpToolRow
			_ = json.Unmarshal([]byte(out), &rows)
			echo := slices.IndexFunc(rows, func(r mcpToolRow) bool { return r.Tool == "echo" })
			if code != 0 || echo < 0 || rows[echo].Name != "echo" || rows[echo].Pin != "not pinned" ||
				strings.Join(rows[echo].Hints, ",") != "read-only,idempotent" {
				t.Fatalf("tools: exit %d %s%s", code, out, errOut)
			}
			code, _, errOut = cli("mcp", "call", "everything", "get-sum", "--args", `{"a": "one", "b": 2}`)
			if code != exitFailed || !strings.Contains(errOut, "FAILED: tool get-sum of MCP server everything:") {
				t.Errorf("an error result: exit %d %s", code, errOut)
			}
			if code, out, errOut := cli("mcp", "pin"); code != 0 || !strings.Contains(errOut, "everything: 4 tools pinned") {
				t.Fatalf("pin: exit %d %s%s", code, out, errOut)
			}
			for _, c := range []struct{ tool, args, want string }{
				{"echo", `{"message": "hi"}`, `"Echo: hi"`},
				{"get-sum", `{"a": 1, "b": 2}`, `"The sum of 1 and 2 is 3."`},
				{"get-structured-content", `{"location": "Chicago"}`, `"temperature":`},
				{"get-tiny-image", `{}`, `"mime_type": "image/png"`},
			} {
				if code, out, errOut := cli("mcp", "call", "everything", c.tool, "--args", c.args); code != 0 || !strings.Contains(out, c.want) {
					t.Errorf("%s: exit %d, %s%s; want %s", c.tool, code, out, errOut, c.want)
				}
			}
			repin(t, file, "echo", "Echoes back the input string (as pinned before an upgrade)")
			code, _, errOut = cli("mcp", "call", "everything", "echo", "--args", `{"message": "hi"}`)
			if code != exitFailed || !strings.Contains(errOut, `tool echo changed since it was pinned: its description is now "Echoes back the input string" `+
				`(pinned: "Echoes back the input string (as pinned before an upgrade)")`) {
				t.Errorf("a changed tool: exit %d %s", code, errOut)
			}
			if code, _, errOut := cli("mcp", "pin", "everything"); code != 0 || !strings.Contains(errOut, "echo changed: its description is now") {
				t.Errorf("pinning again: exit %d %s", code, errOut)
			}
			if code, out, _ := cli("mcp", "call", "everything", "echo", "--args", `{"message": "hi"}`); code != 0 || strings.TrimSpace(out) != `"Echo: hi"` {
				t.Errorf("the call once pinned again: exit %d %s", code, out)
			}
		})
	}
}

// repin rewrites tool's pin in file as if it had been pinned when the
// tool's description was description: a pin that reads back valid, of a
// tool the server no longer offers as it was.
func repin(t *testing.T, file, tool, description string) {
	t.Helper()
	c, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := dsl.Load(file)
	proj, _ := c.Check(docs)
	pin := proj.MCPServers["everything"].Pins[tool]
	src, _ := os.ReadFile(file)
	edited := strings.Replace(string(src), "description: "+pin.Description+"\n", "description: "+description+"\n", 1)
	edited = strings.Replace(edited, pin.SHA256, dsl.PinDigest(description, pin.Parameters), 1)
	write(t, file, edited)
}

// everythingHTTP starts the everything server over streamable HTTP and
// returns its endpoint.
func everythingHTTP(t *testing.T, main string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("node", main, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	up := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on port") {
				close(up)
				break
			}
		}
		for sc.Scan() { // keep reading: a full pipe would block the server
		}
	}()
	select {
	case <-up:
	case <-time.After(30 * time.Second):
		t.Fatal("the everything server did not start")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// TestMCPFilesystem: Elyra's project_files, the reference filesystem
// server, as shipped but for where its program is (the suite's copy, not
// npx's): its pin matches the server, and read_project_file reads a file
// of the directory runner runs in.
func TestMCPFilesystem(t *testing.T) {
	suite := mcpSuite(t)
	src, err := os.ReadFile("../../pipelines/elyra/tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(suite, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	local := strings.Replace(string(src), "command: npx\nargs: [-y, \"@modelcontextprotocol/server-filesystem@2026.8.31\", \".\"]",
		"command: node\nargs: ["+main+", \".\"]", 1)
	if local == string(src) {
		t.Fatal("project_files no longer runs the server with npx as this test expects")
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "tools.yaml"), local)
	write(t, filepath.Join(dir, "runner.yaml"), "paths: [tools.yaml]\n")
	code, out, errOut := runCLI(t, "mcp", "call", "project_files", "read_text_file", "--args", `{"path": "mcp_test.go", "head": 1}`,
		"--config", filepath.Join(dir, "runner.yaml"))
	if code != 0 || !strings.Contains(out, `"content": "package main"`) {
		t.Errorf("read_project_file: exit %d\n%s%s", code, out, errOut)
	}
}
