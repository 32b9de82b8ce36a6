package builtins

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// Tool builds the runtime tool of a checked Tool document: its expr, http,
// memory or builtin implementation behind a check of every call's arguments
// against the tool's parameter schema. A tool of an MCP server needs a
// Toolbox, which owns the connection to its server.
func Tool(def *dsl.ToolDef) (runner.Tool, error) { return (*Toolbox)(nil).Tool(def) }

// Toolbox builds runtime tools as Tool does, and those of MCP servers
// too: it connects to each server once, at its tool's first call, for
// every tool it built. Close ends those connections (stopping stdio
// servers); cmd/runner passes a Toolbox's Tool as dsl.CompileOptions.Tool
// and closes it with the run or the server.
type Toolbox struct {
	mu  sync.Mutex
	mcp map[*dsl.MCPServerDef]*mcpClient
}

// Tool builds the runtime tool of def (see Tool).
func (b *Toolbox) Tool(def *dsl.ToolDef) (runner.Tool, error) {
	impl, err := toolImpl(def, b)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", def.Name, err)
	}
	return Checked(def, impl)
}

// client returns the Toolbox's client of an MCP server.
func (b *Toolbox) client(s *dsl.MCPServerDef) (*mcpClient, error) {
	if b == nil {
		return nil, fmt.Errorf("MCP server %s: its tools are built by a builtins.Toolbox, which owns the connection", s.Name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.mcp[s]
	if c == nil {
		if b.mcp == nil {
			b.mcp = map[*dsl.MCPServerDef]*mcpClient{}
		}
		c = &mcpClient{def: s}
		b.mcp[s] = c
	}
	return c, nil
}

// Close ends the Toolbox's connections to MCP servers; a tool it built
// fails from then on.
func (b *Toolbox) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for _, c := range b.mcp {
		errs = append(errs, c.close())
	}
	return errors.Join(errs...)
}

// Checked returns impl behind the argument validation of def: a mock in a
// test is held to the tool's parameters as the real tool is.
func Checked(def *dsl.ToolDef, impl runner.Tool) (runner.Tool, error) {
	params, err := dsl.CompileJSONSchema(def.Parameters)
	if err != nil {
		return nil, fmt.Errorf("tool %s: parameters: %w", def.Name, err)
	}
	return &checkedTool{name: def.Name, params: params, impl: impl}, nil
}

// ToolKind is one way a Tool document implements its tool: the key that
// selects it and how to build it. External kinds reach outside the
// process (a service over the network, with the tool's secrets): `runner
// test` refuses to call one that a Test does not mock, unless --live. The
// others are pure Go: an expression, or a function of this package over
// its embedded data.
type ToolKind struct {
	Key      string
	Doc      string
	External bool
	Set      func(*dsl.ToolDef) bool
	Build    func(*dsl.ToolDef, *Toolbox) (runner.Tool, error)
}

// ToolKinds are the tool implementations, one spec each.
var ToolKinds = []ToolKind{
	{Key: "expr", Doc: "a pure expression over args and state",
		Set:   func(d *dsl.ToolDef) bool { return d.Expr != nil },
		Build: func(d *dsl.ToolDef, _ *Toolbox) (runner.Tool, error) { return exprTool(d.Name, d.Expr), nil }},
	{Key: "http", Doc: "an HTTP request with templated URL, headers and body, and a response mapping", External: true,
		Set: func(d *dsl.ToolDef) bool { return d.HTTP != nil },
		Build: func(d *dsl.ToolDef, _ *Toolbox) (runner.Tool, error) {
			return newHTTPTool(d.Name, d.HTTP, d.Timeout), nil
		}},
	{Key: "memory", Doc: "a get, put or search of the run's long-term memory store, in a namespace computed from args and state",
		Set: func(d *dsl.ToolDef) bool { return d.Memory != nil },
		Build: func(d *dsl.ToolDef, _ *Toolbox) (runner.Tool, error) {
			return &memoryTool{name: d.Name, def: d.Memory}, nil
		}},
	{Key: "a2a", Doc: "a remote agent over A2A: the call's message sent, the agent's answer and task state returned", External: true,
		Set:   func(d *dsl.ToolDef) bool { return d.A2A != nil },
		Build: func(d *dsl.ToolDef, _ *Toolbox) (runner.Tool, error) { return &a2aTool{name: d.Name, def: d.A2A}, nil }},
	{Key: "builtin", Doc: "a Go function of this package",
		Set:   func(d *dsl.ToolDef) bool { return d.Builtin != "" },
		Build: func(d *dsl.ToolDef, _ *Toolbox) (runner.Tool, error) { return builtinTool(d.Builtin) }},
	{Key: "mcp", Doc: "a tool of an MCP server, selected by an MCPServer document", External: true,
		Set: func(d *dsl.ToolDef) bool { return d.MCP != nil },
		Build: func(d *dsl.ToolDef, b *Toolbox) (runner.Tool, error) {
			c, err := b.client(d.MCP.Server)
			if err != nil {
				return nil, err
			}
			return &mcpTool{def: d.MCP, client: c}, nil
		}},
}

// KindOf returns the kind of tool a definition implements, or nil.
func KindOf(def *dsl.ToolDef) *ToolKind {
	for i := range ToolKinds {
		if ToolKinds[i].Set(def) {
			return &ToolKinds[i]
		}
	}
	return nil
}

// toolImpl returns the implementation a definition sets.
func toolImpl(def *dsl.ToolDef, b *Toolbox) (runner.Tool, error) {
	if k := KindOf(def); k != nil {
		return k.Build(def, b)
	}
	return nil, errors.New("no implementation: set one of expr, http, memory, a2a or builtin")
}

// checkedTool validates a call's arguments before calling the tool.
type checkedTool struct {
	name   string
	params *dsl.JSONSchema
	impl   runner.Tool
}

// Secrets returns the secrets of the tool behind the check, if it holds any.
func (t *checkedTool) Secrets() []string {
	if k, ok := t.impl.(runner.SecretKeeper); ok {
		return k.Secrets()
	}
	return nil
}

// CheckArgs validates arguments against the parameter schema.
func (t *checkedTool) CheckArgs(args map[string]any) error {
	if err := t.params.Check(args); err != nil {
		return &runner.ValidationError{Err: fmt.Errorf("tool %s: invalid arguments: %v", t.name, err)}
	}
	return nil
}

// Call refuses arguments that do not match the parameter schema, for good:
// retrying with the same arguments cannot help.
func (t *checkedTool) Call(ctx context.Context, call *runner.ToolCall) (any, error) {
	args := call.Args
	if args == nil {
		args = map[string]any{}
	}
	if err := t.CheckArgs(args); err != nil {
		return nil, runner.Permanent(err)
	}
	return t.impl.Call(ctx, call)
}
