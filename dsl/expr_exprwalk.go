package dsl

import (
	"reflect"
	"slices"

	"github.com/expr-lang/expr/ast"
)

// exprWalker goes through a type-checked expr tree to report reads of
// undeclared fields of closed objects, and predicates nested too deeply.
type exprWalker struct {
	c      *compilation
	failed bool
}

func (w *exprWalker) walk(n ast.Node, depth int) {
	switch n := n.(type) {
	case nil:
		return
	case *ast.PredicateNode:
		if depth++; depth > ExprMaxPredicateDepth {
			w.failed = true
			w.c.errorAt(runeToByte(w.c.text, n.Location().From), CodeExprCost,
				"predicates are nested too deeply: the limit is %d", ExprMaxPredicateDepth)
			return
		}
	case *ast.MemberNode:
		w.checkField(n)
	}
	for _, ch := range exprChildren(n) {
		w.walk(ch, depth)
	}
}

// checkField reports a read of an undeclared field of a closed object. The
// checker typed the operand: closed objects are the maps with declared
// fields and a default for other keys (see exprType).
func (w *exprWalker) checkField(m *ast.MemberNode) {
	prop, ok := m.Property.(*ast.StringNode)
	if !ok {
		return
	}
	nt := m.Node.Nature()
	if nt.Kind != reflect.Map || nt.TypeData == nil || nt.DefaultMapValue == nil {
		return
	}
	if _, ok := nt.Fields[prop.Value]; ok {
		return
	}
	names := make([]string, 0, len(nt.Fields))
	for f := range nt.Fields {
		names = append(names, f)
	}
	slices.Sort(names)
	w.failed = true
	off := runeToByte(w.c.text, prop.Location().From)
	w.c.errorAt(off, CodeExprNoField, "%s has no field %q", m.Node.String(), prop.Value).Hint = didYouMean(prop.Value, names)
}

// exprChildren returns the direct children of an expr syntax-tree node.
func exprChildren(n ast.Node) []ast.Node {
	switch n := n.(type) {
	case *ast.UnaryNode:
		return []ast.Node{n.Node}
	case *ast.BinaryNode:
		return []ast.Node{n.Left, n.Right}
	case *ast.ChainNode:
		return []ast.Node{n.Node}
	case *ast.MemberNode:
		return []ast.Node{n.Node, n.Property}
	case *ast.SliceNode:
		return []ast.Node{n.Node, n.From, n.To}
	case *ast.CallNode:
		return append([]ast.Node{n.Callee}, n.Arguments...)
	case *ast.BuiltinNode:
		return n.Arguments
	case *ast.PredicateNode:
		return []ast.Node{n.Node}
	case *ast.VariableDeclaratorNode:
		return []ast.Node{n.Value, n.Expr}
	case *ast.SequenceNode:
		return n.Nodes
	case *ast.ConditionalNode:
		return []ast.Node{n.Cond, n.Exp1, n.Exp2}
	case *ast.ArrayNode:
		return n.Nodes
	case *ast.MapNode:
		return n.Pairs
	case *ast.PairNode:
		return []ast.Node{n.Key, n.Value}
	}
	return nil
}

// exprReads returns the declared variables an expr tree reads, and
// whether it reads what no declared variable holds: the clock (now()) or
// the whole environment ($env).
func exprReads(n ast.Node, env *Env) (reads []string, varies bool) {
	var walk func(ast.Node)
	walk = func(n ast.Node) {
		switch n := n.(type) {
		case nil:
			return
		case *ast.IdentifierNode:
			if _, ok := env.Vars[n.Value]; ok && !slices.Contains(reads, n.Value) {
				reads = append(reads, n.Value)
			}
			varies = varies || n.Value == "now" || n.Value == "$env"
		case *ast.BuiltinNode:
			varies = varies || n.Name == "now"
		}
		for _, ch := range exprChildren(n) {
			walk(ch)
		}
	}
	walk(n)
	return reads, varies
}
