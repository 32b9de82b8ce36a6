package dsl

import (
	"math"
	"strconv"

	"github.com/expr-lang/expr/ast"
)

// Run-time bounds stop an expression that runs too long; validate warns,
// where it can tell, that an expression may reach them. For expr, it
// estimates the loop iterations (the predicate evaluations the run time
// counts against ExprMaxSteps) of the innermost loops: the product of the
// sizes of the lists nested loops go through, AssumedSize for a list read
// at run time. Two loops nested over state lists are at the limit, not
// past it; three are past it. It also warns about ranges whose size is
// not bounded by constants.

// loopEstimate warns about the unbounded forms of one expr expression.
type loopEstimate struct {
	c      *compilation
	warned bool // one warning about loops an expression is enough
}

// exprUnbounded warns about the forms of tree the run-time bounds may
// stop: loops nested over inputs of unbounded size, and ranges whose
// bounds are not constants.
func (c *compilation) exprUnbounded(tree ast.Node) {
	(&loopEstimate{c: c}).iterations(tree)
}

// iterations returns the estimated innermost predicate evaluations of n
// and warns, at the innermost loop where the estimate passes ExprMaxSteps,
// once.
func (u *loopEstimate) iterations(n ast.Node) uint64 {
	if r, ok := n.(*ast.BinaryNode); ok && r.Operator == ".." {
		u.checkRange(r)
	}
	call, ok := n.(*ast.BuiltinNode)
	if !ok || !isLoop(call) {
		var total uint64
		for _, ch := range exprChildren(n) {
			total = satAdd(total, u.iterations(ch))
		}
		return total
	}
	var body, other uint64
	for _, arg := range call.Arguments {
		if p, ok := arg.(*ast.PredicateNode); ok {
			body = satAdd(body, u.iterations(p.Node))
		} else {
			other = satAdd(other, u.iterations(arg))
		}
	}
	total := satAdd(other, satMul(collectionSize(call.Arguments[0]), max(1, body)))
	if total > ExprMaxSteps && !u.warned {
		u.warned = true
		u.c.warnAt(runeToByte(u.c.text, call.Location().From), CodeExprUnbounded,
			"%s may stop at the run-time limit of %d loop iterations: an estimated %s when lists hold %d items",
			call.Name, ExprMaxSteps, countText(total), AssumedSize).Hint =
			"bound the lists it loops over with a slice (xs[:100]) or a constant range, or avoid nesting loops"
	}
	return total
}

// checkRange warns about a range whose size depends on values known only
// at run time (1..state.n), unless constants bound it (1..min(state.n, 100)).
func (u *loopEstimate) checkRange(r *ast.BinaryNode) {
	if _, ok := rangeSize(r); ok {
		return
	}
	u.c.warnAt(runeToByte(u.c.text, r.Left.Location().From), CodeExprUnbounded,
		"the size of range %s is not bounded: it is known only at run time, and a large one stops at the run-time memory limit", r.String()).Hint =
		"bound it with constants: lo..min(hi, 100), or max(lo, 0)..100"
}

// isLoop reports whether a builtin call evaluates a predicate per item.
func isLoop(call *ast.BuiltinNode) bool {
	if len(call.Arguments) < 2 {
		return false
	}
	_, ok := call.Arguments[1].(*ast.PredicateNode)
	return ok
}

// collectionSize is the number of items a loop goes through: known for a
// list literal, a range or a slice with constant bounds, AssumedSize for
// anything read at run time.
func collectionSize(n ast.Node) uint64 {
	switch n := n.(type) {
	case *ast.ArrayNode:
		return uint64(len(n.Nodes))
	case *ast.BinaryNode:
		if n.Operator != ".." {
			break
		}
		if size, ok := rangeSize(n); ok {
			return size
		}
	case *ast.SliceNode:
		if size, ok := sliceSize(n); ok {
			return min(size, collectionSize(n.Node))
		}
	}
	return AssumedSize
}

// rangeSize is the number of integers in lo..hi, when constants bound it.
func rangeSize(r *ast.BinaryNode) (uint64, bool) {
	lo, okLo := lowerBound(r.Left)
	hi, okHi := upperBound(r.Right)
	if !okLo || !okHi {
		return 0, false
	}
	if hi < lo {
		return 0, true
	}
	return satAdd(uint64(hi-lo), 1), true
}

// sliceSize is the most items xs[from:to] can hold, when from (or its
// absence) and to are non-negative constants.
func sliceSize(s *ast.SliceNode) (uint64, bool) {
	var from int64
	if s.From != nil {
		f, ok := s.From.(*ast.IntegerNode)
		if !ok || f.Value < 0 {
			return 0, false
		}
		from = int64(f.Value)
	}
	to, ok := s.To.(*ast.IntegerNode)
	if !ok || to.Value < 0 {
		return 0, false
	}
	return uint64(max(int64(to.Value)-from, 0)), true
}

// upperBound is a constant no smaller than n: an integer, or a min() of
// which one argument has one.
func upperBound(n ast.Node) (int64, bool) { return constBound(n, true) }

// lowerBound is a constant no larger than n: an integer, or a max() of
// which one argument has one.
func lowerBound(n ast.Node) (int64, bool) { return constBound(n, false) }

// constBound finds a constant bound of an integer expression, an upper
// one or a lower one: its value, or the tightest bound among the
// arguments of a min() (upper) or a max() (lower).
func constBound(n ast.Node, upper bool) (int64, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return int64(n.Value), true
	case *ast.UnaryNode:
		if i, ok := n.Node.(*ast.IntegerNode); ok && n.Operator == "-" {
			return -int64(i.Value), true
		}
	case *ast.BuiltinNode:
		if (upper && n.Name == "min") || (!upper && n.Name == "max") {
			return tightest(n.Arguments, upper)
		}
	}
	return 0, false
}

// tightest is the tightest constant bound among args: the least upper
// bound, or the greatest lower one.
func tightest(args []ast.Node, upper bool) (b int64, found bool) {
	for _, arg := range args {
		v, ok := constBound(arg, upper)
		switch {
		case !ok:
		case !found, upper && v < b, !upper && v > b:
			b, found = v, true
		}
	}
	return b, found
}

// countText writes an estimated count of iterations.
func countText(n uint64) string {
	if n == math.MaxUint64 {
		return "more than " + strconv.FormatUint(n, 10) + " iterations"
	}
	return strconv.FormatUint(n, 10) + " iterations"
}

// satAdd adds without overflowing: past the largest uint64 it stays there.
func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// satMul multiplies without overflowing.
func satMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}
