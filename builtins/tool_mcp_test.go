package builtins_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/builtins/mcptest"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

func TestMain(m *testing.M) {
	mcptest.Serve() // when a test starts this binary as an MCP server
	os.Exit(m.Run())
}

// mcpServer is an MCPServer document whose command is this test binary
// serving mcptest's tools with opts, counting into the file count; echo
// and count are pinned as mcptest serves them unchanged.
func mcpServer(t testing.TB, opts, count string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	echo := mcptest.EchoTool()
	params, _ := json.Marshal(echo.InputSchema)
	return `
apiVersion: runner/v1
kind: MCPServer
metadata: {name: test}
command: ` + exe + `
env: {` + mcptest.Env + `: "` + opts + `", ` + mcptest.CountFile + `: "` + count + `"}
tools:
  - {tool: echo, mutating: false}
pins:
  echo:
    description: ` + echo.Description + `
    parameters: ` + string(params) + `
    schema_sha256: ` + dsl.PinDigest(echo.Description, runner.NormalizeJSON(echo.InputSchema)) + `
`
}

// mcpTools builds the tools of the test server with a Toolbox closed at
// the end of the test; unpinned selects tools beside echo by name. The server counts into count.
func mcpTools(t *testing.T, opts, count string, unpinned ...string) map[string]runner.Tool {
	t.Helper()
	src := mcpServer(t, opts, count)
	for _, name := range unpinned {
		src = strings.Replace(src, "tools:\n", "tools:\n  - {tool: "+name+"}\n", 1)
	}
	defs := checkTools(t, src)
	box := &builtins.Toolbox{}
	t.Cleanup(func() { _ = box.Close() })
	out := map[string]runner.Tool{}
	for name, def := range defs {
		tool, err := box.Tool(def)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = tool
	}
	return out
}

func TestMCPToolResults(t *testing.T) {
	tools := mcpTools(t, "", "", "fail", "media", "structured")
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"echo", map[string]any{"text": "hello"}, `"hello"`},
		{"structured", nil, `{"total":3}`},
		{"media", nil, `[{"text":"a chart","type":"text"},` +
			`{"bytes":15,"mime_type":"image/png","sha256":"` + sha("\x89PNG not really") + `","type":"image"},` +
			`{"bytes":11,"mime_type":"text/plain","sha256":"` + sha("long report") + `","type":"resource","uri":"file:///report.txt"},` +
			`{"mime_type":"text/csv","name":"data.csv","type":"resource_link","uri":"file:///data.csv"}]`},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			got, err := tools[c.tool].Call(context.Background(), &runner.ToolCall{Name: c.tool, Args: c.args})
			if err != nil {
				t.Fatal(err)
			}
			if s := asJSON(t, runner.NormalizeJSON(got)); s != c.want {
				t.Errorf("got  %s\nwant %s", s, c.want)
			}
		})
	}
	t.Run("isError", func(t *testing.T) {
		n, err := attempts(t, context.Background(), tools["fail"], &runner.ToolCall{Name: "fail"})
		if n != 1 || err == nil || err.Error() != "tool fail of MCP server test: the file does not exist" {
			t.Errorf("%d attempts, error %v; want 1 (permanent), the tool's text", n, err)
		}
	})
}

// TestMCPIdempotencyKey: the call's key reaches the server in _meta.
func TestMCPIdempotencyKey(t *testing.T) {
	file := filepath.Join(t.TempDir(), "count")
	count := mcpTools(t, "", file, "count")["count"]
	for _, key := range []string{"thread-1:call-a", "thread-1:call-b"} {
		if _, err := count.Call(context.Background(), &runner.ToolCall{Name: "count", Args: map[string]any{"item": "x"}, Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := mcptest.Counted(file)
	if strings.Join(got, ",") != "thread-1:call-a,thread-1:call-b" {
		t.Errorf("the server saw keys %v", got)
	}
}

// TestMCPServerFailures: a crashed server fails its call clearly and is
// started again for the next; a slow one is cut by the call's deadline;
// one that writes garbage on stdout is reported, not waited on.
func TestMCPServerFailures(t *testing.T) {
	tools := mcpTools(t, "", "", "crash", "slow", "garbage")
	echo := func() error {
		_, err := tools["echo"].Call(context.Background(), &runner.ToolCall{Name: "echo", Args: map[string]any{"text": "hi"}})
		return err
	}
	if err := echo(); err != nil {
		t.Fatal(err)
	}
	t.Run("crash", func(t *testing.T) {
		n, err := attempts(t, context.Background(), tools["crash"], &runner.ToolCall{Name: "crash"})
		want := "MCP server test: exited (exit status 3); its stderr ends: mcptest: crashing as asked; it is started again at the next call"
		if err == nil || err.Error() != want || n != 3 {
			t.Errorf("%d attempts, error %v\nwant 3 (each on a new server), %s", n, err, want)
		}
		if err := echo(); err != nil {
			t.Errorf("the call after the crash: %v", err)
		}
	})
	t.Run("slow", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := tools["slow"].Call(ctx, &runner.ToolCall{Name: "slow", Args: map[string]any{"ms": 10000}})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Errorf("error %v after %s; want the deadline, at once", err, time.Since(start))
		}
		if err := echo(); err != nil {
			t.Errorf("the call after the slow one: %v", err)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		start := time.Now()
		_, err := tools["garbage"].Call(context.Background(), &runner.ToolCall{Name: "garbage"})
		if err == nil || !strings.Contains(err.Error(), "wrote something that is not JSON-RPC on its stdout") || time.Since(start) > 10*time.Second {
			t.Errorf("error %v after %s; want garbage reported at once", err, time.Since(start))
		}
		if err := echo(); err != nil {
			t.Errorf("the call after the garbage: %v", err)
		}
	})
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestMCPPins: a pinned tool the server changed is refused, naming the
// difference — when the server starts changed, and when it changes while
// connected and says so (tools/list_changed).
func TestMCPPins(t *testing.T) {
	want := `MCP server test: tool echo changed since it was pinned: its input schema has /properties/text/type = "integer" (pinned: "string"); ` +
		`review the change, then pin it again: runner mcp pin test`
	t.Run("changed before", func(t *testing.T) {
		_, err := mcpTools(t, "changed", "")["echo"].Call(context.Background(), &runner.ToolCall{Name: "echo", Args: map[string]any{"text": "a"}})
		if err == nil || err.Error() != want {
			t.Errorf("error %v\nwant %s", err, want)
		}
	})
	t.Run("changed while connected", func(t *testing.T) {
		tools := mcpTools(t, "", "", "change_echo")
		echo := func() error {
			_, err := tools["echo"].Call(context.Background(), &runner.ToolCall{Name: "echo", Args: map[string]any{"text": "a"}})
			return err
		}
		if err := echo(); err != nil {
			t.Fatal(err)
		}
		if _, err := tools["change_echo"].Call(context.Background(), &runner.ToolCall{Name: "change_echo"}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second) // the notification comes on its own
		err := echo()
		for err == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			err = echo()
		}
		if err == nil || err.Error() != want {
			t.Errorf("error %v\nwant %s", err, want)
		}
	})
}

// TestMCPStreamableHTTP: a server reached over streamable HTTP gets the
// headers, with their secrets, on every request.
func TestMCPStreamableHTTP(t *testing.T) {
	t.Setenv("RUNNER_TEST_MCP_TOKEN", "tok-123")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-123" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	src := `
apiVersion: runner/v1
kind: MCPServer
metadata: {name: test}
url: ` + srv.URL + `
headers: {Authorization: "Bearer ${secrets.token}"}
secrets: {token: RUNNER_TEST_MCP_TOKEN}
tools: [{tool: echo, mutating: false}]
`
	box := &builtins.Toolbox{}
	defer box.Close()
	tool, err := box.Tool(checkTools(t, src)["echo"])
	if err != nil {
		t.Fatal(err)
	}
	got, err := tool.Call(context.Background(), &runner.ToolCall{Name: "echo", Args: map[string]any{"text": "over http"}})
	if err != nil || got != "over http" {
		t.Fatalf("got %v, %v", got, err)
	}
	if s := tool.(runner.SecretKeeper).Secrets(); len(s) != 1 || s[0] != "tok-123" {
		t.Errorf("secrets %v; want the token, for the graph's redactor", s)
	}
}
