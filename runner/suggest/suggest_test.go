package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"fraud_investigator", "ops_assistant", "rule_37", "rule_32"}
	for _, c := range []struct{ name, want string }{
		{"fraud_investigater", "fraud_investigator"},
		{"ops_asistant", "ops_assistant"},
		{"RULE_37", "rule_37"},
		{"rule_3", "rule_32"}, // ties go to the first in order
		{"nope", ""},
		{"", ""},
	} {
		if got := Closest(c.name, names); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	if got := DidYouMean("ops_asistant", names); got != `did you mean "ops_assistant"?` {
		t.Errorf("DidYouMean = %q", got)
	}
	if got := DidYouMean("zzz", names); got != "" {
		t.Errorf("DidYouMean of nothing close = %q, want empty", got)
	}
}
