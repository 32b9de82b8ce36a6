// Package mcptest is a Model Context Protocol server for tests, built
// with the official Go SDK: tools that echo, count their calls by
// idempotency key, fail, are slow, crash their process, write garbage on
// stdout or show their environment. A test binary serves it over stdio when Env is set in its
// environment (call Serve from TestMain), so a test can name its own
// executable as an MCPServer's command.
//
// Its folder also pins the MCP software no one here wrote that the tests
// use when it is installed (npm ci here): the reference servers, and the
// TypeScript SDK's client, which client.mjs drives against runner.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env is the environment variable that makes a test binary serve the
// tools over stdio instead of running its tests; its value is a comma
// separated list of options: "changed" serves echo with another input
// schema.
const Env = "RUNNER_MCPTEST"

// CountFile, RequestFile and TrapFile are the environment variables
// naming the files of count (see count): the keys of the calls it
// executed, of every request, and the trap that kills its client.
const (
	CountFile   = "RUNNER_MCPTEST_COUNT"
	RequestFile = "RUNNER_MCPTEST_REQUESTS"
	TrapFile    = "RUNNER_MCPTEST_TRAP"
)

// KeyMeta is the _meta key runner passes a call's idempotency key in.
const KeyMeta = "dev.runner/idempotency-key"

// Serve serves the tools over stdio and exits, when Env is set; else it
// returns at once.
func Serve() {
	opts, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	err := NewServer(strings.Split(opts, ",")...).Run(context.Background(), &mcp.StdioTransport{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// NewServer returns the server with its tools; options as Env's.
func NewServer(opts ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1.0.0"}, nil)
	echo := EchoTool()
	for _, o := range opts {
		if o == "changed" {
			echo = changedEcho()
		}
	}
	s.AddTool(echo, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Text any }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		return text(fmt.Sprint(in.Text)), nil
	})
	s.AddTool(&mcp.Tool{Name: "change_echo", Description: "Serves echo with another input schema from now on.", InputSchema: object(nil)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.AddTool(changedEcho(), func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("changed"), nil })
			return text("echo changed"), nil
		})
	s.AddTool(&mcp.Tool{Name: "count", Description: "Counts its calls: appends the call's idempotency key to a file.",
		InputSchema: object(map[string]any{"item": map[string]any{"type": "string"}}), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		count)
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails, as a tool error.", InputSchema: object(nil)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the file does not exist"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Answers after ms milliseconds.",
		InputSchema: object(map[string]any{"ms": map[string]any{"type": "integer"}})}, slow)
	s.AddTool(&mcp.Tool{Name: "crash", Description: "Exits its process.", InputSchema: object(nil)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "mcptest: crashing as asked")
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "garbage", Description: "Writes a line that is not JSON-RPC on stdout.", InputSchema: object(nil)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stdout, "Welcome to mcptest! (not JSON)")
			time.Sleep(time.Minute)
			return text("unreachable"), nil
		})
	s.AddTool(&mcp.Tool{Name: "media", Description: "Answers with an image, a resource and a link.", InputSchema: object(nil)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a chart"},
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG not really")},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///report.txt", MIMEType: "text/plain", Text: "long report"}},
				&mcp.ResourceLink{URI: "file:///data.csv", Name: "data.csv", MIMEType: "text/csv"},
			}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "getenv", Description: "Answers with an environment variable of the server.",
		InputSchema: object(map[string]any{"name": map[string]any{"type": "string"}})},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Name string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return text(in.Name + "=" + os.Getenv(in.Name)), nil
		})
	s.AddTool(&mcp.Tool{Name: "structured", Description: "Answers with structured content.", InputSchema: object(nil)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"total":3}`}},
				StructuredContent: map[string]any{"total": 3}}, nil
		})
	return s
}

// EchoTool is echo as the server offers it unless changed.
func EchoTool() *mcp.Tool {
	return &mcp.Tool{Name: "echo", Description: "Echoes its text.",
		InputSchema: object(map[string]any{"text": map[string]any{"type": "string"}}, "text")}
}

func changedEcho() *mcp.Tool {
	return &mcp.Tool{Name: "echo", Description: "Echoes its text.",
		InputSchema: object(map[string]any{"text": map[string]any{"type": "integer"}}, "text")}
}

func object(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object"}
	if props != nil {
		s["properties"] = props
	}
	if required != nil {
		s["required"] = required
	}
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

var countMu sync.Mutex

// count executes a call once per idempotency key: a new key is appended
// to the CountFile, a key seen before (a call repeated after its client
// crashed) is answered as it was. Every request is appended to the
// RequestFile. Armed by the TrapFile, it kills its client (the process
// that started it) when the trap's key arrives: before executing it, or
// after ("KEY after").
func count(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	key, _ := req.Params.Meta[KeyMeta].(string)
	countMu.Lock()
	defer countMu.Unlock()
	if err := appendLine(os.Getenv(RequestFile), key); err != nil {
		return nil, err
	}
	trap, after := sprung(key)
	if trap && !after {
		killClient()
	}
	keys, err := Counted(os.Getenv(CountFile))
	if err != nil {
		return nil, err
	}
	n := slices.Index(keys, key) + 1
	if n == 0 {
		if err := appendLine(os.Getenv(CountFile), key); err != nil {
			return nil, err
		}
		n = len(keys) + 1
	}
	if trap {
		killClient()
	}
	return text(fmt.Sprintf("call %d", n)), nil
}

// sprung reports whether the TrapFile names key, and disarms it.
func sprung(key string) (trap, after bool) {
	file := os.Getenv(TrapFile)
	data, err := os.ReadFile(file)
	if file == "" || err != nil {
		return false, false
	}
	k, when, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
	if k != key {
		return false, false
	}
	_ = os.Remove(file)
	return true, when == "after"
}

// killClient kills the process that started this one, and waits to be
// stopped in turn.
func killClient() {
	if p, err := os.FindProcess(os.Getppid()); err == nil {
		_ = p.Kill()
	}
	select {}
}

// appendLine appends line to file, unless no file is named.
func appendLine(file, line string) error {
	if file == "" {
		return nil
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, line)
	return err
}

// Counted returns the keys of the calls count executed (or the requests,
// from the RequestFile), in order.
func Counted(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if file == "" || os.IsNotExist(err) {
		return nil, nil
	}
	return strings.Fields(string(data)), err
}

func slow(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct{ MS int }
	_ = json.Unmarshal(req.Params.Arguments, &in)
	select {
	case <-time.After(time.Duration(in.MS) * time.Millisecond):
		return text("done"), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
