package builtins

import (
	"context"
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
	Select dsl.Expression `yaml:"select" kind:"string"`
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
	o, err := in.Run.CallTool(ctx, runner.ToolRequest{Spec: n.tools[name], Args: args, Timeout: n.cfg.Timeout})
	if err == nil && o.Err != nil && n.cfg.Fatal {
		err = o.Err
	}
	if err != nil {
		return nil, err
	}
	return n.update(name, o.Exec.Output, o.Exec.Value(), o.Err)
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
