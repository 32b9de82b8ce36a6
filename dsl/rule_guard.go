package dsl

import (
	"slices"
	"strings"

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
	if e, ok := celTree(text); ok {
		return guardIn(e)
	}
	return nil
}

// celTree is the syntax tree of a CEL condition's text; false when it
// does not parse.
func celTree(text string) (celast.Expr, bool) {
	base, err := celBase()
	if err != nil {
		return nil, false
	}
	a, iss := base.Parse(text)
	if iss.Err() != nil {
		return nil, false
	}
	return a.NativeRep().Expr(), true
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

// truth is what is known of a condition: it holds, it does not, or it
// depends on what is not known.
type truth int

const (
	unknown truth = iota
	holds
	fails
)

func truthOf(b bool) truth {
	if b {
		return holds
	}
	return fails
}

// holdsFor says whether a rule condition holds for a call of tool t,
// knowing only the tool — its name, capability_key, mutating and tags —
// and not the call's arguments, the state or the run: it holds (no
// condition, or one the tool satisfies), it fails whatever they are, or
// it depends on them (unknown). It reads the terms guardOf reads,
// mutating and tags besides; other terms, and conditions not in CEL, are
// unknown.
func holdsFor(c runner.Condition, t *runner.ToolInfo) truth {
	if c == nil {
		return holds
	}
	if p, ok := c.(*Program); ok && p.Lang() == CEL {
		if e, ok := celTree(p.Text()); ok {
			return truthIn(e, t)
		}
	}
	return unknown
}

// truthIn evaluates e as far as the tool t decides it.
func truthIn(e celast.Expr, t *runner.ToolInfo) truth {
	if v, ok := toolValue(e, t); ok {
		if b, isBool := v.(bool); isBool {
			return truthOf(b)
		}
		return unknown
	}
	if e.Kind() != celast.CallKind {
		return unknown
	}
	call := e.AsCall()
	args := call.Args()
	switch call.FunctionName() {
	case operators.LogicalNot:
		switch truthIn(args[0], t) {
		case holds:
			return fails
		case fails:
			return holds
		}
		return unknown
	case operators.LogicalAnd, operators.LogicalOr:
		short, other := fails, holds // what settles an and, and what it needs from all
		if call.FunctionName() == operators.LogicalOr {
			short, other = holds, fails
		}
		out := other
		for _, a := range args {
			switch truthIn(a, t) {
			case short:
				return short
			case unknown:
				out = unknown
			}
		}
		return out
	}
	return compared(call, t)
}

// compared evaluates a comparison of known values: ==, !=, in, and a
// string's startsWith, endsWith and contains.
func compared(call celast.CallExpr, t *runner.ToolInfo) truth {
	args := call.Args()
	var vals []any
	if call.IsMemberFunction() {
		args = append([]celast.Expr{call.Target()}, args...)
	}
	for _, a := range args {
		v, ok := toolValue(a, t)
		if !ok {
			return unknown
		}
		vals = append(vals, v)
	}
	switch call.FunctionName() {
	case operators.Equals, operators.NotEquals:
		return truthOf((vals[0] == vals[1]) == (call.FunctionName() == operators.Equals))
	case operators.In:
		list, _ := vals[1].([]any)
		return truthOf(slices.Contains(list, vals[0]))
	}
	s, ok1 := vals[0].(string)
	arg, ok2 := vals[len(vals)-1].(string)
	if len(vals) != 2 || !ok1 || !ok2 {
		return unknown
	}
	switch call.FunctionName() {
	case "startsWith":
		return truthOf(strings.HasPrefix(s, arg))
	case "endsWith":
		return truthOf(strings.HasSuffix(s, arg))
	case "contains":
		return truthOf(strings.Contains(s, arg))
	}
	return unknown
}

// toolValue is e's value when the tool alone decides it: a literal (a
// list of literals), or one of the tool's name, capability_key, mutating
// and tags.
func toolValue(e celast.Expr, t *runner.ToolInfo) (any, bool) {
	switch e.Kind() {
	case celast.LiteralKind:
		switch v := e.AsLiteral().Value().(type) {
		case string, bool:
			return v, true
		}
	case celast.ListKind:
		var out []any
		for _, el := range e.AsList().Elements() {
			v, ok := toolValue(el, t)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case celast.SelectKind:
		switch f := toolField(e); {
		case f == "name":
			return t.Name, true
		case f == "capability_key":
			return t.CapabilityKey, true
		case isToolSelect(e, "mutating"):
			return t.Mutating, true
		case isToolSelect(e, "tags"):
			tags := make([]any, len(t.Tags))
			for i, tag := range t.Tags {
				tags[i] = tag
			}
			return tags, true
		}
	}
	return nil, false
}

// isToolSelect reports whether e is tool.<field>.
func isToolSelect(e celast.Expr, field string) bool {
	s := e.AsSelect()
	return !s.IsTestOnly() && s.Operand().Kind() == celast.IdentKind && s.Operand().AsIdent() == "tool" && s.FieldName() == field
}
