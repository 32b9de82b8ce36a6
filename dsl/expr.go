package dsl

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Lang names an expression language. RuleSets default to CEL; Pipelines,
// Agents and Tests default to expr. A document switches its default with
// `language:`, one expression with `{cel: "..."}` or `{expr: "..."}`.
type Lang string

// The expression languages.
const (
	CEL  Lang = "cel"
	Expr Lang = "expr"
)

// Limits that keep any definition from hanging or exhausting the runner.
const (
	// MaxExprLen is the longest expression source accepted, in bytes, in
	// either language.
	MaxExprLen = 4096
	// CELRecursionLimit bounds the nesting depth of a CEL expression's parse tree.
	CELRecursionLimit = 64
	// AssumedSize is the size assumed, when estimating cost at compile
	// time, for every list, map or string read from a variable, in either
	// language.
	AssumedSize = 1000
	// CELMaxEstimatedCost is the largest worst-case cost a CEL expression may
	// have, estimated at compile time with variables of AssumedSize; one
	// estimated past CELCostLimit is a warning.
	CELMaxEstimatedCost = 100_000_000
	// CELCostLimit is the cost budget of one CEL evaluation; an evaluation
	// that exceeds it stops with an error.
	CELCostLimit = 1_000_000
	// ExprMaxNodes is the largest number of syntax-tree nodes an expr
	// expression may have.
	ExprMaxNodes = 1000
	// ExprMaxPredicateDepth bounds how deeply expr predicates (all, map,
	// filter, ...) may nest.
	ExprMaxPredicateDepth = 3
	// ExprMemoryBudget is the memory budget of one expr evaluation, in the
	// expr VM's units (roughly: elements and bytes allocated).
	ExprMemoryBudget = 1_000_000
	// ExprMaxSteps bounds the predicate evaluations (loop iterations of
	// all, map, filter, reduce, ...) of one expr evaluation.
	ExprMaxSteps = 1_000_000
	// ExprMaxAccumulated bounds the length of what a reduce accumulates
	// (bytes of a string, elements of a list or map).
	ExprMaxAccumulated = 1 << 20
	// ExprTimeLimit bounds the running time of one expr evaluation.
	ExprTimeLimit = time.Second
)

// Source is the text of one expression and where it sits in a file, so that
// errors inside the expression are reported at their own line:col.
type Source struct {
	Text string
	Lang Lang
	File string
	// Node is the YAML scalar holding Text (any style: plain, quoted, block).
	Node *yaml.Node
	// Src is the whole file's content, used to map offsets inside Text back
	// to file positions. May be nil (then positions are the scalar's).
	Src []byte
}

// Env is what an expression can see: named variables with declared types.
// Build an Env once per place (a pipeline's routes, a rule trigger) and
// compile every expression of that place against it. An Env must not be
// modified after its first use; it may then be shared between goroutines.
type Env struct {
	Vars map[string]*Type
	// Named are a document's named expressions, each also in Vars with its
	// result's type: an expression that reads one computes it then, with
	// its own variables (see NamedExpressions).
	Named map[string]*Program
	// Funcs-free by design: only the languages' standard libraries.
	cache envCache
}

// envCache holds each backend's compiled form of an Env, built on first use.
type envCache struct {
	celOnce  sync.Once
	cel      *celEnv
	celErr   error
	exprOnce sync.Once
	expr     *exprEnv
}

// NewEnv returns an environment with the given variables.
func NewEnv(vars map[string]*Type) *Env { return &Env{Vars: vars} }

// varNames returns the environment's variable names, sorted.
func (e *Env) varNames() []string {
	names := make([]string, 0, len(e.Vars))
	for n := range e.Vars {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Program is a compiled expression, ready to evaluate many times. It is safe
// for concurrent use.
type Program struct {
	text   string
	lang   Lang
	kind   Kind // of its result, as checked: Any when unknown
	ev     evaluator
	reads  []string // the declared variables it reads, through the named expressions it reads
	varies bool     // it reads what no declared variable holds: the clock, $env
}

// evaluator is a backend's compiled expression.
type evaluator interface {
	eval(vars map[string]any) (any, error)
}

// Text returns the expression's source text.
func (p *Program) Text() string { return p.text }

// Lang returns the expression's language.
func (p *Program) Lang() Lang { return p.lang }

// Eval evaluates the expression with the given variables ("state" and so on)
// and returns a JSON-like value: nil, bool, int64, float64, string,
// []any or map[string]any. Errors start with the expression's text. It
// never panics.
func (p *Program) Eval(vars map[string]any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%s: %v", p.text, r)
		}
	}()
	if v, err = p.ev.eval(vars); err != nil {
		return nil, fmt.Errorf("%s: %w", p.text, err)
	}
	return v, nil
}

// readsOnly reports whether the expression reads no variable but those
// in consts, and nothing that varies: its value with them is a constant.
func (p *Program) readsOnly(consts map[string]any) bool {
	if p.varies {
		return false
	}
	for _, name := range p.reads {
		if _, ok := consts[name]; !ok {
			return false
		}
	}
	return true
}

// EvalBool evaluates a condition; a result that is not a boolean is an error.
func (p *Program) EvalBool(vars map[string]any) (bool, error) {
	v, err := p.Eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s: condition must be boolean, got %s", p.text, kindOfValue(v))
	}
	return b, nil
}

// Compile compiles src against env. want is the required result type (nil or
// AnyType: any; BoolType for conditions). Problems are reported at their
// position inside the expression's YAML scalar; the Program is nil if there
// are errors.
func Compile(src Source, env *Env, want *Type) (*Program, Diagnostics) {
	c := &compilation{src: src, text: src.Text, env: env, want: want}
	return c.compile()
}

// compilation is the state of compiling one expression, possibly embedded at
// offset base of src.Text (a template's ${...}).
type compilation struct {
	src    Source
	base   int
	text   string
	env    *Env
	want   *Type
	diags  Diagnostics
	reads  []string // the Program's
	varies bool
	kind   Kind // the result's, as checked
}

func (c *compilation) compile() (*Program, Diagnostics) {
	if c.env == nil {
		c.env = &Env{}
	}
	if len(c.text) > MaxExprLen {
		c.errorAt(0, CodeExprCost, "expression is too long: %d bytes, the limit is %d", len(c.text), MaxExprLen)
		return nil, c.diags
	}
	var ev evaluator
	switch c.src.Lang {
	case CEL:
		ev = c.compileCEL()
	case Expr:
		ev = c.compileExpr()
	default:
		c.errorAt(0, CodeExprLanguage, "unknown expression language %q", c.src.Lang).Hint = `use "cel" or "expr"`
	}
	if c.diags.HasErrors(false) || ev == nil {
		c.hintComment()
		return nil, c.diags
	}
	c.readNamed()
	return &Program{text: c.text, lang: c.src.Lang, kind: c.kind, ev: ev, reads: c.reads, varies: c.varies}, c.diags
}

// hintComment explains a syntax error in an unquoted expression that YAML
// cut short: " #" starts a comment, so `filter(xs, # > 1)` ends at "(xs,".
func (c *compilation) hintComment() {
	n := c.src.Node
	if n == nil || n.Style != 0 || n.LineComment == "" {
		return
	}
	for i := range c.diags {
		if d := &c.diags[i]; d.Code == CodeExprSyntax && d.Hint == "" {
			d.Hint = "YAML ended this value at \" #\", which starts a comment; quote the expression: '...'"
		}
	}
}

// errorAt reports an error at byte offset off of the expression's text.
func (c *compilation) errorAt(off int, code, format string, args ...any) *Diagnostic {
	return c.diags.Errorf(c.src.PosAt(c.base+off), code, format, args...)
}

// warnAt reports a warning at byte offset off of the expression's text.
func (c *compilation) warnAt(off int, code, format string, args ...any) *Diagnostic {
	return c.diags.Warnf(c.src.PosAt(c.base+off), code, format, args...)
}

// checkResult records the checked result type and reports one that cannot
// be what the caller wants. got is the checked result type as a Kind (Any
// when unknown or dynamic).
func (c *compilation) checkResult(got Kind, off int) {
	c.kind = got
	if c.want == nil || c.want.Kind == Any || got == Any || got == c.want.Kind {
		return
	}
	if c.want.Kind == Number && got == Integer {
		return
	}
	what := "expression"
	if c.want.Kind == Boolean {
		what = "condition"
	}
	c.errorAt(off, CodeExprType, "%s must be %s, got %s", what, c.want.Kind, got)
}

// noField reports a read of an undeclared field of a closed object.
func (c *compilation) noField(off int, path, field string, t *Type) {
	c.errorAt(off, CodeExprNoField, "%s has no field %q", path, field).Hint = didYouMean(field, t.FieldNames())
}

// spanTo gives the last diagnostic the extent of the n bytes of the
// expression's text from off, when they are on one line.
func (c *compilation) spanTo(off, n int) {
	d := &c.diags[len(c.diags)-1]
	if end := c.src.PosAt(c.base + off + n); end.Line == d.Pos.Line && end.Col > d.Pos.Col {
		d.End = end
	}
}

// singleEquals reports a single "=" at off, in either language an
// assignment-looking typo of the comparison "==".
func (c *compilation) singleEquals(off int) {
	c.errorAt(off, CodeExprSyntax, `unexpected "=": a comparison is written ==`).Hint = `did you mean "=="?`
	c.spanTo(off, 1)
}

// unknownName reports an identifier that is not a variable. A name that
// is no variable's near miss is most often a string left unquoted
// (state.status == COMPLETED).
func (c *compilation) unknownName(off int, name string) {
	defer c.spanTo(off, len(name))
	if alt, ok := otherLanguage[c.src.Lang][name]; ok {
		c.errorAt(off, CodeExprUnknownName, "unknown name %q", name).Hint = alt
		return
	}
	if strings.HasPrefix(strings.TrimLeft(c.text[min(off+len(name), len(c.text)):], " "), "(") {
		c.errorAt(off, CodeExprUnknownName, "unknown function %q", name).Hint = hintOr(c.functionHint(name),
			"see the functions of the language in docs/language.md, Expressions")
		return
	}
	quote := `'`
	if c.src.Lang == Expr {
		quote = `"`
	}
	c.errorAt(off, CodeExprUnknownName, "unknown name %q", name).Hint = hintOr(didYouMean(name, c.env.varNames()),
		fmt.Sprintf("the variables here are %s; if %s is a string, quote it: %s%s%s",
			strings.Join(c.env.varNames(), ", "), name, quote, name, quote))
}

// functionNames are the global functions of each language, for hints.
var functionNames = map[Lang][]string{
	Expr: exprFunctionNames(),
	CEL: {"size", "has", "int", "uint", "double", "string", "bytes", "bool", "duration", "timestamp",
		"dyn", "type", "matches", "exists", "all", "exists_one", "map", "filter"},
}

// functionAliases are names other languages give a function, by language:
// length(x) is len(x) in expr and size(x) in CEL.
var functionAliases = map[Lang]map[string]string{
	Expr: {"length": "len", "strlen": "len", "lowercase": "lower", "uppercase": "upper", "substr": "x[i:j]"},
	CEL:  {"length": "size", "len": "size"},
}

// functionHint suggests the function meant by an unknown name: a close
// function name, or the language's word for a name from another language.
func (c *compilation) functionHint(name string) string {
	aliases := functionAliases[c.src.Lang]
	candidates := append(slices.Collect(maps.Keys(aliases)), functionNames[c.src.Lang]...)
	s := suggestName(name, candidates)
	if alt, ok := aliases[s]; ok {
		s = alt
	}
	if s == "" {
		return ""
	}
	return `did you mean "` + s + `"?`
}

// otherLanguage hints at the function the other expression language
// names differently.
var otherLanguage = map[Lang]map[string]string{
	CEL: {"len": "CEL has no len(): write size(x) or x.size() (this expression is CEL; write {expr: ...} for expr)",
		"lower": "CEL has no lower(): write x.lowerAscii()", "upper": "CEL has no upper(): write x.upperAscii()"},
	Expr: {"size": "expr has no size(): write len(x) (this expression is expr; write {cel: ...} for CEL)"},
}

// runeToByte converts an offset in code points into text to a byte offset.
func runeToByte(text string, runes int) int {
	off := 0
	for i := 0; i < runes && off < len(text); i++ {
		_, n := utf8.DecodeRuneInString(text[off:])
		off += n
	}
	return off
}

// kindOfValue names the kind of a runtime value in the documents' words.
func kindOfValue(v any) Kind {
	switch v.(type) {
	case string:
		return String
	case bool:
		return Boolean
	case int, int64, int32, uint, uint64, uint32:
		return Integer
	case float64, float32:
		return Number
	case []any:
		return Array
	case map[string]any:
		return Object
	case nil:
		return "null"
	}
	return Any
}
