package dsl

import (
	"reflect"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"

	"github.com/runner-dev/runner/runner"
)

// expr reads a map's member (state.x, m["k"]) by reflection, which also
// copies each value it reads to the heap: a third of what a served run
// allocated in expressions. After the checker has typed the tree, every
// member of a map or of a value of unknown type becomes a call of member,
// which indexes a state's maps directly and leaves any other value to
// expr's own fetch (same result, same error). Members an optional chain
// (a?.b) holds, and members called as methods, stay expr's.
func member(x, key any) any {
	if k, ok := key.(string); ok {
		switch m := x.(type) {
		case map[string]any:
			return m[k]
		case runner.State:
			return m[k]
		}
	}
	return runtime.Fetch(x, key)
}

// directCall is a call of fn, one of the layer's own functions, in a
// rewritten tree: the callee is fn itself, a constant of one of the
// function types expr's VM calls directly (func(any, any) any or bool),
// so a call takes no slice of its arguments, as a registered function's
// does (a buffer allocated at each evaluation). fn reports an error by
// panicking with it, which the VM returns.
func directCall(fn any, args ...ast.Node) *ast.CallNode {
	return &ast.CallNode{Callee: &ast.ConstantNode{Value: fn}, Arguments: args}
}

// patchMembers rewrites the members of a checked tree that read a map,
// or may; it reports whether it rewrote one (the tree must then be
// checked again).
func patchMembers(tree *ast.Node) bool {
	v := &memberPatcher{keep: map[*ast.MemberNode]bool{}}
	ast.Walk(tree, &keepFinder{keep: v.keep})
	ast.Walk(tree, v)
	return v.found
}

// keepFinder marks the members patchMembers leaves to expr: those under
// an optional chain and those called as methods.
type keepFinder struct{ keep map[*ast.MemberNode]bool }

func (k *keepFinder) Visit(n *ast.Node) {
	switch n := (*n).(type) {
	case *ast.ChainNode:
		ast.Walk(&n.Node, memberMarker(k.keep))
	case *ast.CallNode:
		if m, ok := n.Callee.(*ast.MemberNode); ok {
			k.keep[m] = true
		}
	}
}

// memberMarker marks every member it visits.
type memberMarker map[*ast.MemberNode]bool

func (m memberMarker) Visit(n *ast.Node) {
	if mn, ok := (*n).(*ast.MemberNode); ok {
		m[mn] = true
	}
}

type memberPatcher struct {
	keep  map[*ast.MemberNode]bool
	found bool
}

// Visit rewrites a.b and a[k] to member(a, "b") and member(a, k).
func (v *memberPatcher) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok || m.Optional || v.keep[m] || !mayBeMap(m.Node) {
		return
	}
	call := directCall(member, m.Node, m.Property)
	call.SetLocation(m.Location())
	ast.Patch(n, call)
	v.found = true
}

// mayBeMap reports whether a checked node's value may be a map.
func mayBeMap(n ast.Node) bool {
	switch n.Nature().Kind {
	case reflect.Map, reflect.Interface, reflect.Invalid:
		return true
	}
	return false
}
