package runner_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner"
)

func TestReducers(t *testing.T) {
	call := func(id string) map[string]any {
		return map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": id}}}
	}
	reply := func(id string) map[string]any { return map[string]any{"role": "tool", "tool_call_id": id} }
	cases := []struct {
		name      string
		r         runner.Reducer
		old, upd  any
		want      any
		wantError string
	}{
		{"replace", runner.Replace, "a", "b", "b", ""},
		{"append one", runner.Append, []any{1}, 2, []any{1, 2}, ""},
		{"append list", runner.Append, []any{1}, []any{2, 3}, []any{1, 2, 3}, ""},
		{"append to nil", runner.Append, nil, "x", []any{"x"}, ""},
		{"append to scalar", runner.Append, "x", 1, nil, "not a list"},
		{"add ints", runner.Add, int64(2), 3, int64(5), ""},
		{"add floats", runner.Add, 0.5, int64(1), 1.5, ""},
		{"add to nil", runner.Add, nil, int64(4), int64(4), ""},
		{"add string", runner.Add, int64(1), "x", nil, "cannot add"},
		{"merge", runner.Merge, map[string]any{"a": 1, "b": 1}, map[string]any{"b": 2}, map[string]any{"a": 1, "b": 2}, ""},
		{"merge non-map", runner.Merge, map[string]any{}, 1, nil, "cannot merge"},
		{"messages pair", runner.Messages, []any{call("c1")}, reply("c1"), []any{call("c1"), reply("c1")}, ""},
		{"messages unknown call", runner.Messages, []any{call("c1")}, reply("c2"), nil, "unknown tool call c2"},
		{"messages answered twice", runner.Messages, []any{call("c1"), reply("c1")}, reply("c1"), nil, "answered twice"},
		{"messages replace by id", runner.Messages,
			[]any{map[string]any{"id": "m1", "content": "a"}}, map[string]any{"id": "m1", "content": "b"},
			[]any{map[string]any{"id": "m1", "content": "b"}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.r(c.old, c.upd)
			if c.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantError) {
					t.Fatalf("err = %v, want %q", err, c.wantError)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// TestAppendDoesNotAlias checks that appending to a field never writes
// into an array another value still holds.
func TestAppendDoesNotAlias(t *testing.T) {
	base := make([]any, 2, 10)
	a, _ := runner.Append(base, "a")
	b, _ := runner.Append(base, "b")
	if a.([]any)[2] != "a" || b.([]any)[2] != "b" {
		t.Fatalf("appends share an array: %v %v", a, b)
	}
}
