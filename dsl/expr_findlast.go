package dsl

import "github.com/expr-lang/expr/ast"

// expr compiles findLast and findLastIndex to a backward loop that leaves
// a boolean on the VM's stack at every turn, so the value computed before
// the call is lost: `"x" + findLast(xs, .p == "v").f` type-checks and
// fails when it runs with "invalid operation: bool + string", and
// `{"r": findLast(...)}` fails too (expr-lang/expr#950, unfixed in
// v1.17.8, the newest release). After the checker has typed the tree,
// patchFindLast rewrites both calls into forward loops over the list
// reversed, which leave the stack as they found it:
//
//	findLast(xs, p)      → find(reverse(xs), p)
//	findLastIndex(xs, p) → let l = xs; fromEnd(len(l), findIndex(reverse(l), p))
//
// The predicate runs on the same elements in the same order, and stops at
// the same one.
func patchFindLast(tree *ast.Node) bool {
	v := &findLastPatcher{}
	ast.Walk(tree, v)
	return v.found
}

type findLastPatcher struct{ found bool }

// reversedList names the list findLastIndex searches; the space keeps it
// apart from any name an expression can write.
const reversedList = "findLastIndex list"

func (v *findLastPatcher) Visit(n *ast.Node) {
	b, ok := (*n).(*ast.BuiltinNode)
	if !ok || len(b.Arguments) != 2 || b.Map != nil || b.Throws {
		return
	}
	list, pred := b.Arguments[0], b.Arguments[1]
	switch b.Name {
	case "findLast":
		ast.Patch(n, &ast.BuiltinNode{Name: "find", Arguments: []ast.Node{reversed(list), pred}})
	case "findLastIndex":
		l := &ast.IdentifierNode{Value: reversedList}
		ast.Patch(n, &ast.VariableDeclaratorNode{Name: reversedList, Value: list, Expr: directCall(fromEnd,
			&ast.BuiltinNode{Name: "len", Arguments: []ast.Node{l}},
			&ast.BuiltinNode{Name: "findIndex", Arguments: []ast.Node{reversed(&ast.IdentifierNode{Value: reversedList}), pred}})})
	default:
		return
	}
	v.found = true
}

func reversed(list ast.Node) ast.Node {
	return &ast.BuiltinNode{Name: "reverse", Arguments: []ast.Node{list}}
}

// fromEnd turns the index i of an element of a list of n reversed into
// its index in the list; nil (none found) stays nil.
func fromEnd(n, i any) any {
	if i == nil {
		return nil
	}
	return n.(int) - 1 - i.(int)
}
