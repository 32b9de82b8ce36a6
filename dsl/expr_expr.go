package dsl

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/checker/nature"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"

	"github.com/runner-dev/runner/runner"
)

// exprEnv is an Env compiled for expr: the variables' types and a
// configuration template whose builtins are shared, read-only, by every
// compilation. The checker caches into natures, so each compilation gets
// its own natures of the variables.
type exprEnv struct {
	vars types.Map
	conf conf.Config
}

// exprEnv returns e compiled for expr, building it on first use.
func (e *Env) exprEnv() *exprEnv {
	e.cache.exprOnce.Do(func() { e.cache.expr = buildExprEnv(e) })
	return e.cache.expr
}

func buildExprEnv(e *Env) *exprEnv {
	vars := make(types.Map, len(e.Vars)+1)
	for name, t := range e.Vars {
		vars[name] = exprType(t, 0)
	}
	vars[budgetVar] = types.Any
	ee := &exprEnv{vars: vars, conf: *conf.CreateNew()}
	maps.Copy(ee.conf.Functions, jsonFunctions)
	ee.conf.WithEnv(vars)
	ee.conf.MaxNodes = ExprMaxNodes
	// The optimizer specializes on declared types (int sets for `in`),
	// which breaks on JSON numbers; expressions are small, so it is off.
	ee.conf.Optimize = false
	return ee
}

// jsonFunctions replace expr's toJSON, which indents, with one that
// writes JSON compactly, as a tool call's arguments or a log line want it;
// toPrettyJSON indents by two spaces. Both write what encoding/json
// writes: keys sorted, HTML escaped.
var jsonFunctions = map[string]*builtin.Function{
	"toJSON": {Name: "toJSON", Func: func(args ...any) (any, error) {
		b, err := json.Marshal(args[0])
		return string(b), err
	}, Types: []reflect.Type{reflect.TypeFor[func(any) string]()}},
	"toPrettyJSON": {Name: "toPrettyJSON", Func: func(args ...any) (any, error) {
		b, err := json.MarshalIndent(args[0], "", "  ")
		return string(b), err
	}, Types: []reflect.Type{reflect.TypeFor[func(any) string]()}},
}

// exprType maps a declared type to an expr type. Closed objects are
// non-strict maps: their undeclared fields are reported by exprWalker, with a
// hint, rather than by the checker.
func exprType(t *Type, depth int) types.Type {
	if t == nil || depth > maxTypeDepth {
		return types.Any
	}
	switch t.Kind {
	case String:
		return types.String
	case Integer:
		return types.Int
	case Number:
		return types.Float64
	case Boolean:
		return types.Bool
	case Array:
		return types.Array(exprType(t.Items, depth+1))
	case Object:
		if t.Fields == nil {
			return types.TypeOf(map[string]any{})
		}
		m := types.Map{types.Extra: types.Any}
		for f, ft := range t.Fields {
			m[f] = exprType(ft, depth+1)
		}
		return m
	}
	return types.Any
}

func (c *compilation) compileExpr() evaluator {
	ee := c.env.exprEnv()
	cfg := ee.conf
	cfg.NtCache = nature.Cache{}
	cfg.Env = ee.vars.Nature()
	tree, err := parser.ParseWithConfig(c.text, &cfg)
	if err != nil {
		c.exprError(err, CodeExprSyntax)
		return nil
	}
	c.reads, c.varies = exprReads(tree.Node, c.env)
	loops := boundLoops(&tree.Node)
	_, err = checker.Check(tree, &cfg)
	w := &exprWalker{c: c}
	w.walk(tree.Node, 0)
	if w.failed || len(c.env.Named) > 0 && c.shadowsNamed(tree.Node) {
		return nil
	}
	if err != nil {
		c.exprError(err, CodeExprType)
		return nil
	}
	c.checkResult(exprKind(tree.Node.Nature()), 0)
	c.exprUnbounded(tree.Node)
	findLast := patchFindLast(&tree.Node)
	equality := patchEquality(&tree.Node)
	members := patchMembers(&tree.Node)
	if patchNamed(&tree.Node, c.env.Named) || members || equality || findLast {
		if _, err := checker.Check(tree, &cfg); err != nil {
			c.exprError(err, CodeExprType)
			return nil
		}
	}
	prg, err := compiler.Compile(tree, &cfg)
	if err != nil {
		c.exprError(err, CodeExprType)
		return nil
	}
	ast.Walk(&tree.Node, forgetNatures{})
	return newExprProgram(prg, loops)
}

// forgetNatures clears the natures of a compiled tree. The program keeps
// its tree, and the checker's natures hold a copy of the variables'
// types each: over a quarter of a served project's live heap, which the
// collector marks at every cycle and lets grow to its multiple.
type forgetNatures struct{}

func (forgetNatures) Visit(n *ast.Node) { (*n).SetNature(nature.Nature{}) }

// exprError reports an error of expr's parser, checker or compiler; code
// is the class of the phase that found it.
func (c *compilation) exprError(err error, code string) {
	fe, ok := errors.AsType[*file.Error](err)
	if !ok {
		c.errorAt(0, code, "%v", err)
		return
	}
	off := runeToByte(c.text, fe.From)
	if fe.Message == "literal not terminated" {
		off = max(openQuote(c.text), 0)
		c.errorAt(off, code, "string not terminated: the quote here has no closing %c", c.text[off]).Hint = "close the string, or escape a quote inside it with \\"
		return
	}
	if fe.Message == `unexpected token Operator("=")` {
		c.singleEquals(off)
		return
	}
	if name, ok := strings.CutPrefix(fe.Message, "unknown name "); ok {
		c.unknownName(off, name)
		return
	}
	c.errorAt(off, code, "%s", fe.Message)
}

// openQuote returns the offset of the quote that opens a string literal
// never closed, or -1.
func openQuote(text string) int {
	for i := 0; i < len(text); i++ {
		if q := text[i]; q == '"' || q == '\'' || q == '`' {
			end := skipString(text, i)
			if end > len(text) {
				return i
			}
			i = end - 1
		}
	}
	return -1
}

// exprFunctionNames are expr's builtin functions, and the one we add.
func exprFunctionNames() []string {
	names := []string{"toPrettyJSON"}
	for _, f := range builtin.Builtins {
		if !strings.HasPrefix(f.Name, "$") {
			names = append(names, f.Name)
		}
	}
	return names
}

// exprKind names a checked expr type in the documents' words.
func exprKind(n *nature.Nature) Kind {
	if n == nil {
		return Any
	}
	if n.Nil {
		return "null"
	}
	switch n.Kind {
	case reflect.Bool:
		return Boolean
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return Integer
	case reflect.Float32, reflect.Float64:
		return Number
	case reflect.String:
		return String
	case reflect.Slice, reflect.Array:
		return Array
	case reflect.Map, reflect.Struct:
		return Object
	}
	return Any
}

// exprProgram is a compiled expr expression; loops marks one whose
// predicates tick a budget (see boundLoops).
type exprProgram struct {
	prg   *vm.Program
	loops bool
}

// newExprProgram makes equality generic: expr specializes == on declared
// int and string operands, but JSON values may be float64 or missing (nil).
func newExprProgram(prg *vm.Program, loops bool) *exprProgram {
	for i, op := range prg.Bytecode {
		if op == vm.OpEqualInt || op == vm.OpEqualString {
			prg.Bytecode[i] = vm.OpEqual
		}
	}
	return &exprProgram{prg: prg, loops: loops}
}

// vms are expr machines to reuse: a machine keeps its stack and scopes
// between runs (a new one each evaluation was a tenth of a served run's
// allocations).
var vms = sync.Pool{New: func() any { return &vm.VM{MemoryBudget: ExprMemoryBudget} }}

func (p *exprProgram) eval(vars map[string]any) (any, error) {
	if p.loops { // a budget of its own for this evaluation
		withBudget := make(map[string]any, len(vars)+1)
		for k, v := range vars {
			withBudget[k] = v
		}
		withBudget[budgetVar] = &exprBudget{deadline: time.Now().Add(ExprTimeLimit)}
		vars = withBudget
	}
	m := vms.Get().(*vm.VM)
	out, err := m.Run(p.prg, vars)
	vms.Put(m)
	if err != nil {
		if fe, ok := errors.AsType[*file.Error](err); ok {
			return nil, errors.New(fe.Message)
		}
		return nil, err
	}
	return runner.NormalizeJSON(out), nil
}
