package dsl

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"go.yaml.in/yaml/v3"
)

// A Pipeline or a RuleSet may name expressions once and read them in any
// expression of the document, in either language:
//
//	expressions:
//	  approved: lower(state.decision ?? "") in ["approve", "yes"]
//	nodes:
//	  gate: {type: noop, next: [{when: approved, to: act}, {to: END}]}
//
// Each is compiled where it is written — its errors are reported there —
// against the variables every expression of the document sees (a
// pipeline's state, input, budget, error and run; a rule set's state,
// input, agent, budget and run), and may read the named expressions
// written before or after it, as long as none reads itself. Where it is
// read it is a variable of its result's type (`approved` is a boolean),
// and its value is computed when and where it is read, with the variables
// of that evaluation: as if it were written out there, in its own
// language.

// named is a document's named expressions, compiled.
type named struct {
	types map[string]*Type
	progs map[string]*Program
	// key tells environments with them apart: their names, languages and
	// texts, so documents that name the same expressions over the same
	// variables share environments and compiled expressions.
	key string
}

// namePattern is what a named expression's name must look like: an
// identifier of both languages.
var namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedNames are words a named expression cannot take: the languages'
// keywords and literals (the functions are in functionNames).
var reservedNames = []string{"true", "false", "nil", "null", "in", "not", "and", "or", "let", "if", "else",
	"matches", "contains", "startsWith", "endsWith", "has"}

// namedExpressions reads and compiles the expressions: block of d, whose
// expressions see base, in an order in which each is compiled after the
// named expressions it reads. It returns nil when d names none.
func (k *check) namedExpressions(d *Document, lang Lang, base map[string]*Type) *named {
	block := d.Get("expressions")
	if block == nil || block.Kind != yaml.MappingNode || len(block.Content) == 0 {
		return nil
	}
	nx := &named{types: map[string]*Type{}, progs: map[string]*Program{}}
	baseEnv := k.env(base)
	decl := map[string]*yaml.Node{}
	var order []*yaml.Node // the keys, in document order
	pairs(block, func(key, v *yaml.Node) {
		if k.goodName(d, key, base) && !k.bad(v) {
			decl[key.Value] = v
			order = append(order, key)
		}
	})
	state := map[string]int{} // 1: being compiled, 2: done
	var visit func(key *yaml.Node, path []string)
	visit = func(key *yaml.Node, path []string) {
		name := key.Value
		switch state[name] {
		case 1:
			cycle := append(path[slices.Index(path, name):], name)
			k.diags.Errorf(d.Pos(key), CodeRefCycle, "expression %s reads itself: %s", name, strings.Join(cycle, " → ")).Hint =
				"a named expression may read others, but not in a circle"
			nx.types[name] = AnyType
			return
		case 2:
			return
		}
		state[name] = 1
		for _, dep := range identifiers(source(d, decl[name], lang).Text) {
			if decl[dep] != nil {
				visit(keyNode(order, dep), append(path, name))
			}
		}
		state[name] = 2
		p := k.compile(d, decl[name], lang, k.namedEnv(baseEnv, nx), nil)
		nx.types[name] = AnyType
		if p != nil {
			nx.types[name], nx.progs[name] = &Type{Kind: p.kind}, p
		}
		src := source(d, decl[name], lang)
		nx.key += fmt.Sprintf("|%s=%s:%q", name, src.Lang, src.Text)
	}
	for _, key := range order {
		visit(key, nil)
	}
	return nx
}

// keyNode returns the key of name among keys, or nil.
func keyNode(keys []*yaml.Node, name string) *yaml.Node {
	for _, k := range keys {
		if k.Value == name {
			return k
		}
	}
	return nil
}

// goodName reports whether a named expression's name can be read as one:
// an identifier, neither a keyword nor a function of either language nor
// a variable of the document's expressions.
func (k *check) goodName(d *Document, key *yaml.Node, base map[string]*Type) bool {
	name, why := key.Value, ""
	switch {
	case !namePattern.MatchString(name):
		why = "is not a name expressions can read: use letters, digits and _, not starting with a digit"
	case slices.Contains(reservedNames, name):
		why = "is a word of the expression languages"
	case slices.Contains(functionNames[Expr], name) || slices.Contains(functionNames[CEL], name):
		why = "is the name of a function of the expression languages"
	case base[name] != nil:
		why = "is the name of a variable every expression here sees"
	}
	if why != "" {
		k.diags.Errorf(d.Pos(key), CodeSchemaFormat, "expression name %q %s", name, why).Hint = "choose another name"
	}
	return why == ""
}

// identifiers returns the names text may read — identifiers outside
// string literals that do not follow a dot (a field) — for the order in
// which named expressions are compiled (a name it misses only makes a
// read of a later one an unknown name).
func identifiers(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		switch c := text[i]; {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(text, i)
		case isIdentStart(c):
			j := i + 1
			for j < len(text) && (isIdentStart(text[j]) || text[j] >= '0' && text[j] <= '9') {
				j++
			}
			if name := text[i:j]; (i == 0 || text[i-1] != '.') && !slices.Contains(out, name) {
				out = append(out, name)
			}
			i = j
		case c >= '0' && c <= '9': // a number, with its exponent
			for i++; i < len(text) && (isIdentStart(text[i]) || text[i] >= '0' && text[i] <= '9' || text[i] == '.'); i++ {
			}
		default:
			i++
		}
	}
	return out
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// skipString returns the offset past the string literal that opens at i.
func skipString(text string, i int) int {
	q := text[i]
	for i++; i < len(text) && text[i] != q; i++ {
		if text[i] == '\\' && q != '`' {
			i++
		}
	}
	return i + 1
}

// namedEnv returns env with the named expressions nx (nil: none) added,
// shared as k.env shares environments. A variable of the place comes
// first: a named expression of its name is not read there.
func (k *check) namedEnv(env *Env, nx *named) *Env {
	if nx == nil || len(nx.types) == 0 {
		return env
	}
	key := namedEnvKey{env, nx.key}
	if e := k.namedEnvs[key]; e != nil {
		return e
	}
	vars := maps.Clone(env.Vars)
	for name, t := range nx.types {
		if _, ok := vars[name]; !ok {
			vars[name] = t
		}
	}
	e := NewEnv(vars)
	e.Named = maps.Clone(nx.progs)
	k.namedEnvs[key] = e
	return e
}

// namedEnvKey is what an environment with named expressions depends on:
// the environment without them, and which they are.
type namedEnvKey struct {
	env   *Env
	named string
}

// readNamed makes the variables a compiled expression reads those of the
// named expressions it reads, rather than their names.
func (c *compilation) readNamed() {
	var reads []string
	for _, r := range c.reads {
		p := c.env.Named[r]
		if p == nil {
			reads = append(reads, r)
			continue
		}
		c.varies = c.varies || p.varies
		for _, pr := range p.reads {
			if !slices.Contains(reads, pr) {
				reads = append(reads, pr)
			}
		}
	}
	c.reads = reads
}

// patchNamed makes every read of a named expression in a checked expr tree
// a call that computes it with the variables of the evaluation ($env);
// it reports whether it rewrote one (the tree must then be checked
// again).
func patchNamed(tree *ast.Node, progs map[string]*Program) bool {
	if len(progs) == 0 {
		return false
	}
	v := &namedPatcher{progs: progs}
	ast.Walk(tree, v)
	return v.found
}

type namedPatcher struct {
	progs map[string]*Program
	found bool
}

func (v *namedPatcher) Visit(n *ast.Node) {
	id, ok := (*n).(*ast.IdentifierNode)
	if !ok {
		return
	}
	if p := v.progs[id.Value]; p != nil {
		ast.Patch(n, directCall(p.evalIn(id.Value), &ast.IdentifierNode{Value: "$env"}))
		v.found = true
	}
}

// evalIn returns a function that evaluates the named expression p, called
// name, with an evaluation's variables; it panics with the error, which
// the evaluation returns.
func (p *Program) evalIn(name string) func(any) any {
	return func(env any) any {
		vars, _ := env.(map[string]any)
		v, err := p.Eval(vars)
		if err != nil {
			panic(fmt.Errorf("expression %s: %w", name, err))
		}
		return v
	}
}

// shadowsNamed reports a let in an expr tree that takes the name of a
// named expression, which would make reads of the name ambiguous.
func (c *compilation) shadowsNamed(tree ast.Node) bool {
	found := false
	ast.Walk(&tree, visitFunc(func(n *ast.Node) {
		if let, ok := (*n).(*ast.VariableDeclaratorNode); ok && c.env.Named[let.Name] != nil {
			c.errorAt(runeToByte(c.text, let.Location().From), CodeExprUnknownName, "let %s hides the named expression %s", let.Name, let.Name).Hint =
				"rename the variable"
			found = true
		}
	}))
	return found
}

// visitFunc adapts a function to ast.Visitor.
type visitFunc func(*ast.Node)

func (f visitFunc) Visit(n *ast.Node) { f(n) }
