package builtins_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/schemas"
)

var update = flag.Bool("update", false, "rewrite schemas/nodes.json from the node types")

// TestNodesSchemaCommitted proves the committed schemas/nodes.json is
// exactly the schema the checker builds from the node types it enforces.
func TestNodesSchemaCommitted(t *testing.T) {
	got := builtins.Registry().NodesSchema()
	if *update {
		if err := os.WriteFile("../schemas/nodes.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := schemas.FS.ReadFile("nodes.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("schemas/nodes.json is stale; run: go test ./builtins -run TestNodesSchemaCommitted -update")
	}
}

// TestSchemaMatchesConfig checks that every property a node type's schema
// accepts is a yaml key of its config struct, and the other way round, so
// that the schema and the decoder cannot drift apart.
func TestSchemaMatchesConfig(t *testing.T) {
	for _, nt := range builtins.All() {
		t.Run(nt.Name, func(t *testing.T) {
			typ := reflect.TypeOf(nt.Config()).Elem()
			if typ.Kind() != reflect.Struct {
				return // map-shaped configs (set) have no fixed keys
			}
			got := schemaKeys(t, nt.Schema)
			want := yamlKeys(typ)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("schema properties %v, config keys %v", got, want)
			}
		})
	}
}

func schemaKeys(t *testing.T, schema string) []string {
	var s struct{ Properties map[string]any }
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range s.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func yamlKeys(typ reflect.Type) []string {
	var keys []string
	for i := range typ.NumField() {
		if tag := strings.Split(typ.Field(i).Tag.Get("yaml"), ",")[0]; tag != "" {
			keys = append(keys, tag)
		}
	}
	sort.Strings(keys)
	return keys
}

// TestRegistry checks names are unique and every type is documented.
func TestRegistry(t *testing.T) {
	if _, err := dsl.NewRegistry(builtins.All(), builtins.BuiltinTools()); err != nil {
		t.Fatal(err)
	}
	for _, nt := range builtins.All() {
		if nt.Doc == "" || nt.Config == nil {
			t.Errorf("node type %q lacks a doc or a config", nt.Name)
		}
	}
}

// TestKindsMatchSchemas checks that the providers and tool kinds the
// schemas accept are the ones registered here.
func TestKindsMatchSchemas(t *testing.T) {
	var model, tool struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	for file, v := range map[string]any{"model.json": &model, "tool.json": &tool} {
		raw, err := schemas.FS.ReadFile(file)
		if err != nil || json.Unmarshal(raw, v) != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	providers := []string{"scripted"}
	for _, k := range builtins.ProviderKinds {
		providers = append(providers, k.Key)
	}
	if got := model.Properties["provider"].Enum; !sameSet(got, providers) {
		t.Errorf("model.json providers %v, registered %v", got, providers)
	}
	for _, k := range builtins.ToolKinds {
		if _, ok := tool.Properties[k.Key]; !ok && k.Key != "mcp" { // MCPServer documents declare those
			t.Errorf("tool kind %s is not a property of tool.json", k.Key)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
