package runner

import (
	"reflect"
	"testing"
)

// TestListsGrowInPlace: a run's append grows the list it made in place,
// and never changes a list someone else holds.
func TestListsGrowInPlace(t *testing.T) {
	l := lists{}
	var v any
	arrays := map[*any]bool{}
	for i := range 1000 {
		v, _ = l.append("g", v, i)
		arrays[&v.([]any)[0]] = true
	}
	if len(v.([]any)) != 1000 || len(arrays) > 20 {
		t.Errorf("1,000 appends: %d elements in %d arrays, want 1,000 in a few", len(v.([]any)), len(arrays))
	}
	a, _ := l.append("f", nil, "x")
	b, _ := l.append("f", a, []any{"y"})
	c, _ := l.append("f", a, "z") // a is not the newest: copied
	if &c.([]any)[0] == &b.([]any)[0] {
		t.Error("an older list was grown in place")
	}
	mine := append(b.([]any), "mine") // the state's list is clipped: append copies
	d, _ := l.append("f", c, "w")
	for _, tc := range []struct {
		got  any
		want []any
	}{{a, []any{"x"}}, {b, []any{"x", "y"}}, {c, []any{"x", "z"}}, {d, []any{"x", "z", "w"}}, {mine, []any{"x", "y", "mine"}}} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("list = %v, want %v", tc.got, tc.want)
		}
	}
	if _, err := l.append("f", "s", "x"); err == nil {
		t.Error("append to a string: no error")
	}
}
