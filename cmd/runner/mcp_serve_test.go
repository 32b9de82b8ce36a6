package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/builtins/mcptest"
)

// servedProject is an assistant that counts an item with mcptest's
// count, an MCP tool not declared read-only: the platform gates it.
const servedProject = `
---
apiVersion: runner/v1
kind: Pipeline
metadata: {name: counter, description: Counts an item once a person approves.}
input:
  item: {type: string, required: true}
state:
  item: {type: string}
  said: {type: any}
start: count
nodes:
  count:
    type: tool
    with: {tool: count, args: {item: state.item}, output: said}
    next: END
output:
  said: state.said
`

// TestMCPServeStdio: runner mcp serve is an MCP server on stdio whose
// tools are the project's assistants; an MCP client lists them, runs one
// whose gated call asks for approval by a form, and the approved call
// runs once — for a client of the newest protocol (input requests) and
// for an older one (elicitation).
func TestMCPServeStdio(t *testing.T) {
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	for _, protocol := range []string{"", "2025-11-25"} {
		t.Run("protocol "+protocol, func(t *testing.T) {
			config, file := mcpProject(t, "")
			if code, out, errOut := runCLI(t, "mcp", "pin", "--config", config); code != 0 {
				t.Fatalf("pin: exit %d\n%s%s", code, out, errOut)
			}
			src, _ := os.ReadFile(file)
			write(t, file, string(src)+servedProject)
			cmd := exec.Command(bin, "mcp", "serve", "--config", config, "--store", "sqlite:"+filepath.Join(t.TempDir(), "state.db"))
			cmd.Stderr = os.Stderr
			var asked []string
			c := mcp.NewClient(&mcp.Implementation{Name: "desktop"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}, nil
				}})
			cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "counter" {
				t.Fatalf("tools: %v %+v", err, tools)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "counter", Arguments: map[string]any{"item": "apples"}})
			if err != nil {
				t.Fatal(err)
			}
			out, _ := json.Marshal(res.StructuredContent)
			keys, _ := mcptest.Counted(filepath.Join(filepath.Dir(file), "count"))
			if res.IsError || string(out) != `{"said":"call 1"}` || len(asked) != 1 || len(keys) != 1 {
				t.Errorf("result %s (%+v), asked %q, the tool ran %d times", out, res, asked, len(keys))
			}
		})
	}
}

// TestMCPEnabled: runner serve mounts /mcp unless runner.yaml or the
// environment turns it off.
func TestMCPEnabled(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, env string
		want            bool
	}{
		{"default", "paths: [x]\n", "", true},
		{"off in runner.yaml", "mcp: {enabled: false}\n", "", false},
		{"off in the environment", "paths: [x]\n", "false", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "runner.yaml")
			write(t, conf, tc.yaml)
			if tc.env != "" {
				t.Setenv("RUNNER_MCP_ENABLED", tc.env)
			}
			cmd := &cobra.Command{}
			cmd.Flags().String("config", conf, "")
			if cfg, err := loadConfig(cmd); err != nil || cfg.MCP.Enabled != tc.want {
				t.Errorf("MCP.Enabled = %v, %v; want %v", cfg.MCP.Enabled, err, tc.want)
			}
		})
	}
}
