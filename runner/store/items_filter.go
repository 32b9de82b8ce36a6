package store

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Condition is one test of an item search's filter: the value's field at
// Path (an object's keys, one level each) compared with Value by Op.
type Condition struct {
	Path []string
	Op   string
	// Value is a JSON value as encoding/json decodes it with UseNumber.
	Value any
}

// The operators of a Condition: $eq and $ne compare any JSON values
// (numbers by value); the others compare two numbers or two strings, and
// fail on anything else. A field the value does not have is not equal to
// anything, and fails every other operator.
const (
	OpEq  = "$eq"
	OpNe  = "$ne"
	OpGt  = "$gt"
	OpGte = "$gte"
	OpLt  = "$lt"
	OpLte = "$lte"
)

var operators = []string{OpEq, OpNe, OpGt, OpGte, OpLt, OpLte}

// ParseFilter turns a search filter as the API gives it into conditions:
// each key is a field path (dots between an object's keys: "author.name"),
// each value what the field must equal, or an object of operators
// ({"$gt": 3, "$lt": 9}). The conditions come in the order of their keys.
func ParseFilter(filter map[string]any) ([]Condition, error) {
	var out []Condition
	for _, field := range slices.Sorted(maps.Keys(filter)) {
		path := strings.Split(field, ".")
		if slices.Contains(path, "") {
			return nil, fmt.Errorf("filter field %q: an empty key in its path", field)
		}
		ops, isObj := filter[field].(map[string]any)
		if isObj && slices.ContainsFunc(slices.Collect(maps.Keys(ops)), func(k string) bool { return strings.HasPrefix(k, "$") }) {
			for _, op := range slices.Sorted(maps.Keys(ops)) {
				if !slices.Contains(operators, op) {
					return nil, fmt.Errorf("filter field %q: unknown operator %q (known: %s)", field, op, strings.Join(operators, ", "))
				}
				out = append(out, Condition{Path: path, Op: op, Value: ops[op]})
			}
			continue
		}
		out = append(out, Condition{Path: path, Op: OpEq, Value: filter[field]})
	}
	return out, nil
}

// Matches reports whether the JSON object value meets every condition.
func Matches(value json.RawMessage, conds []Condition) (bool, error) {
	if len(conds) == 0 {
		return true, nil
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return false, fmt.Errorf("store: an item's value is not JSON: %w", err)
	}
	for _, c := range conds {
		if !c.holds(v) {
			return false, nil
		}
	}
	return true, nil
}

// holds reports whether the condition holds for the decoded value v.
func (c Condition) holds(v any) bool {
	for _, k := range c.Path {
		obj, _ := v.(map[string]any) // a nil map for a value that is not an object: the field is missing
		var ok bool
		if v, ok = obj[k]; !ok {
			return c.Op == OpNe
		}
	}
	switch c.Op {
	case OpEq:
		return equalJSON(v, c.Value)
	case OpNe:
		return !equalJSON(v, c.Value)
	}
	order, ok := compareJSON(v, c.Value)
	if !ok {
		return false
	}
	switch c.Op {
	case OpGt:
		return order > 0
	case OpGte:
		return order >= 0
	case OpLt:
		return order < 0
	}
	return order <= 0 // OpLte
}

// compareJSON orders two numbers or two strings; ok is false for any
// other pair.
func compareJSON(a, b any) (order int, ok bool) {
	if x, isNum := number(a); isNum {
		y, isNum := number(b)
		return cmp.Compare(x, y), isNum
	}
	x, isStr := a.(string)
	y, isStr2 := b.(string)
	return strings.Compare(x, y), isStr && isStr2
}

// equalJSON compares two decoded JSON values, numbers by value.
func equalJSON(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && len(x) == len(y) && !slices.ContainsFunc(slices.Collect(maps.Keys(x)), func(k string) bool {
			w, in := y[k]
			return !in || !equalJSON(x[k], w)
		})
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equalJSON)
	}
	return reflect.DeepEqual(a, b) // strings, booleans, null
}

// number is a decoded JSON number as a float64.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	}
	return 0, false
}
