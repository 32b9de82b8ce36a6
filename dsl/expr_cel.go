package dsl

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
)

// celBase is the CEL environment every Env extends: the standard library
// and the parser limits. Building it is expensive, so it is built once.
var celBase = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(MaxExprLen),
		cel.ParserRecursionLimit(CELRecursionLimit),
	)
})

// celEnv is an Env compiled for CEL.
type celEnv struct {
	env *cel.Env
	// norms normalize the variables whose declared type needs it.
	norms map[string]normalizer
}

// celEnv returns e compiled for CEL, building it on first use.
func (e *Env) celEnv() (*celEnv, error) {
	e.cache.celOnce.Do(func() { e.cache.cel, e.cache.celErr = buildCELEnv(e) })
	return e.cache.cel, e.cache.celErr
}

func buildCELEnv(e *Env) (*celEnv, error) {
	base, err := celBase()
	if err != nil {
		return nil, err
	}
	p := &celProvider{Provider: base.CELTypeProvider(), structs: map[string]*celStruct{}}
	ce := &celEnv{norms: map[string]normalizer{}}
	opts := []cel.EnvOption{cel.CustomTypeProvider(p)}
	for _, name := range e.varNames() {
		t := e.Vars[name]
		opts = append(opts, cel.Variable(name, p.celType(t, name, 0)))
		if n := normalizerFor(t, 0); n != nil {
			ce.norms[name] = n
		}
	}
	ce.env, err = base.Extend(opts...)
	return ce, err
}

func (c *compilation) compileCEL() evaluator {
	ce, err := c.env.celEnv()
	if err != nil {
		c.errorAt(0, CodeExprType, "cel environment: %v", err)
		return nil
	}
	parsed, iss := ce.env.Parse(c.text)
	if iss.Err() != nil {
		c.celIssues(iss, nil, CodeExprSyntax)
		return nil
	}
	w := &celWalker{c: c, ast: parsed.NativeRep(), reported: map[int64]bool{}}
	w.walk(w.ast.Expr(), nil)
	checked, iss := ce.env.Check(parsed)
	if iss.Err() != nil || len(w.reported) > 0 {
		c.celIssues(iss, w.reported, CodeExprType)
		return nil
	}
	c.checkResult(celKind(checked.OutputType()), 0)
	c.celCost(ce, checked)
	c.reads = celReads(checked, c.env)
	var named map[string]*Program
	for _, r := range c.reads {
		if p := c.env.Named[r]; p != nil {
			if named == nil {
				named = map[string]*Program{}
			}
			named[r] = p
		}
	}
	var opts []cel.ProgramOption
	if !sizeBounded(ce, checked) {
		opts = append(opts, cel.CostLimit(CELCostLimit))
	}
	prg, err := ce.env.Program(checked, opts...)
	if err != nil {
		c.errorAt(0, CodeExprType, "%v", err)
		return nil
	}
	return &celProgram{prg: prg, norms: ce.norms, named: named}
}

// celReads returns the declared variables a checked CEL expression reads
// (CEL's standard library has no clock, and no name for all of them).
func celReads(checked *cel.Ast, env *Env) []string {
	var reads []string
	for _, ref := range checked.NativeRep().ReferenceMap() {
		if _, ok := env.Vars[ref.Name]; ok && ref.Value == nil && !slices.Contains(reads, ref.Name) {
			reads = append(reads, ref.Name)
		}
	}
	return reads
}

// celIssues reports CEL's errors, skipping those on expressions already
// reported (an undeclared field found by the walker); code is the class of
// the phase that found them.
func (c *compilation) celIssues(iss *cel.Issues, reported map[int64]bool, code string) {
	if iss == nil {
		return
	}
	for _, e := range iss.Errors() {
		if reported[e.ExprID] {
			continue
		}
		off := lineColToByte(c.text, e.Location.Line(), e.Location.Column())
		if strings.HasPrefix(e.Message, "Syntax error: token recognition error at: '=") {
			c.singleEquals(off)
			return // what follows in CEL's list stems from it
		}
		if name, ok := strings.CutPrefix(e.Message, "undeclared reference to '"); ok {
			c.unknownName(off, name[:max(strings.IndexByte(name, '\''), 0)])
			continue
		}
		c.errorAt(off, code, "%s", cleanCELMessage(e.Message))
	}
}

// cleanCELMessage shortens a CEL parser message: it drops the list of
// expected tokens and lower-cases "Syntax error".
func cleanCELMessage(msg string) string {
	if i := strings.Index(msg, " expecting {"); i >= 0 {
		msg = msg[:i]
	}
	if rest, ok := strings.CutPrefix(msg, "Syntax error: "); ok {
		msg = "syntax error: " + rest
	}
	return msg
}

// celCost rejects an expression whose estimated worst-case cost is too
// high, and warns about one that may pass the run-time cost limit.
func (c *compilation) celCost(ce *celEnv, checked *cel.Ast) {
	est, err := ce.env.EstimateCost(checked, celSizer{})
	if err != nil {
		c.errorAt(0, CodeExprCost, "cannot estimate the cost of the expression: %v", err)
		return
	}
	switch {
	case est.Max > CELMaxEstimatedCost:
		c.errorAt(0, CodeExprCost, "expression is too expensive: estimated worst-case cost %d exceeds the limit %d",
			est.Max, CELMaxEstimatedCost).Hint = fmt.Sprintf(
			"lists, maps and strings read from variables are assumed to hold up to %d items", AssumedSize)
	case est.Max > CELCostLimit:
		c.warnAt(0, CodeExprUnbounded, "expression may stop at the run-time cost limit of %d: its estimated worst-case cost is %d when lists, maps and strings hold %d items",
			CELCostLimit, est.Max, AssumedSize).Hint = "avoid nesting comprehensions (all, exists, map, filter) over lists read from variables"
	}
}

// sizeBounded reports whether an expression's cost is within the runtime
// limit whatever the size of the values it reads — no loop, no string or
// list operation that grows with its input — so that evaluating it needs
// no cost tracking (a third of a simple condition's time).
func sizeBounded(ce *celEnv, checked *cel.Ast) bool {
	est, err := ce.env.EstimateCost(checked, celSizer{max: math.MaxUint32})
	return err == nil && est.Max <= CELCostLimit
}

// celSizer assumes AssumedSize (or max, when set) for the size of any
// value read from a variable, so that loops over state lists have a
// finite estimated cost.
type celSizer struct{ max uint64 }

// EstimateSize implements cost.Estimator.
func (s celSizer) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if len(n.Path()) > 0 {
		return &cost.SizeEstimate{Min: 0, Max: cmp.Or(s.max, AssumedSize)}
	}
	return nil
}

// EstimateCallCost implements cost.Estimator: standard costs for all calls.
func (celSizer) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// celProgram is a compiled CEL expression; named are the named
// expressions it reads.
type celProgram struct {
	prg   cel.Program
	norms map[string]normalizer
	named map[string]*Program
}

func (p *celProgram) eval(vars map[string]any) (any, error) {
	out, _, err := p.prg.Eval(&celActivation{vars: vars, norms: p.norms, named: p.named})
	if err != nil {
		return nil, err
	}
	return celNative(out)
}

// celActivation resolves variables from a map, normalizing those whose
// declared type needs it, and named expressions by computing them.
type celActivation struct {
	vars  map[string]any
	norms map[string]normalizer
	named map[string]*Program
}

// ResolveName implements interpreter.Activation.
func (a *celActivation) ResolveName(name string) (any, bool) {
	v, ok := a.vars[name]
	if p := a.named[name]; p != nil {
		var err error
		if v, err = p.Eval(a.vars); err != nil {
			return types.NewErr("expression %s: %v", name, err), true
		}
		ok = true
	}
	if n := a.norms[name]; ok && n != nil {
		v, _ = n(v)
	}
	return v, ok
}

// Parent implements interpreter.Activation.
func (a *celActivation) Parent() interpreter.Activation { return nil }

// lineColToByte converts a 1-based line and 0-based column in code points
// into a byte offset of text.
func lineColToByte(text string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return len(text)
		}
		off += i + 1
	}
	return off + runeToByte(text[off:], max(col, 0))
}
