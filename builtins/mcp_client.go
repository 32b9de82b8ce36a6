package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// mcpClient is the connection to one MCP server: made at the first call,
// made again at the call after the server exited or hung up, closed with
// the Toolbox that owns it. It lists the server's tools when it connects
// and again after the server says its list changed, and refuses a pinned
// tool that no longer matches its pin.
type mcpClient struct {
	def *dsl.MCPServerDef

	mu     sync.Mutex
	cur    *mcpSession // nil: none yet, or it ended
	closed bool
}

// mcpSession is one connection to the server.
type mcpSession struct {
	cs      *mcp.ClientSession
	cmd     *exec.Cmd // a stdio server's process
	stderr  *tail     // its last words
	done    chan struct{}
	endedBy error                // why it ended, once done
	tools   map[string]*liveTool // under the client's mu; nil: to be listed
}

// liveTool is a tool as the server offers it now, with its pin digest.
type liveTool struct {
	tool   *mcp.Tool
	digest string
}

// mcpClientInfo is who runner says it is to MCP servers.
var mcpClientInfo = &mcp.Implementation{Name: "runner", Version: "1"}

// connectWait bounds how long connecting to a server may take; endWait,
// how long a failed call waits to learn whether the session ended with
// it.
const (
	connectWait = time.Minute
	endWait     = 2 * time.Second
)

// connect returns the session, connecting first when there is none.
func (c *mcpClient) connect(ctx context.Context) (*mcpSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, runner.Permanent(c.errorf("closed: the run or the server that used it has stopped"))
	}
	if c.cur != nil {
		return c.cur, nil
	}
	s := &mcpSession{done: make(chan struct{})}
	t, err := c.transport(s)
	if err != nil {
		return nil, err
	}
	// Starting the server may take longer than a call may (npx fetches
	// it first): connectWait bounds it, not the call's timeout; a run
	// that is cancelled stops it.
	ctx, cancel := connectContext(ctx)
	defer cancel()
	client := mcp.NewClient(mcpClientInfo, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		c.mu.Lock()
		s.tools = nil // listed again, and pins checked, at the next call
		c.mu.Unlock()
	}})
	if s.cs, err = client.Connect(ctx, t, nil); err != nil {
		if ctx.Err() != nil {
			return nil, c.errorf("connecting: %w", ctx.Err())
		}
		return nil, c.errorf("connecting: %v%s", err, s.lastWords())
	}
	c.cur = s
	go c.watch(s)
	return s, nil
}

// connectContext is the context of connecting for a call's ctx: bounded
// by connectWait, and cancelled with ctx unless ctx merely timed out.
func connectContext(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connectWait)
	stop := context.AfterFunc(ctx, func() {
		if !runner.TimedOut(ctx) {
			cancel()
		}
	})
	return cctx, func() { stop(); cancel() }
}

// watch forgets a session once it has ended, and keeps why.
func (c *mcpClient) watch(s *mcpSession) {
	err := s.cs.Wait()
	s.endedBy = s.why(err)
	close(s.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == s {
		c.cur = nil
	}
}

// why describes how a session ended: the stdio server's exit and last
// words, or what broke the connection.
func (s *mcpSession) why(err error) error {
	if s.cmd != nil && s.cmd.ProcessState != nil {
		return fmt.Errorf("exited (%v)%s", s.cmd.ProcessState, s.lastWords())
	}
	if err == nil {
		err = errors.New("the server hung up")
	}
	return fmt.Errorf("connection lost: %v%s", err, s.lastWords())
}

// lastWords quotes the end of what a stdio server wrote on stderr.
func (s *mcpSession) lastWords() string {
	if w := s.stderr.String(); w != "" {
		return "; its stderr ends: " + w
	}
	return ""
}

// transport starts the command or reaches the url, with the secrets of
// the server's environment or headers.
func (c *mcpClient) transport(s *mcpSession) (mcp.Transport, error) {
	secrets, err := mcpSecrets(c.def)
	if err != nil {
		return nil, err
	}
	vars := map[string]any{"secrets": secrets}
	if c.def.URL != "" {
		h, err := renderAll(c.def.Headers, vars, "header")
		if err != nil {
			return nil, c.errorf("%w", err)
		}
		return &mcp.StreamableClientTransport{Endpoint: c.def.URL,
			HTTPClient: &http.Client{Transport: &headerTransport{h, newTransport(headerWait)}}}, nil
	}
	env, err := renderAll(c.def.Env, vars, "env")
	if err != nil {
		return nil, c.errorf("%w", err)
	}
	s.cmd = exec.Command(c.def.Command, c.def.Args...)
	s.cmd.Dir, s.cmd.Env = c.def.Dir, baseEnv()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		s.cmd.Env = append(s.cmd.Env, k+"="+env[k])
	}
	s.stderr = &tail{}
	s.cmd.Stderr = s.stderr
	return &mcp.CommandTransport{Command: s.cmd, TerminateDuration: 2 * time.Second}, nil
}

// inherited are the variables a stdio server gets from runner's own
// environment: enough to find and run a program, none of runner's keys.
var inherited = []string{"HOME", "LANG", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "USER"}

func baseEnv() []string {
	var env []string
	for _, k := range inherited {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// mcpSecrets reads a server's secrets from the environment.
func mcpSecrets(def *dsl.MCPServerDef) (map[string]any, error) {
	out := make(map[string]any, len(def.Secrets))
	for name, env := range def.Secrets {
		v, ok := os.LookupEnv(env)
		if !ok {
			return nil, runner.Permanent(fmt.Errorf("MCP server %s: secret %s: environment variable %s is not set", def.Name, name, env))
		}
		out[name] = v
	}
	return out, nil
}

func renderAll(ts map[string]*dsl.Template, vars map[string]any, what string) (map[string]string, error) {
	out := make(map[string]string, len(ts))
	for k, t := range ts {
		v, err := t.Render(vars)
		if err != nil {
			return nil, runner.Permanent(fmt.Errorf("%s %s: %v", what, k, err))
		}
		out[k] = v
	}
	return out, nil
}

// headerTransport sets a server's headers on every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// tool returns the session and the tool as the server offers it now,
// listing the tools first when the list is not known. A tool the server
// does not offer, or whose description or input schema no longer match
// its pin, is refused.
func (c *mcpClient) tool(ctx context.Context, t *dsl.MCPTool) (*mcpSession, *liveTool, error) {
	s, err := c.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	tools, err := c.list(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	lt := tools[t.Tool]
	if lt == nil {
		return nil, nil, runner.Permanent(c.errorf("has no tool %s (it offers %s)", t.Tool, strings.Join(slices.Sorted(maps.Keys(tools)), ", ")))
	}
	if t.Pin != nil && lt.digest != t.Pin.SHA256 {
		return nil, nil, runner.Permanent(c.errorf("tool %s changed since it was pinned: %s; review the change, then pin it again: runner mcp pin %s",
			t.Tool, PinDifference(t.Pin, lt.tool), c.def.Name))
	}
	return s, lt, nil
}

// list returns the session's tools, listing them unless known.
func (c *mcpClient) list(ctx context.Context, s *mcpSession) (map[string]*liveTool, error) {
	c.mu.Lock()
	tools := s.tools
	c.mu.Unlock()
	if tools != nil {
		return tools, nil
	}
	tools = map[string]*liveTool{}
	for tool, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, c.failed(ctx, s, fmt.Errorf("listing tools: %w", err))
		}
		tools[tool.Name] = &liveTool{tool: tool, digest: PinOf(tool).SHA256}
	}
	c.mu.Lock()
	s.tools = tools
	c.mu.Unlock()
	return tools, nil
}

// failed describes a failed request. A cancelled or timed-out call keeps
// its context's error; a protocol error (an unknown tool, arguments the
// server refuses) is permanent. Anything else broke the session: it is
// dropped, the server is started again at the next call, and the error
// says why it broke — garbage on stdout, or how the server ended.
func (c *mcpClient) failed(ctx context.Context, s *mcpSession, err error) error {
	if ctx.Err() != nil {
		return c.errorf("%w", ctx.Err())
	}
	if _, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return runner.Permanent(c.errorf("%v", err))
	}
	c.drop(s)
	if _, ok := errors.AsType[*json.SyntaxError](err); ok {
		err = fmt.Errorf("wrote something that is not JSON-RPC on its stdout (%v), so runner hung up%s", err, s.lastWords())
	} else {
		select {
		case <-s.done:
			err = s.endedBy
		case <-time.After(endWait):
		}
	}
	return c.errorf("%v; it is started again at the next call", err)
}

// drop forgets a broken session and closes it, in the background: a
// stdio server is given time to exit before it is stopped.
func (c *mcpClient) drop(s *mcpSession) {
	c.mu.Lock()
	if c.cur == s {
		c.cur = nil
	}
	c.mu.Unlock()
	go s.cs.Close()
}

// close ends the session, stopping a stdio server, and refuses later
// calls.
func (c *mcpClient) close() error {
	c.mu.Lock()
	s := c.cur
	c.cur, c.closed = nil, true
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.cs.Close()
}

// errorf formats an error about the server.
func (c *mcpClient) errorf(format string, a ...any) error {
	return fmt.Errorf("MCP server %s: "+format, append([]any{c.def.Name}, a...)...)
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 1024

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = t.buf[len(t.buf)-tailBytes:]
	}
	return len(p), nil
}

// String is the last few lines, on one line.
func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "")), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

// MCPTools lists the tools an MCP server offers now, as it describes
// them, sorted by name (runner mcp tools, runner mcp pin).
func (b *Toolbox) MCPTools(ctx context.Context, server *dsl.MCPServerDef) ([]*mcp.Tool, error) {
	c, err := b.client(server)
	if err != nil {
		return nil, err
	}
	s, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	tools, err := c.list(ctx, s)
	if err != nil {
		return nil, err
	}
	out := make([]*mcp.Tool, 0, len(tools))
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		out = append(out, tools[name].tool)
	}
	return out, nil
}

// PinOf is what pinning a tool as the server offers it records.
func PinOf(t *mcp.Tool) *dsl.MCPPin {
	schema := runner.NormalizeJSON(t.InputSchema)
	params, _ := schema.(map[string]any)
	return &dsl.MCPPin{Description: t.Description, Parameters: params, SHA256: dsl.PinDigest(t.Description, schema)}
}
