package server

import (
	"reflect"
	"testing"
)

// TestMessages converts messages both ways: LangChain's form in, runner's
// (OpenAI's) in the state, LangChain's out.
func TestMessages(t *testing.T) {
	in := inValues(map[string]any{"messages": map[string]any{"type": "human", "content": []any{map[string]any{"type": "text", "text": "hi"}}}})
	if want := []any{map[string]any{"role": "user", "content": "hi"}}; !reflect.DeepEqual(in["messages"], want) {
		t.Errorf("one human message in = %v, want %v", in["messages"], want)
	}
	ai := map[string]any{"id": "m1", "type": "ai", "content": "", "tool_calls": []any{map[string]any{"id": "c1", "name": "act", "args": map[string]any{"x": 1.0}}}}
	state := inValues(map[string]any{"messages": []any{ai}})["messages"].([]any)[0].(map[string]any)
	call := state["tool_calls"].([]any)[0].(map[string]any)
	if state["role"] != "assistant" || call["function"].(map[string]any)["arguments"] != `{"x":1}` {
		t.Errorf("ai message in = %v", state)
	}
	out := outValues(map[string]any{"messages": []any{state}})["messages"].([]any)[0].(map[string]any)
	want := map[string]any{"id": "m1", "type": "ai", "content": "", "tool_calls": []any{map[string]any{"id": "c1", "name": "act", "args": map[string]any{"x": 1.0}, "type": "tool_call"}}}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("ai message round trip = %v, want %v", out, want)
	}
}
