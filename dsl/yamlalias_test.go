package dsl_test

import (
	"testing"

	"github.com/runner-dev/runner/dsl"
)

// TestAliases: an alias is a copy of the value its anchor marks, and a
// merge key adds the fields a mapping does not set, the first mapping of
// a list winning.
func TestAliases(t *testing.T) {
	src := `apiVersion: runner/v1
kind: Pipeline
metadata: {name: p}
state:
  n: {type: integer, default: 0}
  seen: &list {type: array, items: {type: string}, reducer: append}
  notes: *list
start: a
nodes:
  a: &bump
    type: set
    with: {n: state.n + 1}
    next: b
  b:
    <<: *bump
    next: c
  c:
    <<: [{type: noop, next: END}, {type: set, next: a}]
`
	docs, diags := dsl.Parse("p.yaml", []byte(src))
	proj, more := newChecker(t).Check(docs)
	if diags = append(diags, more...); len(diags) > 0 {
		t.Fatal(diags.Error())
	}
	p := proj.Pipelines["p"]
	for _, tt := range []struct{ node, typ, next string }{{"a", "set", "b"}, {"b", "set", "c"}, {"c", "noop", "END"}} {
		n := p.Node(tt.node)
		if n.Type != tt.typ || len(n.Next) != 1 || n.Next[0].To != tt.next {
			t.Errorf("node %s: type %s, next %v; want %s, %s", tt.node, n.Type, n.Next, tt.typ, tt.next)
		}
	}
	for _, f := range p.Fields {
		if f.Name == "notes" && (f.Reducer != "append" || f.Type.Items == nil) {
			t.Errorf("notes = %+v, want seen's declaration", f)
		}
	}
}
