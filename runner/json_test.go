package runner_test

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/runner-dev/runner/runner"
)

func TestNormalizeJSON(t *testing.T) {
	type rec struct {
		Name  string `json:"name"`
		Count int    `json:"count"`
	}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"string", "x", "x"},
		{"int64", int64(3), int64(3)},
		{"float64", 2.5, 2.5},
		{"json integer", json.Number("3"), int64(3)},
		{"json float", json.Number("3.5"), 3.5},
		{"json huge", json.Number("1e400"), "1e400"},
		{"int", 3, int64(3)},
		{"int32", int32(-3), int64(-3)},
		{"uint8", uint8(7), int64(7)},
		{"uint64 over int64", uint64(math.MaxUint64), float64(math.MaxUint64)},
		{"float32", float32(0.5), 0.5},
		{"typed slice", []int{1, 2}, []any{int64(1), int64(2)}},
		{"string slice", []string{"a"}, []any{"a"}},
		{"nil slice", []string(nil), nil},
		{"typed map", map[string]int{"a": 1}, map[string]any{"a": int64(1)}},
		{"named map", runner.Update{"n": 1}, map[string]any{"n": int64(1)}},
		{"nested", map[string]any{"l": []any{map[string]any{"n": 2}}}, map[string]any{"l": []any{map[string]any{"n": int64(2)}}}},
		{"struct", rec{"a", 2}, map[string]any{"name": "a", "count": int64(2)}},
		{"pointer", &rec{"b", 1}, map[string]any{"name": "b", "count": int64(1)}},
		{"nil pointer", (*rec)(nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runner.NormalizeJSON(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("NormalizeJSON(%#v) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

// TestNormalizeJSONCopies: values that enter a run may be shared (a
// tool's result may be part of the state), so normalising never writes
// to them.
func TestNormalizeJSONCopies(t *testing.T) {
	inner := []any{1, "x"}
	in := map[string]any{"l": inner, "s": "same"}
	got := runner.NormalizeJSON(in).(map[string]any)
	if _, ok := in["l"].([]any)[0].(int); !ok || inner[0] != 1 {
		t.Errorf("the input changed: %#v", in)
	}
	if got["l"].([]any)[0] != int64(1) {
		t.Errorf("got %#v, want the list's integer as int64", got)
	}
	same := map[string]any{"n": int64(1), "l": []any{"a"}}
	if out := runner.NormalizeJSON(same).(map[string]any); reflect.ValueOf(out).Pointer() != reflect.ValueOf(same).Pointer() {
		t.Error("a value that needs no change was copied")
	}
}

func TestDecodeJSON(t *testing.T) {
	got, err := runner.DecodeJSON([]byte(`{"n": 3, "f": 1.5, "l": [1, 2.0]}`))
	want := map[string]any{"n": int64(3), "f": 1.5, "l": []any{int64(1), 2.0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeJSON = %#v, %v; want %#v", got, err, want)
	}
	if _, err := runner.DecodeJSON([]byte(`{} {}`)); err == nil {
		t.Error("two values: no error")
	}
}

// TestEntriesNormalize: the input, a resume value and a tool's result
// reach nodes, rules and the state with integers as int64, whatever Go
// types their producer used.
func TestEntriesNormalize(t *testing.T) {
	ctx := context.Background()
	var seen struct{ input, resume, output any }
	tool := &runner.ToolSpec{Name: "count", Tool: runner.ToolFunc(func(context.Context, *runner.ToolCall) (any, error) {
		return map[string]any{"n": 2, "ids": []int{1, 2}}, nil
	})}
	node := fn(func(ctx context.Context, in *runner.Input) (runner.Update, error) {
		if !in.Resumed {
			seen.input = in.Vars()["input"]
			return nil, &runner.Interrupt{Kind: "approval"}
		}
		seen.resume = in.Resume
		o, err := in.Run.CallTool(ctx, runner.ToolRequest{Spec: tool, Args: map[string]any{}})
		if err != nil {
			return nil, err
		}
		seen.output = o.Exec.Output
		return runner.Update{"out": o.Exec.Output}, nil
	})
	g := oneNode(node, nil)
	g.Fields["n"] = runner.Field{Reducer: runner.Replace}
	e := &runner.Engine{Store: newStore(t)}
	if _, err := e.Run(ctx, g, "t", map[string]any{"n": 3}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{"k": int32(4)}})
	if err != nil || res.Status != runner.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"input", seen.input, map[string]any{"n": int64(3)}},
		{"state from input", res.State["n"], int64(3)},
		{"resume value", seen.resume, map[string]any{"k": int64(4)}},
		{"tool result", seen.output, map[string]any{"n": int64(2), "ids": []any{int64(1), int64(2)}}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.what, c.got, c.want)
		}
	}
}
