package builtins

import (
	"fmt"
	"strings"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// The state keeps chat messages as OpenAI-format JSON objects: role,
// content, tool_calls [{id, type: function, function: {name, arguments}}],
// tool_call_id; an "id" lets a node replace its own message (the messages
// reducer), and "cache" marks the end of the stable prompt prefix.

// promptFirst moves the messages a prompt node wrote to the front, in
// order: the stable prefix leads whatever came before it.
func promptFirst(msgs []any) []any {
	out := make([]any, 0, len(msgs))
	isPrompt := func(m any) bool {
		mm, _ := m.(map[string]any)
		return strings.HasPrefix(str(mm["id"]), promptID)
	}
	for _, m := range msgs {
		if isPrompt(m) {
			out = append(out, m)
		}
	}
	for _, m := range msgs {
		if !isPrompt(m) {
			out = append(out, m)
		}
	}
	return out
}

// messagesOf reads a state field of messages.
func messagesOf(v any) []runner.Message {
	list, _ := v.([]any)
	out := make([]runner.Message, 0, len(list))
	for _, item := range list {
		m, _ := item.(map[string]any)
		msg := runner.Message{Role: str(m["role"]), Content: str(m["content"]), ToolCallID: str(m["tool_call_id"]), Name: str(m["name"])}
		msg.Cache, _ = m["cache"].(bool)
		msg.ToolCalls = callsOf(m["tool_calls"])
		out = append(out, msg)
	}
	return out
}

// callsOf reads OpenAI-format tool calls.
func callsOf(v any) []runner.ToolCallRequest {
	list, _ := v.([]any)
	var out []runner.ToolCallRequest
	for _, item := range list {
		c, _ := item.(map[string]any)
		f, _ := c["function"].(map[string]any)
		out = append(out, runner.ToolCallRequest{ID: str(c["id"]), Name: str(f["name"]), Args: str(f["arguments"])})
	}
	return out
}

// messageValue is a message as the state keeps it.
func messageValue(m runner.Message) map[string]any {
	v := map[string]any{"role": m.Role, "content": m.Content}
	if len(m.ToolCalls) > 0 {
		v["tool_calls"] = callValues(m.ToolCalls)
	}
	if m.ToolCallID != "" {
		v["tool_call_id"] = m.ToolCallID
	}
	if m.Name != "" {
		v["name"] = m.Name
	}
	if m.Cache {
		v["cache"] = true
	}
	return v
}

func callValues(calls []runner.ToolCallRequest) []any {
	out := make([]any, 0, len(calls))
	for _, c := range calls {
		out = append(out, map[string]any{"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args}})
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// toolSet is the tools an llm or tools node can see: its own (core) tools,
// the agent's, and those of the skills loaded — the agent's skills with
// what they require, and those a skills expression names at run time —
// de-duplicated by name, in that order.
type toolSet struct {
	core    []*runner.ToolSpec
	bySkill map[string][]*runner.ToolSpec // every skill the node may load
	skills  *dsl.Program                  // names more skills, at run time
	static  []string                      // the agent's skills and their requirements
}

// newToolSet compiles what a node may offer.
func newToolSet(b *dsl.Build, core []dsl.ToolRef, skills *dsl.Program) (*toolSet, error) {
	ts := &toolSet{bySkill: map[string][]*runner.ToolSpec{}, skills: skills}
	names := refNames(core)
	if b.Agent != nil {
		names = append(names, b.Agent.Tools...)
		ts.static = requiredSkills(b, b.Agent.Skills)
	}
	var err error
	if ts.core, err = specs(b, names); err != nil {
		return nil, err
	}
	loadable := ts.static
	if skills != nil {
		loadable = sortedKeys(b.Project.Skills)
	}
	for _, name := range loadable {
		if ts.bySkill[name], err = specs(b, b.Skill(name).Tools); err != nil {
			return nil, fmt.Errorf("skill %s: %w", name, err)
		}
	}
	return ts, nil
}

// requiredSkills returns skills with every skill they require, in order.
func requiredSkills(b *dsl.Build, skills []string) []string {
	var out []string
	seen := map[string]bool{}
	var add func(string)
	add = func(name string) {
		s := b.Skill(name)
		if seen[name] || s == nil {
			return
		}
		seen[name] = true
		out = append(out, name)
		for _, r := range s.Requires {
			add(r)
		}
	}
	for _, s := range skills {
		add(s)
	}
	return out
}

func specs(b *dsl.Build, names []string) ([]*runner.ToolSpec, error) {
	out := make([]*runner.ToolSpec, 0, len(names))
	for _, n := range names {
		spec, err := b.Tool(n)
		if err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	return out, nil
}

func refNames(refs []dsl.ToolRef) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.Name)
	}
	return out
}

// visible returns the tools offered in the state described by vars.
func (ts *toolSet) visible(vars map[string]any) ([]*runner.ToolSpec, error) {
	loaded := ts.static
	if ts.skills != nil {
		v, err := ts.skills.Eval(vars)
		if err != nil {
			return nil, fmt.Errorf("skills: %w", err)
		}
		list, _ := v.([]any)
		for _, s := range list {
			loaded = append(loaded, fmt.Sprint(s))
		}
	}
	seen := map[string]bool{}
	var out []*runner.ToolSpec
	add := func(specs []*runner.ToolSpec) {
		for _, s := range specs {
			if !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, s)
			}
		}
	}
	add(ts.core)
	for _, s := range loaded {
		add(ts.bySkill[s])
	}
	return out, nil
}

// schemas is what the model sees of tools.
func schemas(specs []*runner.ToolSpec) []runner.ToolSchema {
	out := make([]runner.ToolSchema, 0, len(specs))
	for _, s := range specs {
		out = append(out, runner.ToolSchema{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
	}
	return out
}
