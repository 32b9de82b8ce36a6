package builtins_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runner-dev/runner/builtins/mcptest"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// BenchmarkMCPCall measures one call of the test server's echo tool over
// stdio: "sdk" by the official Go SDK's client alone (the baseline),
// "run" as a one-node run of a pipeline on a memory store, the call going
// through runner's call path (budget, rules, gate, call, record) with the
// shipped platform rules. The ratio run/sdk is what runner adds to an MCP
// call; docs/performance.md records it.
func BenchmarkMCPCall(b *testing.B) {
	ctx := context.Background()
	b.Run("sdk", func(b *testing.B) {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), mcptest.Env+"=")
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer session.Close()
		for b.Loop() {
			if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("run", func(b *testing.B) {
		b.Setenv("RUNNER_TEST_MCP_KEY", "bench") // mcpGraph's server takes a secret
		g := mcpGraph(b, filepath.Join(b.TempDir(), "count"))
		e := &runner.Engine{Store: store.NewMemory()}
		in := map[string]any{"tool": "echo", "args": map[string]any{"text": "hi"}}
		if _, err := e.Run(ctx, g, "warm", in); err != nil { // starts the server
			b.Fatal(err)
		}
		for i := 0; b.Loop(); i++ {
			res, err := e.Run(ctx, g, strconv.Itoa(i), in)
			if err != nil || res.State["out"] != "hi" {
				b.Fatalf("%v, %v", err, res)
			}
		}
	})
}
