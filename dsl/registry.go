package dsl

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/runner-dev/runner/runner"
)

// NodeType describes one built-in node type to the compiler: its name, what
// it does, the JSON Schema of its with: block and the Go value that block
// decodes into. The config value's fields of type Expression, Condition,
// Template, FieldRef, ToolRef, PipelineRef and ModelRef are checked and
// compiled by the checker; the builtins package supplies the values
// (builtins.All).
type NodeType struct {
	Name string
	Doc  string
	// Schema is the JSON Schema (draft 2020-12) of the with: block. It may
	// refer to defs.json, e.g. {"$ref": "defs.json#/$defs/expression"}.
	Schema string
	// Config returns a new pointer to the value with: decodes into.
	Config func() any
	// Vars types the extra variables the config's `vars:"..."` struct tags
	// give its expressions (a planner's decision, a map's item); one it
	// does not list may hold anything.
	Vars map[string]*Type
	// Check, when set, checks a decoded config beyond its schema and the
	// types of its fields: whatever Build would refuse that can be known
	// without running anything (a regular expression that does not
	// compile, a list that must be part of another), reported at the
	// offending value of with:. It runs after the config's expressions and
	// references are checked.
	Check func(cfg any, c *NodeCheck)
	// Build makes the runtime node from a checked config. It may assume
	// that Check found nothing wrong.
	Build func(cfg any, b *Build) (runner.Node, error)
}

// Registry holds what the checker and compiler know of the built-ins: the
// node types by name, and the names of the Go functions `builtin:` tools
// may use.
type Registry struct {
	types    map[string]NodeType
	names    []string
	builtins []string
}

// NewRegistry returns a registry of the given node types and builtin tool
// names. It fails on a duplicate name or a schema that is not JSON.
func NewRegistry(types []NodeType, builtinTools []string) (*Registry, error) {
	r := &Registry{types: map[string]NodeType{}, builtins: builtinTools}
	for _, t := range types {
		if _, dup := r.types[t.Name]; dup {
			return nil, fmt.Errorf("node type %q registered twice", t.Name)
		}
		if !json.Valid([]byte(t.Schema)) {
			return nil, fmt.Errorf("node type %q: schema is not valid JSON", t.Name)
		}
		r.types[t.Name] = t
		r.names = append(r.names, t.Name)
	}
	sort.Strings(r.names)
	return r, nil
}

// Lookup returns the node type called name.
func (r *Registry) Lookup(name string) (NodeType, bool) {
	t, ok := r.types[name]
	return t, ok
}

// Names returns the registered type names, sorted.
func (r *Registry) Names() []string { return r.names }

// NodesSchema returns nodes.json: the with: schema of every node type, keyed
// on the node's type. Pipeline nodes are validated against it, and the
// committed schemas/nodes.json must equal it.
func (r *Registry) NodesSchema() []byte { return r.nodesSchema(true) }

// nodesSchema returns nodes.json; without dispatch, it leaves out the
// conditions that apply each type's with: schema (the checker applies
// them itself, see schemaSet.nodes).
func (r *Registry) nodesSchema(dispatch bool) []byte {
	defs := map[string]json.RawMessage{}
	var conds []any
	for _, n := range r.names {
		defs[n] = json.RawMessage(r.types[n].Schema)
		conds = append(conds, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": n}}, "required": []string{"type"}},
			"then": map[string]any{"properties": map[string]any{"with": map[string]any{"$ref": "#/$defs/" + n}}},
		})
	}
	doc := map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"title":       "runner node types",
		"description": "Generated from the built-in node types; do not edit.",
		"properties":  map[string]any{"type": map[string]any{"enum": r.names}},
		"$defs":       defs,
	}
	if dispatch {
		doc["allOf"] = conds
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // only maps, slices and valid raw JSON above
	}
	return append(b, '\n')
}
