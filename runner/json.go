package runner

import (
	"bytes"
	"encoding/json"
	"errors"
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

// NormalizeJSON turns the json.Numbers of a decoded value into int64 or
// float64, deeply and in place, and returns it.
func NormalizeJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = NormalizeJSON(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = NormalizeJSON(x[k])
		}
	}
	return v
}
