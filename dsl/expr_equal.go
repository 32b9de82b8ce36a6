package dsl

import (
	"reflect"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"
)

// expr compares maps with reflect.DeepEqual, so {"id": 0} in an
// expression is not equal to a state's {"id": 0}: the literal holds an
// int, the state (like every value that enters a run) an int64. After the
// checker has typed the tree, every == and != whose operands may hold a
// map (a map, a list, or a value of unknown type) becomes a call of
// deepEqual (directCall), expr's equality applied through lists and maps:
// numbers compare by value at any depth.
func deepEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !deepEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !deepEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return runtime.Equal(a, b)
}

// patchEquality rewrites the comparisons of a checked tree that may
// compare maps; it reports whether it rewrote one (the tree must then be
// checked again).
func patchEquality(tree *ast.Node) bool {
	v := &equalityPatcher{}
	ast.Walk(tree, v)
	return v.found
}

type equalityPatcher struct{ found bool }

// Visit rewrites a == b to deepEqual(a, b) and a != b to !deepEqual(a, b).
func (v *equalityPatcher) Visit(n *ast.Node) {
	bin, ok := (*n).(*ast.BinaryNode)
	if !ok || bin.Operator != "==" && bin.Operator != "!=" || !mayHoldMap(bin.Left) && !mayHoldMap(bin.Right) {
		return
	}
	var call ast.Node = directCall(deepEqual, bin.Left, bin.Right)
	if bin.Operator == "!=" {
		call.SetLocation(bin.Location())
		call = &ast.UnaryNode{Operator: "!", Node: call}
	}
	ast.Patch(n, call)
	v.found = true
}

// mayHoldMap reports whether a checked node's value may be or contain a
// map.
func mayHoldMap(n ast.Node) bool {
	nt := n.Nature()
	switch nt.Kind {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Interface, reflect.Invalid:
		return true
	}
	return false
}
