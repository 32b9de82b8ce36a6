package dsl

import (
	"fmt"
	"time"

	"github.com/expr-lang/expr/ast"
)

// expr's VM has a memory budget but no step budget and no clock, so a
// loop can run for minutes or build a string of gigabytes that the budget
// does not count. Every predicate — the body of all, any, map, filter,
// reduce, ... — is rewritten to tick the evaluation's budget first:
//
//	let #tickN = tick(#budget, #acc); body
//
// (tick the function itself, not a name: directCall), and the tick stops
// the evaluation with an error past ExprMaxSteps iterations,
// ExprTimeLimit, or an accumulator of ExprMaxAccumulated. The names start
// with '#', which no expression can write.
const budgetVar = "#budget"

// exprBudget is what one evaluation may still spend.
type exprBudget struct {
	steps    int
	deadline time.Time
}

// tick is the function the rewritten predicates call (directCall); it
// stops the evaluation by panicking with the error.
func tick(budget, acc any) bool {
	b := budget.(*exprBudget)
	b.steps++
	switch {
	case b.steps > ExprMaxSteps:
		panic(fmt.Errorf("expression stopped after %d loop iterations (the limit)", ExprMaxSteps))
	case b.steps%1024 == 0 && time.Now().After(b.deadline):
		panic(fmt.Errorf("expression stopped after running %s (the limit)", ExprTimeLimit))
	case sizeOf(acc) > ExprMaxAccumulated:
		panic(fmt.Errorf("expression stopped: reduce accumulated more than %d bytes or items (the limit)", ExprMaxAccumulated))
	}
	return true
}

// sizeOf is the length of a string, list or map; 0 for anything else.
func sizeOf(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []any:
		return len(x)
	case map[string]any:
		return len(x)
	}
	return 0
}

// boundLoops rewrites every predicate of tree to tick the budget; it
// reports whether there was one.
func boundLoops(tree *ast.Node) bool {
	v := &loopBounder{}
	ast.Walk(tree, v)
	return v.found
}

type loopBounder struct {
	found bool
	n     int // names the let of each predicate apart: lets cannot shadow
}

// Visit wraps the predicates of a builtin call.
func (v *loopBounder) Visit(n *ast.Node) {
	call, ok := (*n).(*ast.BuiltinNode)
	if !ok {
		return
	}
	for _, arg := range call.Arguments {
		p, ok := arg.(*ast.PredicateNode)
		if !ok {
			continue
		}
		var acc ast.Node = &ast.NilNode{}
		if call.Name == "reduce" {
			acc = &ast.PointerNode{Name: "acc"}
		}
		tickCall := directCall(tick, &ast.IdentifierNode{Value: budgetVar}, acc)
		v.n++
		p.Node = &ast.VariableDeclaratorNode{Name: fmt.Sprintf("#tick%d", v.n), Value: tickCall, Expr: p.Node}
		v.found = true
	}
}
