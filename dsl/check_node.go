package dsl

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// NodeCheck is what a node type's Check sees: the declared state of the
// node's pipeline, and a way to report problems at the values of the
// node's with: block.
type NodeCheck struct {
	pc *pipelineCheck
}

// HasField reports whether the node's pipeline declares a state field.
func (c *NodeCheck) HasField(name string) bool { return c.pc.p.State.declares(name) }

// InputFields returns the fields a run of the pipeline called name can be
// given: its declared input, else its state fields; ok is false for an
// unknown pipeline (reported as a reference).
func (c *NodeCheck) InputFields(name string) (fields []string, ok bool) {
	d := c.pc.byKind[KindPipeline][name]
	if d == nil {
		return nil, false
	}
	decl := d.Get("input")
	if decl == nil {
		decl = d.Get("state")
	}
	pairs(decl, func(key, _ *yaml.Node) { fields = append(fields, key.Value) })
	return fields, true
}

// PipelineState returns the declared state of the pipeline called name:
// what a run of it ends with. A field whose declaration the schema refused
// is of any type, and a state that is not a mapping is an open object. It
// returns nil for an unknown pipeline (reported as a reference).
func (c *NodeCheck) PipelineState(name string) *Type {
	d := c.pc.byKind[KindPipeline][name]
	switch {
	case d == nil:
		return nil
	case d.Get("state") == nil:
		return ObjectOf(map[string]*Type{})
	}
	return c.pc.objectOf(d.Get("state"))
}

// Errorf reports an error at the value path names in with:, its keys and
// list indexes joined by dots ("pattern", "patterns.1", "llm.model"). A
// value that is not written (a default the node type presets) is reported
// at the node's type.
func (c *NodeCheck) Errorf(path, format string, args ...any) *Diagnostic {
	return c.pc.diags.Errorf(c.pc.where(valueAt(mapGet(c.pc.node.value, "with"), path)), CodeNodeConfig, format, args...)
}

// valueAt follows a dotted path of keys and indexes down from n; it
// returns nil when a step is missing.
func valueAt(n *yaml.Node, path string) *yaml.Node {
	if path == "" {
		return n
	}
	for _, step := range strings.Split(path, ".") {
		switch {
		case n == nil:
			return nil
		case n.Kind == yaml.MappingNode:
			n = mapGet(n, step)
		case n.Kind == yaml.SequenceNode:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil
			}
			n = n.Content[i]
		default:
			return nil
		}
	}
	return n
}

// DidYouMean suggests the candidate closest to name ("did you mean ..."),
// or "" when none is close; node types' checks use it for their hints.
func DidYouMean(name string, candidates []string) string { return didYouMean(name, candidates) }
