package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
)

// DecodeJSON decodes one JSON value into the JSON-like values of state:
// integers as int64, other numbers as float64.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return NormalizeJSON(v), nil
}

// NormalizeJSON returns v as the JSON-like values of state: every integer
// (a json.Number, an int of any size) as int64, every other number as
// float64, slices as []any and maps with string keys as map[string]any,
// deeply; a struct becomes what its JSON encoding decodes to. It is the
// one normaliser of every value that enters a run — the input, resume
// values, tool results, decoded LLM replies, expression results — so
// that CEL and expr see the same values wherever they came from. It
// never modifies v: the parts that change are copied.
func NormalizeJSON(v any) any {
	out, _ := normalize(v)
	return out
}

// normalize is NormalizeJSON; it reports whether v changed.
func normalize(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool, string, int64, float64:
		return v, false
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, true
		}
		f, err := x.Float64()
		if err != nil {
			return x.String(), true
		}
		return f, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case float32:
		return float64(x), true
	case []any:
		return normalizeList(x)
	case map[string]any:
		return normalizeMap(x)
	}
	return normalizeReflect(reflect.ValueOf(v))
}

// CloneJSON deep-copies a JSON-like value: its maps and lists are new,
// so a change to the copy never shows in v (a field's default, shared
// between threads; a tool's bundled data, shared between calls).
func CloneJSON(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = CloneJSON(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k := range x {
			out[k] = CloneJSON(x[k])
		}
		return out
	}
	return v
}

// normalizeList normalizes a list's items, copying it only if one changes.
func normalizeList(l []any) (any, bool) {
	var out []any
	for i, item := range l {
		if n, changed := normalize(item); changed {
			if out == nil {
				out = slices.Clone(l)
			}
			out[i] = n
		}
	}
	if out == nil {
		return l, false
	}
	return out, true
}

// normalizeMap normalizes a map's values, copying it only if one changes.
func normalizeMap(m map[string]any) (any, bool) {
	var out map[string]any
	for k, item := range m {
		if n, changed := normalize(item); changed {
			if out == nil {
				out = maps.Clone(m)
			}
			out[k] = n
		}
	}
	if out == nil {
		return m, false
	}
	return out, true
}

// normalizeReflect normalizes the values of other Go types: sized
// integers and floats, typed slices and maps (an expr range is []int),
// named map types, structs and pointers.
func normalizeReflect(rv reflect.Value) (any, bool) {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := rv.Uint(); u <= math.MaxInt64 {
			return int64(u), true
		}
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	case reflect.String:
		return rv.String(), true
	case reflect.Bool:
		return rv.Bool(), true
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, true
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = NormalizeJSON(rv.Index(i).Interface())
		}
		return out, true
	case reflect.Map:
		if rv.IsNil() {
			return nil, true
		}
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			out[fmt.Sprint(it.Key().Interface())] = NormalizeJSON(it.Value().Interface())
		}
		return out, true
	case reflect.Pointer:
		if rv.IsNil() {
			return nil, true
		}
		return normalizeViaJSON(rv.Interface())
	case reflect.Struct:
		return normalizeViaJSON(rv.Interface())
	}
	return rv.Interface(), false
}

// normalizeViaJSON turns a value into what its JSON encoding decodes to;
// a value that cannot be encoded is left as it is.
func normalizeViaJSON(v any) (any, bool) {
	data, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	out, err := DecodeJSON(data)
	if err != nil {
		return v, false
	}
	return out, true
}

// normalizeObject is NormalizeJSON for an object; nil stays nil.
func normalizeObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out, _ := NormalizeJSON(m).(map[string]any)
	return out
}
