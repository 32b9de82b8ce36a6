package runner

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// TestRecordVars checks that what rules see of each record has exactly the
// record's JSON names: the names validate type-checks (dsl derives them
// from the structs) are the names the runtime writes.
func TestRecordVars(t *testing.T) {
	cases := []struct {
		name   string
		record any
		vars   map[string]any
	}{
		{"ToolInfo", &ToolInfo{}, (&ToolInfo{}).Vars()},
		{"ToolExecution", &ToolExecution{}, (&ToolExecution{}).vars()},
		{"ToolExecution.Value", &ToolExecution{}, (&ToolExecution{}).Value()},
		{"LLMCall", &LLMCall{}, (&LLMCall{}).vars()},
		{"AgentInfo", &AgentInfo{}, (&AgentInfo{}).vars()},
	}
	for _, c := range cases {
		raw, _ := json.Marshal(c.record)
		var fields map[string]any
		_ = json.Unmarshal(raw, &fields)
		if got, want := slices.Sorted(maps.Keys(c.vars)), slices.Sorted(maps.Keys(fields)); !slices.Equal(got, want) {
			t.Errorf("%s: variables %v, JSON fields %v", c.name, got, want)
		}
	}
}

func TestGuardAdmits(t *testing.T) {
	g := &Guard{Field: "capability_key", Values: []string{"create_entity", "update_entity"}, Prefixes: []string{"batch_"}}
	for capability, want := range map[string]bool{"create_entity": true, "batch_create": true, "read": false, "": false, "batch": false} {
		if got := g.Admits(&ToolInfo{Name: "t", CapabilityKey: capability}); got != want {
			t.Errorf("admits(%q) = %v, want %v", capability, got, want)
		}
	}
	if !(*Guard)(nil).Admits(&ToolInfo{}) || !g.Admits(nil) {
		t.Error("no guard, or no tool (a model call), must admit")
	}
}
