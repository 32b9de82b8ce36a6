package dsl_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
)

// corpusSet is one set of documents of the project's test corpus, checked
// together as `runner validate` would check them.
type corpusSet struct {
	name string // where it comes from: a path, or file:line of a Go literal
	docs []*dsl.Document
	diag dsl.Diagnostics
}

// TestValidCompiles holds validate to its promise: every document set of
// the test corpus that validate accepts compiles — every pipeline on its
// own (unless it calls the agent's model), every agent, every test's
// target. A compile error here is a check validate lacks.
func TestValidCompiles(t *testing.T) {
	c := newChecker(t)
	sets := testCorpus(t)
	accepted := 0
	for _, s := range sets {
		proj, more := c.Check(s.docs)
		if append(s.diag, more...).HasErrors(false) {
			continue
		}
		accepted++
		for _, msg := range compileAll(c, proj) {
			t.Errorf("%s: validate accepts it, but %s", s.name, msg)
		}
	}
	if accepted < 20 {
		t.Errorf("only %d of %d corpus sets are valid; want at least 20 (is the corpus found?)", accepted, len(sets))
	}
}

// compileAll compiles every target of a checked project and returns what
// went wrong, one message per target.
func compileAll(c *dsl.Checker, proj *dsl.Project) []string {
	// tools no run calls: their Toolbox connects to no MCP server
	opt := dsl.CompileOptions{Tool: (&builtins.Toolbox{}).Tool, Provider: builtins.ScriptedProviders(nil)}
	var out []string
	for name, p := range proj.Pipelines {
		_, err := c.Compile(proj, name, opt)
		switch {
		case p.AgentModel == nil && err != nil:
			out = append(out, "pipeline "+name+" does not compile: "+err.Error())
		case p.AgentModel != nil && (err == nil || !strings.Contains(err.Error(), "no model")):
			out = append(out, "pipeline "+name+" calls the agent's model, and on its own it gives "+errText(err)+`, not "no model"`)
		}
	}
	for name, a := range proj.Agents {
		ao := opt
		ao.Agent = a
		if _, err := c.Compile(proj, a.Pipeline, ao); err != nil {
			out = append(out, "agent "+name+" does not compile: "+err.Error())
		}
	}
	for _, td := range proj.Tests {
		to := opt
		to.Agent = proj.Agents[td.Agent]
		if _, err := c.Compile(proj, td.Pipeline, to); err != nil {
			out = append(out, "the target of test "+td.Name+" does not compile: "+err.Error())
		}
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return strconv.Quote(err.Error())
}

// testCorpus gathers the test corpus: the shipped definitions as one set, each
// file of testdata (this package's and cmd/runner's), the fuzzer's
// regression inputs, and the YAML sources written as Go string constants
// in the tests of builtins, cmd/runner and bench.
func testCorpus(t *testing.T) []corpusSet {
	t.Helper()
	docs, diags := dsl.Load("../pipelines", "../agents", "../rules")
	sets := []corpusSet{{name: "the shipped definitions", docs: docs, diag: diags}}
	for _, glob := range []string{"testdata/*/*.yaml", "../cmd/runner/testdata/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			docs, diags := dsl.Load(f)
			sets = append(sets, corpusSet{name: f, docs: docs, diag: diags})
		}
	}
	sets = append(sets, fuzzInputs(t, "testdata/fuzz/FuzzCheck")...)
	for _, glob := range []string{"../builtins/*_test.go", "../cmd/runner/*_test.go", "../bench/*_test.go", "*_test.go"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			sets = append(sets, goSources(t, f)...)
		}
	}
	return sets
}

// fuzzInputs reads the fuzzer's saved inputs ("go test fuzz v1" files of
// one []byte).
func fuzzInputs(t *testing.T, dir string) []corpusSet {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var sets []corpusSet
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		body := strings.TrimSpace(strings.TrimPrefix(string(raw), "go test fuzz v1\n"))
		src, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(body, "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: not a fuzz input of one []byte: %v", f, err)
		}
		docs, diags := dsl.Parse(f, []byte(src))
		sets = append(sets, corpusSet{name: f, docs: docs, diag: diags})
	}
	return sets
}

// goSources returns the definitions a Go test file writes as constant
// strings: each expression holding "apiVersion: runner/v1" built from
// literals, package-level constants, strings.Replace and ReplaceAll, and
// local variables assigned such values.
func goSources(t *testing.T, file string) []corpusSet {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	sf := &sourceFinder{fset: fset, env: stringConsts(f), seen: map[string]bool{}}
	ast.Inspect(f, sf.visit)
	return sf.sets
}

// sourceFinder walks a Go file in source order, following the values of
// string variables through straight-line assignments.
type sourceFinder struct {
	fset *token.FileSet
	env  map[string]string
	seen map[string]bool
	sets []corpusSet
}

func (sf *sourceFinder) visit(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.AssignStmt:
		sf.assign(x)
		return false
	case ast.Expr:
		src, ok := foldString(x, sf.env)
		if !ok {
			return true
		}
		sf.add(x, src)
		return false
	}
	return true
}

// assign records the sources an assignment computes and what its
// variables hold afterwards.
func (sf *sourceFinder) assign(a *ast.AssignStmt) {
	values := make([]*string, len(a.Rhs))
	for i, r := range a.Rhs {
		if src, ok := foldString(r, sf.env); ok {
			sf.add(r, src)
			values[i] = &src
		} else {
			ast.Inspect(r, sf.visit)
		}
	}
	if len(a.Lhs) != len(a.Rhs) {
		return
	}
	for i, l := range a.Lhs {
		if id, ok := l.(*ast.Ident); ok {
			if values[i] != nil {
				sf.env[id.Name] = *values[i]
			} else {
				delete(sf.env, id.Name)
			}
		}
	}
}

func (sf *sourceFinder) add(e ast.Expr, src string) {
	if !strings.Contains(src, "apiVersion: runner/v1") || sf.seen[src] {
		return
	}
	sf.seen[src] = true
	name := sf.fset.Position(e.Pos()).String()
	docs, diags := dsl.Parse(name, []byte(src))
	sf.sets = append(sf.sets, corpusSet{name: name, docs: docs, diag: diags})
}

// stringConsts maps the file's package-level string constants and
// variables to their values, where those are constant.
func stringConsts(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			v, ok := s.(*ast.ValueSpec)
			if !ok || len(v.Names) != len(v.Values) {
				continue
			}
			for i, name := range v.Names {
				if s, ok := foldString(v.Values[i], out); ok {
					out[name.Name] = s
				}
			}
		}
	}
	return out
}

// foldString evaluates a constant string expression: literals, names of
// known values, concatenations, strings.Replace and strings.ReplaceAll.
func foldString(e ast.Expr, consts map[string]string) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(x.Value)
		return s, err == nil
	case *ast.Ident:
		s, ok := consts[x.Name]
		return s, ok
	case *ast.ParenExpr:
		return foldString(x.X, consts)
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false
		}
		a, ok := foldString(x.X, consts)
		if !ok {
			return "", false
		}
		b, ok := foldString(x.Y, consts)
		return a + b, ok
	case *ast.CallExpr:
		return foldReplace(x, consts)
	}
	return "", false
}

// foldReplace evaluates strings.Replace(s, old, new, n) and
// strings.ReplaceAll(s, old, new) of constant arguments.
func foldReplace(c *ast.CallExpr, consts map[string]string) (string, bool) {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || !isIdent(sel.X, "strings") || len(c.Args) < 3 {
		return "", false
	}
	n := -1
	switch {
	case sel.Sel.Name == "ReplaceAll" && len(c.Args) == 3:
	case sel.Sel.Name == "Replace" && len(c.Args) == 4:
		lit, ok := c.Args[3].(*ast.BasicLit)
		if !ok || lit.Kind != token.INT {
			return "", false
		}
		n, _ = strconv.Atoi(lit.Value)
	default:
		return "", false
	}
	var args [3]string
	for i := range args {
		if args[i], ok = foldString(c.Args[i], consts); !ok {
			return "", false
		}
	}
	return strings.Replace(args[0], args[1], args[2], n), true
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
