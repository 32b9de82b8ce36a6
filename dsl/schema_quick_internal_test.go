package dsl

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// TestQuickSubsetCoversSchema lists every field of the library's compiled
// Schema as one the quick validator applies, one that makes a schema
// opaque (inQuickSubset), or an annotation: a field a new version of the
// library adds must be placed before the quick validator can be trusted.
func TestQuickSubsetCoversSchema(t *testing.T) {
	known := map[string]string{}
	for _, f := range []string{"Bool", "Ref", "Types", "Enum", "Const", "Not", "AllOf", "AnyOf", "OneOf", "If", "Then", "Else",
		"MaxProperties", "MinProperties", "Required", "Properties", "AdditionalProperties", "DependentRequired",
		"MinItems", "MaxItems", "UniqueItems", "Items2020", "MinLength", "MaxLength", "Pattern",
		"Maximum", "Minimum", "ExclusiveMaximum", "ExclusiveMinimum"} {
		known[f] = "applied"
	}
	for _, f := range []string{"DraftVersion", "RecursiveRef", "DynamicRef", "Format", "PropertyNames", "PatternProperties",
		"Dependencies", "DependentSchemas", "UnevaluatedProperties", "Contains", "MinContains", "MaxContains", "Items",
		"AdditionalItems", "PrefixItems", "UnevaluatedItems", "ContentEncoding", "ContentMediaType", "ContentSchema",
		"MultipleOf", "Extensions"} {
		known[f] = "opaque"
	}
	for _, f := range []string{"Location", "ID", "Anchor", "RecursiveAnchor", "DynamicAnchor", "Title", "Description",
		"Default", "Comment", "ReadOnly", "WriteOnly", "Examples", "Deprecated"} {
		known[f] = "annotation"
	}
	typ := reflect.TypeFor[jsonschema.Schema]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() && known[f.Name] == "" {
			t.Errorf("jsonschema.Schema.%s is new: apply it in the quick validator or make schemas using it opaque", f.Name)
		}
	}
}

// TestScalarJSONFastPaths checks that the shortcuts scalarJSON takes for
// plain integers and booleans give what the YAML decoder gives.
func TestScalarJSONFastPaths(t *testing.T) {
	for _, src := range []string{"0", "-0", "7", "007", "010", "0x1F", "0o17", "+5", "123", "-123", "1_000",
		"9223372036854775807", "-9223372036854775808", "99999999999999999999", "true", "false", "True", "FALSE"} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
			t.Fatal(err)
		}
		n := doc.Content[0]
		var want any
		switch n.Tag {
		case "!!int":
			var i int64
			if n.Decode(&i) != nil {
				continue // not an int64: the decoder's error path, no shortcut
			}
			want = json.Number(strconv.FormatInt(i, 10))
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				t.Fatal(err)
			}
			want = b
		default:
			continue
		}
		if got := scalarJSON(n); got != want {
			t.Errorf("scalarJSON(%s) = %#v, want %#v", src, got, want)
		}
	}
}
