package builtins

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// ToolsConfig is the with: block of a tools node.
type ToolsConfig struct {
	// Pending holds the calls to run (OpenAI format); it is cleared.
	Pending dsl.FieldRef `yaml:"pending"`
	// Messages receives one tool message per call.
	Messages dsl.FieldRef `yaml:"messages"`
	// Tools and Skills add to what the pipeline's llm nodes offer — their
	// core tools and skills, the agent's tools and skills — which a tools
	// node runs without repeating them.
	Tools  []dsl.ToolRef  `yaml:"tools"`
	Skills dsl.Expression `yaml:"skills"`
	// Timeout bounds each call (default: the tool's own).
	Timeout time.Duration `yaml:"timeout"`
	// Count is an integer field incremented once per run (iteration).
	Count dsl.FieldRef `yaml:"count"`
	// Record receives the execution record of every call.
	Record dsl.FieldRef `yaml:"record"`
}

// ToolsNode runs the tool calls an LLM asked for.
var ToolsNode = dsl.NodeType{
	Name: "tools",
	Doc:  "Runs every pending tool call: parses its name and JSON arguments, validates them, calls the tool with its timeout, and appends one tool message per call (a failed call's message carries the error, so the model sees it); state-aware tools also return state updates. Clears pending_tool_calls, counts an iteration against the budget and increments count.",
	Schema: `{
  "type": "object",
  "properties": {
    "pending": {"$ref": "defs.json#/$defs/name"},
    "messages": {"$ref": "defs.json#/$defs/name"},
    "tools": {"$ref": "defs.json#/$defs/names"},
    "skills": {"$ref": "defs.json#/$defs/expression"},
    "timeout": {"$ref": "defs.json#/$defs/duration"},
    "count": {"$ref": "defs.json#/$defs/name"},
    "record": {"$ref": "defs.json#/$defs/name"}
  },
  "additionalProperties": false
}`,
	Config: func() any {
		return &ToolsConfig{Pending: dsl.FieldRef{Name: pendingField}, Messages: dsl.FieldRef{Name: "messages"}}
	},
	Build: buildTools,
}

func buildTools(cfg any, b *dsl.Build) (runner.Node, error) {
	c := cfg.(*ToolsConfig)
	core, skills := c.Tools, c.Skills.Program
	for _, n := range b.Pipeline.Nodes {
		if l, ok := n.Config.(*LLMConfig); ok {
			core = append(core, l.Tools...)
			if skills == nil {
				skills = l.Skills.Program
			}
		}
	}
	ts, err := newToolSet(b, core, skills)
	if err != nil {
		return nil, err
	}
	n := &toolsNode{cfg: c, tools: ts}
	for _, f := range b.Pipeline.Fields {
		n.addCount = n.addCount || (f.Name == c.Count.Name && f.Reducer == "add")
	}
	return n, nil
}

type toolsNode struct {
	cfg      *ToolsConfig
	tools    *toolSet
	addCount bool // Count's reducer adds: write 1, not the new total
}

// Run calls the pending tools in order.
func (n *toolsNode) Run(ctx context.Context, in *runner.Input) (runner.Update, error) {
	if err := in.Run.Iterate(); err != nil {
		return nil, err
	}
	vars := in.Vars()
	visible, err := n.tools.visible(vars)
	if err != nil {
		return nil, runner.Permanent(err)
	}
	upd := runner.Update{}
	var msgs, records []any
	for i, call := range callsOf(in.State[n.cfg.Pending.Name]) {
		start := in.Run.Now()
		args, out, st, err := n.call(ctx, in, visible, call, i)
		if err != nil && mustStop(ctx, err) {
			return nil, err
		}
		for k, v := range st {
			upd[k] = v
		}
		text, err := content(call.Name, out, err)
		msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": call.ID, "name": call.Name, "content": text})
		records = append(records, execution(call.Name, args, out, err, start, in.Run.Now()))
	}
	upd[n.cfg.Pending.Name] = []any{}
	upd[n.cfg.Messages.Name] = msgs
	if n.cfg.Record.Name != "" {
		upd[n.cfg.Record.Name] = records
	}
	n.count(in.State, upd)
	return upd, nil
}

// call parses a call's arguments and runs it, returning its output and,
// for a state-aware tool, its state updates; an unknown tool or bad
// arguments are the call's error, for the model to see.
func (n *toolsNode) call(ctx context.Context, in *runner.Input, visible []*runner.ToolSpec, call runner.ToolCallRequest, i int) (args map[string]any, out any, st map[string]any, err error) {
	var spec *runner.ToolSpec
	for _, s := range visible {
		if s.Name == call.Name {
			spec = s
		}
	}
	if spec == nil {
		return nil, nil, nil, fmt.Errorf("unknown tool %q; the tools are: %s", call.Name, strings.Join(namesOf(visible, func(s *runner.ToolSpec) string { return s.Name }), ", "))
	}
	args = map[string]any{}
	if strings.TrimSpace(call.Args) != "" {
		v, err := runner.DecodeJSON([]byte(call.Args))
		m, ok := v.(map[string]any)
		if err != nil || !ok {
			return nil, nil, nil, fmt.Errorf("tool %s: the arguments are not a JSON object: %.200q", call.Name, call.Args)
		}
		args = m
	}
	out, err = callTool(ctx, in.Run, spec, args, in.State, n.cfg.Timeout, i)
	if err == nil && spec.UpdatesState {
		out, st, err = stateAware(spec.Name, out)
	}
	return args, out, st, err
}

// content is a call's tool-message content: the output as text, or the
// error.
func content(tool string, out any, callErr error) (string, error) {
	if callErr != nil {
		return "error: " + callErr.Error(), callErr
	}
	if s, ok := out.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("tool %s: output: %w", tool, err)
	}
	return string(b), nil
}

// stateAware splits a state-aware tool's result into its output and its
// state updates.
func stateAware(name string, out any) (any, map[string]any, error) {
	m, ok := out.(map[string]any)
	st, ok2 := m["state"].(map[string]any)
	if !ok || (m["state"] != nil && !ok2) {
		return nil, nil, runner.Permanent(fmt.Errorf("tool %s updates state, so it must return {output, state: {...}}, not %T", name, out))
	}
	return m["output"], st, nil
}

// count increments the Count field.
func (n *toolsNode) count(state runner.State, upd runner.Update) {
	if f := n.cfg.Count.Name; f != "" {
		if n.addCount {
			upd[f] = int64(1)
		} else {
			upd[f] = toInt(state[f]) + 1
		}
	}
}
