package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/runner-dev/runner/builtins/mcptest"
)

// mcpSuite is the folder of the MCP software runner is tested against
// (builtins/mcptest: npm ci there installs it; .ci/run does).
func mcpSuite(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../builtins/mcptest")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the MCP suite is not installed: run npm ci in builtins/mcptest")
		}
		t.Skip("the MCP suite is not installed: run npm ci in builtins/mcptest to run it")
	}
	return dir
}

// servedCounter writes a project serving the counter assistant (its call
// of mcptest's count gated by the platform) and returns its runner.yaml
// and the file count writes its calls to.
func servedCounter(t *testing.T) (config, count string) {
	t.Helper()
	config, file := mcpProject(t, "")
	if code, out, errOut := runCLI(t, "mcp", "pin", "--config", config); code != 0 {
		t.Fatalf("pin: exit %d\n%s%s", code, out, errOut)
	}
	src, _ := os.ReadFile(file)
	write(t, file, string(src)+servedProject)
	return config, filepath.Join(filepath.Dir(file), "count")
}

// TestMCPTypeScriptClient: the TypeScript SDK's client, unchanged, uses
// runner as an MCP server — runner serve's /mcp and runner mcp serve:
// it lists the assistants, runs one, continues its thread, and answers
// each approval through elicitation; each approved call runs once, and a
// client that cannot answer is told what the thread waits on.
func TestMCPTypeScriptClient(t *testing.T) {
	suite := mcpSuite(t)
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"serve /mcp", "mcp serve"} {
		t.Run(mode, func(t *testing.T) {
			config, count := servedCounter(t)
			node := exec.Command("node", "client.mjs")
			node.Dir = suite
			node.Env = append(os.Environ(), "TOOL=counter", "ITEM=apples")
			if mode == "serve /mcp" {
				_, base := startServe(t, bin, "[]", "sk-mcp", "--config", config)
				node.Env = append(node.Env, "RUNNER_URL="+base, "RUNNER_KEY=sk-mcp")
			} else {
				args, _ := json.Marshal([]string{"mcp", "serve", "--config", config, "--store", "sqlite:" + filepath.Join(t.TempDir(), "state.db")})
				node.Env = append(node.Env, "RUNNER_BIN="+bin, "RUNNER_ARGS="+string(args))
			}
			node.Stderr = os.Stderr
			out, err := node.Output()
			if err != nil {
				t.Fatalf("client.mjs: %v\n%s", err, out)
			}
			var got struct {
				Tools []struct {
					Name  string
					Input struct{ Required []string }
				}
				Asked                     []struct{ Message string }
				First, Second, Unanswered struct {
					Meta       map[string]any `json:"_meta"`
					Structured map[string]any `json:"structuredContent"`
				}
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			keys, _ := mcptest.Counted(count)
			thread := got.First.Meta["dev.runner/thread_id"]
			switch {
			case len(got.Tools) != 1 || got.Tools[0].Name != "counter" || len(got.Tools[0].Input.Required) != 1:
				t.Errorf("tools: %+v", got.Tools)
			case len(got.Asked) != 2 || got.Asked[0].Message != "Call count, an MCP tool not declared read-only, with {\"item\":\"apples\"}?":
				t.Errorf("asked: %+v", got.Asked)
			case got.First.Structured["said"] != "call 1" || got.Second.Structured["said"] != "call 2":
				t.Errorf("results: %+v, %+v", got.First, got.Second)
			case thread == nil || got.Second.Meta["dev.runner/thread_id"] != thread:
				t.Errorf("the second call did not continue thread %v: %+v", thread, got.Second.Meta)
			case got.Unanswered.Structured["status"] != "paused":
				t.Errorf("the client without forms: %+v", got.Unanswered)
			case len(keys) != 2:
				t.Errorf("count ran %d times (%v), want once for each approval", len(keys), keys)
			}
		})
	}
}
