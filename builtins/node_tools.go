package builtins

import (
	"context"
	"encoding/json"
	"errors"
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
	Skills dsl.Expression `yaml:"skills" kind:"array"`
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

// Run calls the pending tools in order, as one round: an approval gate
// pauses the whole round before any call runs. A paused round is stripped
// from the messages (no assistant tool call is left unanswered while the
// thread waits) and put back, with the calls as decided, when it runs.
func (n *toolsNode) Run(ctx context.Context, in *runner.Input) (runner.Update, error) {
	if err := in.Run.Iterate(); err != nil {
		return nil, err
	}
	o, err := n.tools.visible(in.Vars())
	if err != nil {
		return nil, runner.Permanent(err)
	}
	calls := callsOf(in.State[n.cfg.Pending.Name])
	outs := make([]runner.ToolOutcome, len(calls))
	var reqs []runner.ToolRequest
	var at []int // the index in calls of each request
	for i, call := range calls {
		req, err := n.request(o, call)
		if err != nil {
			outs[i] = runner.ToolOutcome{Exec: &runner.ToolExecution{ToolName: call.Name, CallID: call.ID, Status: runner.ToolFailed,
				ErrorMessage: err.Error(), Timestamp: in.Run.Now().UTC().Format(time.RFC3339Nano)}, Err: err}
			continue
		}
		reqs, at = append(reqs, req), append(at, i)
	}
	done, err := in.Run.CallTools(ctx, reqs)
	if intr, ok := errors.AsType[*runner.Interrupt](err); ok && intr.Rule != "" {
		intr.Update = n.stripRound(in.State, calls)
	}
	if err != nil {
		return nil, err
	}
	for j, d := range done {
		outs[at[j]] = d
	}
	return n.update(in.State, calls, outs)
}

// request reads a call the model asked for: an unknown tool or arguments
// that are not a JSON object are the call's error, for the model to see.
func (n *toolsNode) request(o *offer, call runner.ToolCallRequest) (runner.ToolRequest, error) {
	spec := o.find(call.Name)
	if spec == nil {
		return runner.ToolRequest{}, fmt.Errorf("unknown tool %q; the tools are: %s", call.Name, strings.Join(namesOf(o.tools, func(s *runner.ToolSpec) string { return s.Name }), ", "))
	}
	args := map[string]any{}
	if strings.TrimSpace(call.Args) != "" {
		v, err := runner.DecodeJSON([]byte(call.Args))
		m, ok := v.(map[string]any)
		if err != nil || !ok {
			return runner.ToolRequest{}, fmt.Errorf("tool %s: the arguments are not a JSON object: %.200q", call.Name, call.Args)
		}
		args = m
	}
	return o.request(call.ID, spec, args, n.cfg.Timeout), nil
}

// update is the round's result: one tool message and one record per call,
// the round's assistant message when the gate had stripped it, the
// pending calls cleared and the count. (A state-aware tool's updates are
// merged by the step.)
func (n *toolsNode) update(state runner.State, calls []runner.ToolCallRequest, outs []runner.ToolOutcome) (runner.Update, error) {
	upd := runner.Update{}
	var msgs, records []any
	if len(calls) > 0 && roundOf(state[n.cfg.Messages.Name], calls[0].ID) == nil {
		msgs = append(msgs, restoredRound(calls, outs))
	}
	for i, call := range calls {
		text, err := content(call.Name, outs[i].Exec.Output, outs[i].Err)
		if err != nil && runner.MustStop(nil, err) {
			return nil, err
		}
		msgs = append(msgs, map[string]any{"id": "tool-" + call.ID, "role": "tool", "tool_call_id": call.ID, "name": call.Name, "content": text})
		records = append(records, outs[i].Exec.Value())
	}
	upd[n.cfg.Pending.Name] = []any{}
	upd[n.cfg.Messages.Name] = msgs
	if n.cfg.Record.Name != "" {
		upd[n.cfg.Record.Name] = records
	}
	n.count(state, upd)
	return upd, nil
}

// stripRound removes, as the thread pauses, the assistant message that
// asked for the calls.
func (n *toolsNode) stripRound(state runner.State, calls []runner.ToolCallRequest) runner.Update {
	if len(calls) == 0 {
		return nil
	}
	m := roundOf(state[n.cfg.Messages.Name], calls[0].ID)
	if m == nil || m["id"] == nil {
		return nil
	}
	return runner.Update{n.cfg.Messages.Name: []any{map[string]any{"type": "remove", "id": m["id"]}}}
}

// roundOf returns the assistant message that asked for a call.
func roundOf(msgs any, callID string) map[string]any {
	list, _ := msgs.([]any)
	for i := len(list) - 1; i >= 0; i-- {
		m, _ := list[i].(map[string]any)
		if m["role"] != "assistant" {
			continue
		}
		for _, c := range callsOf(m["tool_calls"]) {
			if c.ID == callID {
				return m
			}
		}
	}
	return nil
}

// restoredRound rebuilds a stripped round's assistant message from the
// calls as they ran: the original ids, the arguments as decided.
func restoredRound(calls []runner.ToolCallRequest, outs []runner.ToolOutcome) map[string]any {
	rebuilt := make([]runner.ToolCallRequest, len(calls))
	for i, c := range calls {
		rebuilt[i] = c
		if in := outs[i].Exec.Input; in != nil {
			b, _ := json.Marshal(in)
			rebuilt[i].Args = string(b)
		}
	}
	return map[string]any{"id": "round-" + calls[0].ID, "role": "assistant", "content": "", "tool_calls": callValues(rebuilt)}
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
