package builtins

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

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

// replyID names a model's reply by its call number and a digest of the
// conversation it answers and of what it says: the same on a replay (a
// resume, a crash, a run without a gate), another on a branch of the
// thread where the conversation or the answer differs (an edited
// message, a regenerated answer), as a client that finds a message's
// checkpoints by its id needs (the SDK's useStream, for agent-chat-ui's
// edit and regenerate).
func replyID(call int64, msgs []runner.Message, reply runner.Message) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(msgs) // a hash.Hash never fails a write
	_ = enc.Encode(reply)
	return fmt.Sprintf("ai-%d-%x", call, h.Sum(nil)[:4])
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
