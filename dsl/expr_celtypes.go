package dsl

import (
	"fmt"
	"math"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/runner-dev/runner/runner"
)

// maxTypeDepth bounds how deep declared types are mapped to CEL types, so
// that a self-referencing Type cannot recurse forever.
const maxTypeDepth = 32

// celProvider adds a struct type for every closed object of an Env to a base
// provider. Fields are read from map[string]any values at runtime, so that
// `state.status` type-checks against the declaration and evaluates on the
// JSON-like state. It is immutable once built.
type celProvider struct {
	types.Provider
	structs map[string]*celStruct
}

// celStruct is the CEL view of one closed object type.
type celStruct struct {
	typ    *types.Type
	names  []string
	fields map[string]*types.FieldType
}

// celType maps a declared type to a CEL type, defining struct types for
// closed objects; path names the value for the struct's type name.
func (p *celProvider) celType(t *Type, path string, depth int) *types.Type {
	if t == nil || depth > maxTypeDepth {
		return types.DynType
	}
	switch t.Kind {
	case String:
		return types.StringType
	case Integer:
		return types.IntType
	case Number:
		return types.DoubleType
	case Boolean:
		return types.BoolType
	case Array:
		return types.NewListType(p.celType(t.Items, path+"[]", depth+1))
	case Object:
		if t.Fields == nil {
			return types.NewMapType(types.StringType, types.DynType)
		}
		return p.define(t, path, depth)
	}
	return types.DynType
}

// define adds the struct type of closed object t. Its name cannot be written
// as an identifier, so expressions cannot construct or shadow it.
func (p *celProvider) define(t *Type, path string, depth int) *types.Type {
	name := "object(" + path + ")"
	st := &celStruct{typ: types.NewObjectType(name), names: t.FieldNames(),
		fields: make(map[string]*types.FieldType, len(t.Fields))}
	p.structs[name] = st
	for f, ft := range t.Fields {
		st.fields[f] = &types.FieldType{
			Type:    p.celType(ft, path+"."+f, depth+1),
			IsSet:   fieldTester(f),
			GetFrom: fieldGetter(f, normalizerFor(ft, 0)),
		}
	}
	return st.typ
}

// FindStructType returns the type of a closed object, or asks the base provider.
func (p *celProvider) FindStructType(name string) (*types.Type, bool) {
	if st, ok := p.structs[name]; ok {
		return types.NewTypeTypeWithParam(st.typ), true
	}
	return p.Provider.FindStructType(name)
}

// FindStructFieldNames returns the declared fields of a closed object.
func (p *celProvider) FindStructFieldNames(name string) ([]string, bool) {
	if st, ok := p.structs[name]; ok {
		return st.names, true
	}
	return p.Provider.FindStructFieldNames(name)
}

// FindStructFieldType returns a declared field's type and accessors.
func (p *celProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if st, ok := p.structs[name]; ok {
		ft, ok := st.fields[field]
		return ft, ok
	}
	return p.Provider.FindStructFieldType(name, field)
}

// NewValue refuses to build closed objects: they only come from variables.
func (p *celProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := p.structs[name]; ok {
		return types.NewErr("cannot construct %s", name)
	}
	return p.Provider.NewValue(name, fields)
}

// fieldTester reports whether a map holds field (has(state.x)).
func fieldTester(field string) ref.FieldTester {
	return func(obj any) bool {
		_, ok, _ := lookupField(obj, field)
		return ok
	}
}

// fieldGetter reads field from a map; a missing field reads as null.
func fieldGetter(field string, norm normalizer) ref.FieldGetter {
	return func(obj any) (any, error) {
		v, ok, err := lookupField(obj, field)
		if !ok || norm == nil {
			return v, err
		}
		v, _ = norm(v)
		return v, nil
	}
}

func lookupField(obj any, field string) (any, bool, error) {
	switch m := obj.(type) {
	case map[string]any:
		v, ok := m[field]
		return v, ok, nil
	case runner.State:
		v, ok := m[field]
		return v, ok, nil
	}
	if m, ok := types.DefaultTypeAdapter.NativeToValue(obj).(traits.Mapper); ok {
		v, found := m.Find(types.String(field))
		return v, found, nil
	}
	return nil, false, fmt.Errorf("no such field %q on %s", field, kindOfValue(obj))
}

// normalizer converts a JSON-decoded value to the representation CEL
// expects for its declared type: integral float64 to int64 for integers,
// integers to float64 for numbers. It reports whether the value changed;
// values it cannot convert pass unchanged.
type normalizer func(any) (any, bool)

// normalizerFor returns t's normalizer, or nil if t needs none.
func normalizerFor(t *Type, depth int) normalizer {
	if t == nil || depth > maxTypeDepth {
		return nil
	}
	switch t.Kind {
	case Integer:
		return toInt64
	case Number:
		return toFloat64
	case Array:
		if n := normalizerFor(t.Items, depth+1); n != nil {
			return func(v any) (any, bool) { return normalizeList(v, n) }
		}
	}
	return nil
}

func toInt64(v any) (any, bool) {
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return int64(f), true
	}
	return v, false
}

func toFloat64(v any) (any, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	}
	return v, false
}

// normalizeList normalizes a list's items, copying it only if one changes.
func normalizeList(v any, n normalizer) (any, bool) {
	list, ok := v.([]any)
	if !ok {
		return v, false
	}
	var out []any
	for i, item := range list {
		norm, changed := n(item)
		if out == nil && changed {
			out = append(make([]any, 0, len(list)), list[:i]...)
		}
		if out != nil {
			out = append(out, norm)
		}
	}
	if out == nil {
		return list, false
	}
	return out, true
}

// celNative converts a CEL result to a JSON-like Go value.
func celNative(v ref.Val) (any, error) {
	switch v := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		if v > math.MaxInt64 {
			return float64(v), nil
		}
		return int64(v), nil
	case types.Double:
		return float64(v), nil
	case types.String:
		return string(v), nil
	case types.Bytes:
		return string(v), nil
	case *types.Err:
		return nil, v
	case traits.Lister:
		return celList(v)
	case traits.Mapper:
		return celMap(v)
	}
	return fmt.Sprint(v.Value()), nil
}

func celList(l traits.Lister) (any, error) {
	if raw, ok := l.Value().([]any); ok {
		return raw, nil
	}
	out := make([]any, 0, int(l.Size().(types.Int)))
	for it := l.Iterator(); it.HasNext() == types.True; {
		item, err := celNative(it.Next())
		if err != nil {
			return nil, err
		}
		out = append(out, item)
	}
	return out, nil
}

func celMap(m traits.Mapper) (any, error) {
	if raw, ok := m.Value().(map[string]any); ok {
		return raw, nil
	}
	out := make(map[string]any, int(m.Size().(types.Int)))
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		v, err := celNative(m.Get(k))
		if err != nil {
			return nil, err
		}
		if s, ok := k.(types.String); ok {
			out[string(s)] = v
		} else {
			out[fmt.Sprint(k.Value())] = v
		}
	}
	return out, nil
}
