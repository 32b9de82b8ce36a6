package dsl

import (
	"maps"
	"strings"

	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/parser"
)

// celWalker finds reads of undeclared fields of closed objects in a parsed
// CEL expression, to report them with a did-you-mean hint.
type celWalker struct {
	c        *compilation
	ast      *celast.AST
	reported map[int64]bool
}

// celScope holds the comprehension variables in scope, with their declared
// types (nil: unknown).
type celScope map[string]*Type

func (w *celWalker) walk(e celast.Expr, scope celScope) {
	switch e.Kind() {
	case celast.SelectKind:
		w.walk(e.AsSelect().Operand(), scope)
		w.checkField(e, scope)
	case celast.CallKind:
		call := e.AsCall()
		if call.IsMemberFunction() {
			w.walk(call.Target(), scope)
		}
		for _, a := range call.Args() {
			w.walk(a, scope)
		}
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.walk(el, scope)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			w.walk(en.AsMapEntry().Key(), scope)
			w.walk(en.AsMapEntry().Value(), scope)
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			w.walk(f.AsStructField().Value(), scope)
		}
	case celast.ComprehensionKind:
		w.comprehension(e.AsComprehension(), scope)
	}
}

func (w *celWalker) comprehension(comp celast.ComprehensionExpr, scope celScope) {
	w.walk(comp.IterRange(), scope)
	w.walk(comp.AccuInit(), scope)
	inner := make(celScope, len(scope)+3)
	maps.Copy(inner, scope)
	first, second := iterTypes(w.typeOf(comp.IterRange(), scope), comp.HasIterVar2())
	inner[comp.IterVar()] = first
	if comp.HasIterVar2() {
		inner[comp.IterVar2()] = second
	}
	inner[comp.AccuVar()] = nil
	w.walk(comp.LoopCondition(), inner)
	w.walk(comp.LoopStep(), inner)
	w.walk(comp.Result(), inner)
}

// iterTypes returns the types of the variables of a loop over a value of
// type t: the items of a list (or its indexes and items), or a map's keys.
func iterTypes(t *Type, two bool) (first, second *Type) {
	switch {
	case t == nil:
		return nil, nil
	case t.Kind == Array && two:
		return IntegerType, t.Items
	case t.Kind == Array:
		return t.Items, nil
	case t.Kind == Object:
		return StringType, nil
	}
	return nil, nil
}

// typeOf returns the declared type of a variable read (x, x.f, x[i]), or
// nil if e is not such a read.
func (w *celWalker) typeOf(e celast.Expr, scope celScope) *Type {
	switch e.Kind() {
	case celast.IdentKind:
		if t, ok := scope[e.AsIdent()]; ok {
			return t
		}
		return w.c.env.Vars[e.AsIdent()]
	case celast.SelectKind:
		s := e.AsSelect()
		if t := w.typeOf(s.Operand(), scope); isClosed(t) && !s.IsTestOnly() {
			return t.Fields[s.FieldName()]
		}
	case celast.CallKind:
		call := e.AsCall()
		if call.FunctionName() == operators.Index && len(call.Args()) == 2 {
			if t := w.typeOf(call.Args()[0], scope); t != nil && t.Kind == Array {
				return t.Items
			}
		}
	}
	return nil
}

// checkField reports a select of an undeclared field of a closed object.
func (w *celWalker) checkField(e celast.Expr, scope celScope) {
	s := e.AsSelect()
	t := w.typeOf(s.Operand(), scope)
	if !isClosed(t) {
		return
	}
	if _, ok := t.Fields[s.FieldName()]; ok {
		return
	}
	w.reported[e.ID()] = true
	off := 0
	if r, ok := w.ast.SourceInfo().GetOffsetRange(e.ID()); ok {
		off = runeToByte(w.c.text, int(r.Start))
	}
	if i := strings.Index(w.c.text[off:], s.FieldName()); i >= 0 {
		off += i
	}
	path, err := parser.Unparse(s.Operand(), w.ast.SourceInfo())
	if err != nil {
		path = "object"
	}
	w.c.noField(off, path, s.FieldName(), t)
}

// isClosed reports whether t is an object with declared fields.
func isClosed(t *Type) bool { return t != nil && t.Kind == Object && t.Fields != nil }

// celKind names a checked CEL type in the documents' words.
func celKind(t *types.Type) Kind {
	switch t.Kind() {
	case types.BoolKind:
		return Boolean
	case types.IntKind, types.UintKind:
		return Integer
	case types.DoubleKind:
		return Number
	case types.StringKind:
		return String
	case types.ListKind:
		return Array
	case types.MapKind, types.StructKind:
		return Object
	case types.DynKind, types.AnyKind, types.TypeParamKind, types.ErrorKind:
		return Any
	case types.NullTypeKind:
		return "null"
	}
	return Kind(t.String())
}
