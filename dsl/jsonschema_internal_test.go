package dsl

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// TestSchemaReady: values as decoded JSON and expressions hold them go
// to the schema library as they are (toSchemaJSON hands over the same
// map); typed slices and maps, structs and NaN are the ones a schema
// check round-trips through JSON.
func TestSchemaReady(t *testing.T) {
	ready := []any{nil, true, "s", json.Number("1"), 1, int64(2), 2.5,
		[]any{1, "a", map[string]any{"k": []any{nil}}}, map[string]any{"a": map[string]any{"b": 1.5}}}
	for _, v := range ready {
		if !schemaReady(v) {
			t.Errorf("schemaReady(%#v) = false, want true", v)
		}
	}
	m := map[string]any{"a": []any{1.5}}
	if out, err := toSchemaJSON(m); err != nil || reflect.ValueOf(out).UnsafePointer() != reflect.ValueOf(m).UnsafePointer() {
		t.Errorf("toSchemaJSON of a ready map = %v, %v; want the map itself", out, err)
	}
	notReady := []any{[]string{"a"}, map[string]string{"a": "b"}, struct{ X int }{1}, math.NaN(),
		map[string]any{"deep": []any{math.Inf(1)}}, []any{uint8(1)}}
	for _, v := range notReady {
		if schemaReady(v) {
			t.Errorf("schemaReady(%#v) = true, want false", v)
		}
	}
}
