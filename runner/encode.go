package runner

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// encodeJSON encodes a checkpoint's state or writes as encoding/json
// does (map keys sorted, HTML characters escaped), without its reflection
// for the JSON-like values of a state; other values go through
// json.Marshal.
func encodeJSON(v any) ([]byte, error) {
	return appendJSON(make([]byte, 0, 256), v)
}

// appendJSON appends the encoding of v to b.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendString(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case float64:
		return appendFloat(b, x, v)
	case []any:
		return appendList(b, x)
	case map[string]any:
		return appendObject(b, x)
	case State:
		return appendObject(b, x)
	case Update:
		return appendObject(b, x)
	}
	out, err := json.Marshal(v)
	return append(b, out...), err
}

// appendString appends s quoted; a string with a character encoding/json
// escapes goes through it.
func appendString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			out, err := json.Marshal(s)
			return append(b, out...), err
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// appendFloat appends f as encoding/json does: integers and numbers of
// moderate size in decimal, others in exponent form; NaN and infinities
// are an error.
func appendFloat(b []byte, f float64, v any) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		_, err := json.Marshal(v)
		return b, err
	}
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		out, err := json.Marshal(f)
		return append(b, out...), err
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), nil
}

func appendList(b []byte, list []any) ([]byte, error) {
	if list == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, e := range list {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendJSON(b, e); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

func appendObject(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendString(b, k); err != nil {
			return b, err
		}
		b = append(b, ':')
		if b, err = appendJSON(b, m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}
