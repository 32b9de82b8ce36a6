package dsl

import (
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
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
