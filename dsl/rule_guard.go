package dsl

import (
	"slices"

	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"

	"github.com/runner-dev/runner/runner"
)

// guardOf finds, in a CEL rule condition, a conjunct that pins the call's
// tool — tool.name or result.tool_name == "x", tool.capability_key == "x",
// either one `in` a list of strings or .startsWith("x"), or a disjunction
// of such terms on the same field — so the runtime skips the rule, without
// evaluating it, for calls of other tools. A condition without one has no
// guard and is evaluated on every call.
func guardOf(c *Condition) *runner.Guard {
	if c == nil || c.Program == nil || c.Program.Lang() != CEL {
		return nil
	}
	return celGuard(c.Program.Text())
}

// celGuard is the guard of a CEL condition's text (see guardOf).
func celGuard(text string) *runner.Guard {
	base, err := celBase()
	if err != nil {
		return nil
	}
	a, iss := base.Parse(text)
	if iss.Err() != nil {
		return nil
	}
	return guardIn(a.NativeRep().Expr())
}

func guardIn(e celast.Expr) *runner.Guard {
	if e.Kind() != celast.CallKind {
		return nil
	}
	call := e.AsCall()
	args := call.Args()
	switch call.FunctionName() {
	case operators.LogicalAnd:
		for _, a := range args {
			if g := guardIn(a); g != nil {
				return g
			}
		}
	case operators.LogicalOr:
		a, b := guardIn(args[0]), guardIn(args[1])
		if a == nil || b == nil || a.Field != b.Field {
			return nil
		}
		a.Values, a.Prefixes = append(a.Values, b.Values...), append(a.Prefixes, b.Prefixes...)
		slices.Sort(a.Values)
		return a
	case "startsWith":
		if !call.IsMemberFunction() || len(args) != 1 {
			return nil
		}
		if f := toolField(call.Target()); f != "" {
			if s, ok := stringLit(args[0]); ok {
				return &runner.Guard{Field: f, Prefixes: []string{s}}
			}
		}
	case operators.Equals:
		for i := range 2 {
			if f := toolField(args[i]); f != "" {
				if s, ok := stringLit(args[1-i]); ok {
					return &runner.Guard{Field: f, Values: []string{s}}
				}
			}
		}
	case operators.In:
		f := toolField(args[0])
		if f == "" || args[1].Kind() != celast.ListKind {
			return nil
		}
		g := &runner.Guard{Field: f}
		for _, el := range args[1].AsList().Elements() {
			s, ok := stringLit(el)
			if !ok {
				return nil
			}
			g.Values = append(g.Values, s)
		}
		slices.Sort(g.Values)
		return g
	}
	return nil
}

// toolField names the ToolInfo field e reads: "name" or "capability_key".
func toolField(e celast.Expr) string {
	if e.Kind() != celast.SelectKind {
		return ""
	}
	s := e.AsSelect()
	if s.IsTestOnly() || s.Operand().Kind() != celast.IdentKind {
		return ""
	}
	switch v, f := s.Operand().AsIdent(), s.FieldName(); {
	case v == "tool" && (f == "name" || f == "capability_key"):
		return f
	case v == "result" && f == "tool_name":
		return "name"
	}
	return ""
}

func stringLit(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().Value().(string)
	return s, ok
}
