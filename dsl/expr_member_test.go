package dsl

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/runner-dev/runner/runner"
)

// TestMembersAsExprReadsThem: expressions whose members are rewritten
// (patchMembers) give what expr itself gives for the same text, values and
// errors alike: maps and a state's own type, missing keys, indexes by
// string and by number, optional chains, members of nil and of scalars,
// struct fields, and closures over lists of maps. Outside optional
// chains, no member is left to expr's fetch, and each is a typed call.
func TestMembersAsExprReadsThem(t *testing.T) {
	type point struct{ X int }
	vars := map[string]any{
		"state": runner.State{
			"review": map[string]any{"verdict": "ok", "tags": []any{"a", "b"}},
			"items":  []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}},
			"n":      int64(3),
			"text":   "abc",
		},
		"input": map[string]any{"k": "verdict", "p": point{X: 7}, "none": nil},
	}
	for _, text := range []string{
		`state.review.verdict`,
		`state.review["verdict"]`,
		`state.review[input.k]`,
		`state.review.missing`,
		`state.review.tags[1]`,
		`state.items[0].name`,
		`map(state.items, .name)`,
		`len(filter(state.items, #.name == "b"))`,
		`state.missing?.deeper`,
		`input.none?.x ?? "default"`,
		`input.p.X`,
		`state.n + 1`,
		`state.missing.deeper`,
		`state.text.x`,
		`state.n.x`,
	} {
		t.Run(text, func(t *testing.T) {
			want, wantErr := expr.Eval(text, vars)
			p, ds := Compile(Source{Text: text, Lang: Expr}, NewEnv(map[string]*Type{"state": AnyType, "input": AnyType}), nil)
			if p == nil {
				t.Fatalf("Compile: %v", ds)
			}
			code := p.ev.(*exprProgram).prg.Bytecode
			if !strings.Contains(text, "?") && slices.Contains(code, vm.OpFetch) {
				t.Errorf("a member is still read by expr's fetch:\n%s", p.ev.(*exprProgram).prg.Disassemble())
			}
			if slices.Contains(code, vm.OpCall2) {
				t.Errorf("a member is called with a slice of its arguments, not typed:\n%s", p.ev.(*exprProgram).prg.Disassemble())
			}
			got, err := p.Eval(vars)
			if wantErr != nil {
				msg, _, _ := strings.Cut(wantErr.Error(), " (") // expr's message, without its position
				if err == nil || !strings.Contains(err.Error(), msg) {
					t.Fatalf("Eval = %#v, %v; want the error %q", got, err, msg)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, runner.NormalizeJSON(want)) && !reflect.DeepEqual(got, want) {
				t.Errorf("Eval = %#v, %v; want %#v", got, err, want)
			}
		})
	}
}

// BenchmarkMembers evaluates a condition that reads a state's maps, as
// compiled here (members rewritten) and as expr compiles it alone: the
// baseline, measured in the same run.
func BenchmarkMembers(b *testing.B) {
	const text = `state.review.verdict == "ok" && state.review.score > 0.5 && state.context.user != "" && state.n > 2`
	vars := map[string]any{"state": runner.State{
		"review":  map[string]any{"verdict": "ok", "score": 0.9},
		"context": map[string]any{"user": "ann"},
		"n":       int64(3),
	}}
	b.Run("runner", func(b *testing.B) {
		p, ds := Compile(Source{Text: text, Lang: Expr}, NewEnv(map[string]*Type{"state": AnyType}), BoolType)
		if p == nil {
			b.Fatal(ds)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.EvalBool(vars); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("expr", func(b *testing.B) {
		prg, err := expr.Compile(text, expr.Env(vars), expr.AsBool())
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := expr.Run(prg, vars); err != nil {
				b.Fatal(err)
			}
		}
	})
}
