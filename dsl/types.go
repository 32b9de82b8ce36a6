package dsl

import (
	"sort"
	"strings"
)

// Kind is the kind of a declared type, named as in JSON Schema.
type Kind string

// The kinds a state field, input or variable can have.
const (
	Any     Kind = "any"
	String  Kind = "string"
	Integer Kind = "integer"
	Number  Kind = "number"
	Boolean Kind = "boolean"
	Array   Kind = "array"
	Object  Kind = "object"
)

// Type is the declared type of a value that expressions can read: a state
// field, the run input, or a variable such as tool or result.
type Type struct {
	Kind Kind
	// Items is the element type of an Array (nil: Any).
	Items *Type
	// Fields are the declared properties of an Object. A nil map is an open
	// map of Any; a non-nil map is closed: reading another key is an error.
	Fields map[string]*Type
	// Enum, when set, lists the values allowed (run inputs are checked
	// against it).
	Enum []any
	// Format, when set, is the format a string run input must have
	// (date-time, date, email, uri, uuid).
	Format string
}

// Common types.
var (
	AnyType     = &Type{Kind: Any}
	StringType  = &Type{Kind: String}
	IntegerType = &Type{Kind: Integer}
	NumberType  = &Type{Kind: Number}
	BoolType    = &Type{Kind: Boolean}
)

// ObjectOf returns a closed object type with the given fields.
func ObjectOf(fields map[string]*Type) *Type { return &Type{Kind: Object, Fields: fields} }

// ArrayOf returns an array type of items.
func ArrayOf(items *Type) *Type { return &Type{Kind: Array, Items: items} }

// FieldNames returns the declared field names of an object type, sorted.
func (t *Type) FieldNames() []string {
	names := make([]string, 0, len(t.Fields))
	for n := range t.Fields {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// String renders the type as in the documents: string, array<string>, object{a,b}.
func (t *Type) String() string {
	if t == nil {
		return string(Any)
	}
	switch t.Kind {
	case Array:
		return "array<" + t.Items.String() + ">"
	case Object:
		if t.Fields == nil {
			return "object"
		}
		return "object{" + strings.Join(t.FieldNames(), ",") + "}"
	}
	return string(t.Kind)
}

// signature renders the type in full — kinds, items and fields, recursively
// — so that two types with the same signature are the same type.
func (t *Type) signature() string {
	if t == nil {
		return string(Any)
	}
	var b strings.Builder
	t.writeSignature(&b)
	return b.String()
}

func (t *Type) writeSignature(b *strings.Builder) {
	if t == nil {
		b.WriteString(string(Any))
		return
	}
	b.WriteString(string(t.Kind))
	if t.Items != nil {
		b.WriteString("<")
		t.Items.writeSignature(b)
		b.WriteString(">")
	}
	if t.Fields != nil {
		b.WriteString("{")
		for i, f := range t.FieldNames() {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(f + ":")
			t.Fields[f].writeSignature(b)
		}
		b.WriteString("}")
	}
}
