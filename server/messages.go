package server

import (
	"encoding/json"
	"strings"
)

// Messages cross the API in LangChain's form ({type: human|ai|tool|system,
// content, id, tool_calls: [{id, name, args}], tool_call_id}); runner's
// states keep them in OpenAI's ({role: user|assistant|tool|system,
// content, tool_calls: [{id, type: function, function: {name,
// arguments}}], tool_call_id}). The field named messages is converted at
// the boundary, both ways.

const messagesField = "messages"

var toType = map[string]string{"user": "human", "assistant": "ai", "tool": "tool", "system": "system"}
var toRole = map[string]string{"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant",
	"tool": "tool", "system": "system", "developer": "system"}

// outValues is a state (or update) as the API shows it: its messages in
// LangChain form.
func outValues(v map[string]any) map[string]any { return withMessages(v, toLangChain) }

// toLangChain converts one state message.
func toLangChain(m any) any {
	msg, ok := m.(map[string]any)
	if !ok {
		return m
	}
	role, _ := msg["role"].(string)
	out := map[string]any{"type": orStr(toType[role], role), "content": msg["content"]}
	for _, k := range []string{"id", "name", "tool_call_id"} {
		if v, ok := msg[k]; ok {
			out[k] = v
		}
	}
	if out["content"] == nil {
		out["content"] = ""
	}
	if calls, ok := msg["tool_calls"].([]any); ok && role == "assistant" {
		lc := make([]any, 0, len(calls))
		for _, c := range calls {
			cm, _ := c.(map[string]any)
			f, _ := cm["function"].(map[string]any)
			var args any = map[string]any{}
			if a, ok := f["arguments"].(string); ok && a != "" {
				_ = json.Unmarshal([]byte(a), &args)
			}
			lc = append(lc, map[string]any{"id": cm["id"], "name": f["name"], "args": args, "type": "tool_call"})
		}
		out["tool_calls"] = lc
	} else if role == "assistant" {
		out["tool_calls"] = []any{}
	}
	return out
}

// inValues is an input as the state takes it: its messages (a list, or
// one message) in runner's form.
func inValues(v map[string]any) map[string]any { return withMessages(v, fromLangChain) }

// withMessages returns v with each of its messages converted by conv; one
// message not in a list becomes a list of one.
func withMessages(v map[string]any, conv func(any) any) map[string]any {
	raw := v[messagesField]
	if raw == nil {
		return v
	}
	msgs, isList := raw.([]any)
	if !isList {
		msgs = []any{raw}
	}
	out := clone(v)
	converted := make([]any, len(msgs))
	for i, m := range msgs {
		converted[i] = conv(m)
	}
	out[messagesField] = converted
	return out
}

// fromLangChain converts one API message; a string is a human message.
func fromLangChain(m any) any {
	if s, ok := m.(string); ok {
		return map[string]any{"role": "user", "content": s}
	}
	msg, ok := m.(map[string]any)
	if !ok {
		return m
	}
	kind, _ := msg["type"].(string)
	if r, ok := msg["role"].(string); ok {
		kind = r
	}
	out := map[string]any{"role": orStr(toRole[kind], kind), "content": textOf(msg["content"])}
	for _, k := range []string{"id", "name", "tool_call_id"} {
		if v, ok := msg[k]; ok && v != "" && v != nil {
			out[k] = v
		}
	}
	if calls, ok := msg["tool_calls"].([]any); ok && len(calls) > 0 {
		oa := make([]any, 0, len(calls))
		for _, c := range calls {
			cm, _ := c.(map[string]any)
			if _, already := cm["function"]; already {
				oa = append(oa, cm)
				continue
			}
			args, _ := json.Marshal(cm["args"])
			oa = append(oa, map[string]any{"id": cm["id"], "type": "function",
				"function": map[string]any{"name": cm["name"], "arguments": string(args)}})
		}
		out["tool_calls"] = oa
	}
	return out
}

// textOf is a message's content as text: LangChain's content blocks are
// joined.
func textOf(c any) any {
	blocks, ok := c.([]any)
	if !ok {
		return c
	}
	var b strings.Builder
	for _, x := range blocks {
		if m, ok := x.(map[string]any); ok {
			if t, ok := m["text"].(string); ok {
				b.WriteString(t)
			}
		} else if s, ok := x.(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
