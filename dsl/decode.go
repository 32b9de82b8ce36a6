package dsl

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decode decodes the value at n into v; a missing node leaves v as it is.
// Each value that does not fit — a duration or an integer out of range, a
// type the schema let through — is reported at its own line:col, named by
// its path from what (limits.timeout, nodes.x.with). It reports whether
// everything decoded. A value the schema refused is not decoded.
func (k *check) decode(d *Document, n *yaml.Node, v any, what string) bool {
	if n == nil {
		return true
	}
	if k.bad(n) {
		return false
	}
	err := n.Decode(v)
	if err == nil {
		return true
	}
	found := false
	locateDecodeErrors(n, reflect.TypeOf(v).Elem(), what, func(at *yaml.Node, msg string) {
		k.diags.Errorf(d.Pos(at), CodeSchemaValue, "%s", msg)
		found = true
	})
	if !found { // not expected: the walk mirrors the decoder
		k.diags.Errorf(d.Pos(n), CodeSchemaValue, "%s: %s", what, cleanDecodeError(err))
	}
	return false
}

var (
	durationType    = reflect.TypeFor[time.Duration]()
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	integerLiteral  = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)
)

// locateDecodeErrors walks n alongside the Go type t the way the YAML
// decoder does, decodes each leaf on its own and reports each one that
// fails, with a message for its type.
func locateDecodeErrors(n *yaml.Node, t reflect.Type, path string, report func(*yaml.Node, string)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNull(n) {
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || t.Kind() == reflect.Interface {
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			report(n, fmt.Sprintf("%s: %s", path, cleanDecodeError(err)))
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		locateInStruct(n, t, path, report)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			report(n, fmt.Sprintf("expected a mapping in %s, got %s", path, describe(n)))
			return
		}
		pairs(n, func(key, v *yaml.Node) {
			locateDecodeErrors(key, t.Key(), path, report)
			locateDecodeErrors(v, t.Elem(), path+"."+key.Value, report)
		})
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			report(n, fmt.Sprintf("expected a list in %s, got %s", path, describe(n)))
			return
		}
		for i, item := range n.Content {
			locateDecodeErrors(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), report)
		}
	default:
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			report(n, leafMessage(n, t, path))
		}
	}
}

// locateInStruct walks a mapping decoded into a struct: its keys name the
// fields by their yaml tag (or lower-cased name); inline fields are
// searched too, unknown keys are skipped as the decoder skips them.
func locateInStruct(n *yaml.Node, t reflect.Type, path string, report func(*yaml.Node, string)) {
	if t == reflect.TypeFor[time.Time]() {
		return
	}
	if n.Kind != yaml.MappingNode {
		report(n, fmt.Sprintf("expected a mapping in %s, got %s", path, describe(n)))
		return
	}
	pairs(n, func(key, v *yaml.Node) {
		if f, ok := yamlField(t, key.Value); ok {
			locateDecodeErrors(v, f.Type, path+"."+key.Value, report)
		}
	})
}

// yamlField finds the struct field a YAML key decodes into.
func yamlField(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if tag == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			if inner, ok := yamlField(f.Type, key); ok {
				return inner, true
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// leafMessage says why a scalar does not decode into t.
func leafMessage(n *yaml.Node, t reflect.Type, path string) string {
	got := describe(n)
	switch kind := t.Kind(); {
	case t == durationType:
		return fmt.Sprintf("invalid duration %q in %s; write it like 500ms, 10s or 2m, at most %s", n.Value, path, "2562047h")
	case kind >= reflect.Int && kind <= reflect.Int64:
		if n.Kind == yaml.ScalarNode && integerLiteral.MatchString(n.Value) {
			lim := int64(1)<<(t.Bits()-1) - 1
			return fmt.Sprintf("%s in %s is out of range: at most %d", n.Value, path, lim)
		}
		return fmt.Sprintf("expected an integer in %s, got %s", path, got)
	case kind >= reflect.Uint && kind <= reflect.Uint64:
		if n.Kind == yaml.ScalarNode && integerLiteral.MatchString(n.Value) {
			lim := uint64(math.MaxUint64) >> (64 - t.Bits())
			return fmt.Sprintf("%s in %s is out of range: between 0 and %d", n.Value, path, lim)
		}
		return fmt.Sprintf("expected an integer in %s, got %s", path, got)
	case kind == reflect.Float32 || kind == reflect.Float64:
		return fmt.Sprintf("expected a number in %s, got %s", path, got)
	case kind == reflect.Bool:
		return fmt.Sprintf("expected true or false in %s, got %s", path, got)
	case kind == reflect.String:
		return fmt.Sprintf("expected a string in %s, got %s", path, got)
	}
	return fmt.Sprintf("%s cannot hold %s", path, got)
}
