package runner_test

import (
	"context"
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
	replyWithID := func(id string) map[string]any {
		return map[string]any{"id": "tool-" + id, "role": "tool", "tool_call_id": id}
	}
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
		{"readonly refuses an update", runner.Readonly, map[string]any{"a": 1}, map[string]any{"a": 2}, nil, "readonly"},
		{"readonly refuses the same value", runner.Readonly, "x", "x", nil, "readonly"},
		{"readonly refuses a first write", runner.Readonly, nil, "x", nil, "readonly"},
		{"messages pair", runner.Messages, []any{call("c1")}, replyWithID("c1"), []any{call("c1"), replyWithID("c1")}, ""},
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

// TestMessageIDs: the messages reducer keeps a message's id and gives one
// to a message that has none, the same for the same run, and never the
// same to two messages a field holds.
func TestMessageIDs(t *testing.T) {
	hi := map[string]any{"role": "user", "content": "hi"}
	first, err := runner.Messages(nil, []any{hi, hi, map[string]any{"id": "mine", "role": "user", "content": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := runner.Messages(nil, []any{hi, hi, map[string]any{"id": "mine", "role": "user", "content": "x"}})
	if !reflect.DeepEqual(first, again) {
		t.Errorf("ids differ between two runs of the same update:\n%v\n%v", first, again)
	}
	more, _ := runner.Messages(first, hi)
	ids := map[string]bool{}
	for _, m := range more.([]any) {
		id, _ := m.(map[string]any)["id"].(string)
		if id == "" || ids[id] {
			t.Fatalf("message %v: id missing or repeated in %v", m, more)
		}
		ids[id] = true
	}
	if !ids["mine"] {
		t.Errorf("the given id was not kept: %v", more)
	}
	if _, ok := hi["id"]; ok {
		t.Errorf("the update's message was changed: %v", hi)
	}
}

// TestMessageIDsInUpdates: a step's recorded and streamed update holds the
// ids its messages are stored with, and a state rebuilt from the store
// has them too.
func TestMessageIDsInUpdates(t *testing.T) {
	say := fn(func(context.Context, *runner.Input) (runner.Update, error) {
		return runner.Update{"messages": map[string]any{"role": "assistant", "content": "hello"}}, nil
	})
	g := &runner.Graph{Name: "ids", Start: "say", Hash: "h", Fields: map[string]runner.Field{"messages": {Reducer: runner.Messages}},
		Nodes: map[string]*runner.Step{"say": {Name: "say", Node: say, Routes: []runner.Route{{To: runner.End}}}}}
	var streamed any
	e := &runner.Engine{Store: newStore(t), Sink: func(ev runner.Event) {
		if ev.Type == runner.EventNodeEnd {
			streamed = ev.Data.(map[string]any)["update"].(runner.Update)["messages"]
		}
	}}
	res, err := e.Run(context.Background(), g, "t", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	stored := res.State["messages"].([]any)
	if len(stored) != 2 || !reflect.DeepEqual(streamed, stored[1:]) {
		t.Fatalf("streamed %v, stored %v; want the stored message streamed", streamed, stored)
	}
	ts, err := e.State(context.Background(), g, "t", 0)
	if err != nil || !reflect.DeepEqual(ts.State["messages"], stored) {
		t.Fatalf("rebuilt %v, %v; want %v", ts.State["messages"], err, stored)
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

// TestReadonlyField checks that a readonly field takes the run's input or
// its default, and that a node updating it fails the run with an error
// naming the field, leaving the state as it was.
func TestReadonlyField(t *testing.T) {
	graph := func(node runner.Node) *runner.Graph {
		return &runner.Graph{Name: "ro", Start: "work", Hash: "h",
			Fields: map[string]runner.Field{
				"input": {Reducer: runner.Readonly, Default: map[string]any{"message": "default"}},
				"seen":  {Reducer: runner.Replace},
			},
			Nodes: map[string]*runner.Step{"work": {Name: "work", Node: node, Routes: []runner.Route{{To: runner.End}}}},
		}
	}
	read := fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
		return runner.Update{"seen": in.State["input"].(map[string]any)["message"]}, nil
	})
	for _, c := range []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"default", nil, "default"},
		{"run input", map[string]any{"input": map[string]any{"message": "from input"}}, "from input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := (&runner.Engine{}).Run(context.Background(), graph(read), "t", c.input)
			if err != nil || res.Status != runner.StatusCompleted || res.State["seen"] != c.want {
				t.Fatalf("got %v %+v, want seen = %q", err, res, c.want)
			}
		})
	}
	write := fn(func(context.Context, *runner.Input) (runner.Update, error) {
		return runner.Update{"seen": "written", "input": map[string]any{"message": "rewritten"}}, nil
	})
	res, err := (&runner.Engine{Store: newStore(t)}).Run(context.Background(), graph(write), "t", map[string]any{"input": map[string]any{"message": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runner.StatusFailed || res.Error == nil || !strings.Contains(res.Error.Message, "node work: field input: readonly") {
		t.Fatalf("status %s, error %+v; want failed naming field input", res.Status, res.Error)
	}
	if res.State["input"].(map[string]any)["message"] != "hi" || res.State["seen"] != nil {
		t.Errorf("the refused update changed the state: %v", res.State)
	}
}
