package builtins

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// ToolConfig is the with: block of a tool node.
type ToolConfig struct {
	// Tool is the tool to run, by name; or Select picks one of Tools.
	Tool   dsl.ToolRef    `yaml:"tool"`
	Select dsl.Expression `yaml:"select"`
	Tools  []dsl.ToolRef  `yaml:"tools"`
	// Args are the call's arguments, each an expression over the state.
	Args map[string]dsl.Expression `yaml:"args"`
	// Output receives the tool's result; with Merge the result is an object
	// of state updates instead.
	Output dsl.FieldRef `yaml:"output"`
	Merge  bool         `yaml:"merge"`
	// Record, when set, receives a ToolExecution {tool_name, input, output,
	// execution_time_ms, status, error_message, timestamp}; Completed, when
	// set, receives the tool's name. Both are usually append fields.
	Record    dsl.FieldRef  `yaml:"record"`
	Completed dsl.FieldRef  `yaml:"completed"`
	Timeout   time.Duration `yaml:"timeout"`
	// Fatal makes a failed or timed-out call fail the node.
	Fatal bool `yaml:"fatal"`
}

// ToolNode runs one tool and records its execution.
var ToolNode = dsl.NodeType{
	Name: "tool",
	Doc:  "Runs one tool — named, or selected by an expression from a list — and records a ToolExecution. A failed or timed-out call is recorded and is not fatal unless `fatal: true`.",
	Schema: `{
  "type": "object",
  "properties": {
    "tool": {"$ref": "defs.json#/$defs/name"},
    "select": {"$ref": "defs.json#/$defs/expression"},
    "tools": {"$ref": "defs.json#/$defs/names"},
    "args": {"type": "object", "additionalProperties": {"$ref": "defs.json#/$defs/expression"}},
    "output": {"$ref": "defs.json#/$defs/name"},
    "merge": {"type": "boolean"},
    "record": {"$ref": "defs.json#/$defs/name"},
    "completed": {"$ref": "defs.json#/$defs/name"},
    "timeout": {"$ref": "defs.json#/$defs/duration"},
    "fatal": {"type": "boolean"}
  },
  "oneOf": [
    {"required": ["tool"], "not": {"required": ["select"]}},
    {"required": ["select", "tools"], "not": {"required": ["tool"]}}
  ],
  "additionalProperties": false
}`,
	Config: func() any { return &ToolConfig{} },
	Build:  buildTool,
}

// Tool execution statuses.
const (
	ToolSuccess  = "SUCCESS"
	ToolFailed   = "FAILED"
	ToolTimedOut = "TIMED_OUT"
)

func buildTool(cfg any, b *dsl.Build) (runner.Node, error) {
	c := cfg.(*ToolConfig)
	n := &toolNode{cfg: c, tools: map[string]*runner.ToolSpec{}, args: map[string]*dsl.Program{}}
	refs := c.Tools
	if c.Tool.Name != "" {
		refs = []dsl.ToolRef{c.Tool}
	}
	for _, r := range refs {
		spec, err := b.Tool(r.Name)
		if err != nil {
			return nil, err
		}
		n.tools[r.Name] = spec
	}
	for k, e := range c.Args {
		n.args[k] = e.Program
	}
	return n, nil
}

// toolNode runs one tool call and records it.
type toolNode struct {
	cfg   *ToolConfig
	tools map[string]*runner.ToolSpec
	args  map[string]*dsl.Program
}

// Run calls the tool; a failed call is recorded and is not an error unless
// the node is fatal.
func (n *toolNode) Run(ctx context.Context, in *runner.Input) (runner.Update, error) {
	vars := in.Vars()
	name, err := n.toolName(vars)
	if err != nil {
		return nil, runner.Permanent(err)
	}
	args, err := evalArgs(n.args, vars)
	if err != nil {
		return nil, runner.Permanent(err)
	}
	spec := n.tools[name]
	start := in.Run.Now()
	out, err := callTool(ctx, in.Run, spec, args, in.State, n.cfg.Timeout, 0)
	exec := execution(name, args, out, err, start, in.Run.Now())
	if err != nil && (n.cfg.Fatal || mustStop(ctx, err)) {
		return nil, err
	}
	return n.update(name, out, exec, err)
}

// toolName is the static tool, or the selected one, which must be listed.
func (n *toolNode) toolName(vars map[string]any) (string, error) {
	if n.cfg.Tool.Name != "" {
		return n.cfg.Tool.Name, nil
	}
	v, err := n.cfg.Select.Program.Eval(vars)
	if err != nil {
		return "", fmt.Errorf("select: %w", err)
	}
	name, _ := v.(string)
	if n.tools[name] == nil {
		return "", fmt.Errorf("select chose %v, which is not one of the node's tools %v", v, sortedKeys(n.tools))
	}
	return name, nil
}

// update is the node's result: the output (merged or into a field), the
// execution record and the completed tool's name.
func (n *toolNode) update(name string, out any, exec map[string]any, callErr error) (runner.Update, error) {
	upd := runner.Update{}
	if callErr == nil {
		if n.cfg.Merge {
			m, ok := out.(map[string]any)
			if !ok {
				return nil, runner.Permanent(fmt.Errorf("tool %s returned %T; with merge: true it must return an object of state updates", name, out))
			}
			for k, v := range m {
				upd[k] = v
			}
		} else if n.cfg.Output.Name != "" {
			upd[n.cfg.Output.Name] = out
		}
	}
	if n.cfg.Record.Name != "" {
		upd[n.cfg.Record.Name] = exec
	}
	if n.cfg.Completed.Name != "" {
		upd[n.cfg.Completed.Name] = name
	}
	return upd, nil
}

// mustStop reports whether a failed tool call ends the node even where
// failures are only recorded: a cancelled run, a spent budget or an
// interrupt.
func mustStop(ctx context.Context, err error) bool {
	var be *runner.BudgetError
	var intr *runner.Interrupt
	return ctx.Err() != nil || errors.As(err, &be) || errors.As(err, &intr)
}

// callTool calls a tool with its timeout, emitting tool_call/tool_result;
// n numbers the node's calls this step, for the idempotency key.
func callTool(ctx context.Context, run *runner.Run, spec *runner.ToolSpec, args map[string]any, state runner.State, timeout time.Duration, n int) (any, error) {
	if timeout <= 0 {
		timeout = spec.Timeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := run.BeginTool(); err != nil {
		return nil, err
	}
	run.Emit(runner.EventToolCall, "", map[string]any{"tool": spec.Name, "args": args})
	out, err := spec.Tool.Call(ctx, &runner.ToolCall{Name: spec.Name, Args: args, State: state, Key: run.Key(n)})
	if err != nil && timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = &runner.TimeoutError{What: "tool " + spec.Name, After: timeout}
	}
	run.Emit(runner.EventToolResult, "", map[string]any{"tool": spec.Name, "output": out, "error": errString(err)})
	return out, err
}

// execution is the ToolExecution record of a call.
func execution(name string, args map[string]any, out any, err error, start, end time.Time) map[string]any {
	status := ToolSuccess
	var tt *runner.TimeoutError
	switch {
	case errors.As(err, &tt):
		status = ToolTimedOut
	case err != nil:
		status = ToolFailed
	}
	rec := map[string]any{
		"tool_name": name, "input": args, "output": out, "status": status,
		"execution_time_ms": end.Sub(start).Milliseconds(), "timestamp": start.UTC().Format(time.RFC3339Nano),
		"error_message": nil,
	}
	if err != nil {
		rec["error_message"] = err.Error()
	}
	return rec
}

func evalArgs(args map[string]*dsl.Program, vars map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(args))
	for k, p := range args {
		v, err := p.Eval(vars)
		if err != nil {
			return nil, fmt.Errorf("argument %s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

func errString(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
