package dsl

import (
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"go.yaml.in/yaml/v3"
)

// testEnv is the environment of a pipeline's routes.
func testEnv() *Env {
	return NewEnv(map[string]*Type{
		"state": ObjectOf(map[string]*Type{
			"status":                      StringType,
			"next_action":                 StringType,
			"transaction_id":              StringType,
			"step_count":                  IntegerType,
			"score":                       NumberType,
			"done":                        BoolType,
			"consecutive_failed_resolves": IntegerType,
			"completed_steps":             ArrayOf(StringType),
			"counts":                      ArrayOf(IntegerType),
			"context":                     {Kind: Object},
			"review":                      ObjectOf(map[string]*Type{"score": NumberType, "verdict": StringType}),
			"items":                       ArrayOf(ObjectOf(map[string]*Type{"name": StringType})),
		}),
		"input":  AnyType,
		"budget": IntegerType,
	})
}

// exprSource returns a Source for text in a literal block scalar of a file,
// whose text starts at line 3, column 5.
func exprSource(t *testing.T, lang Lang, text string) Source {
	t.Helper()
	src := "route:\n  when: |\n    " + text + "\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	node := doc.Content[0].Content[1].Content[1]
	return Source{Text: text, Lang: lang, File: "p.yaml", Node: node, Src: []byte(src)}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name, text string
		lang       Lang
		want       *Type
		msg, hint  string
		at         string // where in text the error points
	}{
		{"cel syntax", "state.step_count >= )", CEL, BoolType, "syntax error: mismatched input ')'", "", ")"},
		{"expr syntax", "state.step_count >= )", Expr, BoolType, "unexpected token Bracket(\")\")", "", ")"},
		{"cel unknown name", "stat.done", CEL, BoolType, `unknown name "stat"`, `did you mean "state"?`, "stat"},
		{"expr unknown name", "stat.done", Expr, BoolType, `unknown name "stat"`, `did you mean "state"?`, "stat"},
		{"cel no field", "state.consecutive_faild_resolves > 2", CEL, BoolType,
			`state has no field "consecutive_faild_resolves"`, `did you mean "consecutive_failed_resolves"?`, "consecutive"},
		{"expr no field", "state.consecutive_faild_resolves > 2", Expr, BoolType,
			`state has no field "consecutive_faild_resolves"`, `did you mean "consecutive_failed_resolves"?`, "consecutive"},
		{"cel nested no field", `state.done && state.review.scroe > 0.5`, CEL, BoolType,
			`state.review has no field "scroe"`, `did you mean "score"?`, "scroe"},
		{"expr nested no field", `state.done && state.review.scroe > 0.5`, Expr, BoolType,
			`state.review has no field "scroe"`, `did you mean "score"?`, "scroe"},
		{"cel loop variable no field", `state.items.exists(i, i.nmae == "x")`, CEL, BoolType,
			`i has no field "nmae"`, `did you mean "name"?`, "nmae"},
		{"expr predicate no field", `any(state.items, .nmae == "x")`, Expr, BoolType,
			`# has no field "nmae"`, `did you mean "name"?`, "nmae"},
		{"cel has on no field", `has(state.foo)`, CEL, BoolType, `state has no field "foo"`, "", "foo"},
		{"cel not boolean", "state.status", CEL, BoolType, "condition must be boolean, got string", "", "state"},
		{"expr not boolean", "state.status", Expr, BoolType, "condition must be boolean, got string", "", "state"},
		{"cel int not boolean", "state.step_count + 1", CEL, BoolType, "condition must be boolean, got integer", "", "state"},
		{"expr int not boolean", "state.step_count + 1", Expr, BoolType, "condition must be boolean, got integer", "", "state"},
		{"cel mismatch", `state.step_count == "x"`, CEL, BoolType,
			"found no matching overload for '_==_' applied to '(int, string)'", "", "=="},
		{"expr mismatch", "state.status + 1 > 0", Expr, BoolType,
			"invalid operation: + (mismatched types string and int)", "", "+"},
		{"expr want string", "state.step_count", Expr, StringType, "expression must be string, got integer", "", "state"},
		{"unknown language", "true", "lua", BoolType, `unknown expression language "lua"`, `use "cel" or "expr"`, "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := exprSource(t, tt.lang, tt.text)
			p, ds := Compile(src, testEnv(), tt.want)
			if p != nil || len(ds) != 1 {
				t.Fatalf("Compile(%q) = %v, %v; want one error", tt.text, p, ds)
			}
			d := ds[0]
			if d.Severity != Error || !strings.HasPrefix(d.Message, tt.msg) || d.Hint != tt.hint {
				t.Errorf("got %q (hint %q), want %q (hint %q)", d.Message, d.Hint, tt.msg, tt.hint)
			}
			col := 5 + utf8.RuneCountInString(tt.text[:strings.Index(tt.text, tt.at)])
			if want := (Pos{File: "p.yaml", Line: 3, Col: col}); d.Pos != want {
				t.Errorf("got position %v, want %v", d.Pos, want)
			}
		})
	}
}

// TestCompileErrorPositions checks that errors point into YAML scalars of
// every style, through escapes, line breaks and wide characters.
func TestCompileErrorPositions(t *testing.T) {
	tests := []struct {
		name, src string
		lang      Lang
	}{
		{"cel literal block", "when: |\n  state.done &&\n    sate.x\n", CEL},
		{"expr literal block", "when: |\n  state.done &&\n    sate.x\n", Expr},
		{"cel folded block", "when: >-\n  state.done\n  && sate.x\n", CEL},
		{"cel double-quoted", `when: "state.status == \"\u00e9\" && sate.x"` + "\n", CEL},
		{"expr double-quoted", `when: "state.status == \"\u00e9\" && sate.x"` + "\n", Expr},
		{"cel single-quoted", "when: 'state.status == ''日本'' && sate.x'\n", CEL},
		{"expr single-quoted", "when: 'state.status == ''日本'' && sate.x'\n", Expr},
		{"cel flow mapping", "when: {cel: \"'é' == state.status &&\n    sate.x\"}\n", CEL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tt.src), &doc); err != nil {
				t.Fatalf("yaml: %v", err)
			}
			n := findScalar(&doc, "sate")
			src := Source{Text: n.Value, Lang: tt.lang, File: "f.yaml", Node: n, Src: []byte(tt.src)}
			_, ds := Compile(src, testEnv(), BoolType)
			if len(ds) != 1 || ds[0].Message != `unknown name "sate"` {
				t.Fatalf("Compile(%q) = %v, want one unknown name error", n.Value, ds)
			}
			if want := markerPos(t, tt.src, "sate"); ds[0].Pos != want {
				t.Errorf("got position %v, want %v", ds[0].Pos, want)
			}
		})
	}
}

func TestCompileOK(t *testing.T) {
	tests := []struct {
		name, text string
		lang       Lang
		want       *Type
	}{
		{"cel condition", `state.next_action == "COMPLETE" || state.step_count >= 20`, CEL, BoolType},
		{"expr condition", `state.next_action == "COMPLETE" || state.step_count >= 20`, Expr, BoolType},
		{"cel dyn condition", "input.approved", CEL, BoolType},
		{"expr any condition", "input.approved", Expr, BoolType},
		{"cel open map", `state.context.anything == 1`, CEL, BoolType},
		{"expr open map", `state.context.anything == 1`, Expr, BoolType},
		{"cel any result", "state.completed_steps", CEL, nil},
		{"expr any result", "state.completed_steps", Expr, AnyType},
		{"cel number accepts int", "state.step_count", CEL, NumberType},
		{"cel comprehension", `state.completed_steps.exists(s, s == "triage")`, CEL, BoolType},
		{"expr predicate", `any(state.completed_steps, # == "triage")`, Expr, BoolType},
		{"cel has", `has(state.review)`, CEL, BoolType},
		{"expr let", `let n = state.step_count; n > 0`, Expr, BoolType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ds := Compile(exprSource(t, tt.lang, tt.text), testEnv(), tt.want)
			if len(ds) != 0 || p == nil {
				t.Fatalf("Compile(%q): %v", tt.text, ds)
			}
			if p.Text() != tt.text || p.Lang() != tt.lang {
				t.Errorf("got Text %q Lang %q, want %q %q", p.Text(), p.Lang(), tt.text, tt.lang)
			}
		})
	}
}

func TestEval(t *testing.T) {
	abc := []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}, map[string]any{"name": "c"}}
	state := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return map[string]any{"state": m, "input": map[string]any{"n": float64(2)}}
	}
	tests := []struct {
		name, text string
		vars       map[string]any
		want       map[Lang]any
	}{
		{"int as float64", "state.step_count >= 20", state("step_count", float64(3)),
			map[Lang]any{CEL: false, Expr: false}},
		{"int as int", "state.step_count >= 20", state("step_count", 3),
			map[Lang]any{CEL: false, Expr: false}},
		{"int as float64 over", "state.step_count >= 20", state("step_count", float64(25)),
			map[Lang]any{CEL: true, Expr: true}},
		{"int equality on float64", "state.step_count == 3", state("step_count", float64(3)),
			map[Lang]any{CEL: true, Expr: true}},
		{"int in list", "state.step_count in [1, 3]", state("step_count", float64(3)),
			map[Lang]any{CEL: true, Expr: true}},
		{"int list items", "state.counts[1] == 2", state("counts", []any{float64(1), float64(2)}),
			map[Lang]any{CEL: true, Expr: true}},
		{"number as int", "state.score + 0.5", state("score", 1),
			map[Lang]any{CEL: 1.5, Expr: 1.5}},
		{"missing field", `state.next_action == "COMPLETE"`, state(),
			map[Lang]any{CEL: false, Expr: false}},
		{"condition", `state.next_action == "COMPLETE" || state.step_count >= 20`,
			state("next_action", "COMPLETE", "step_count", float64(1)), map[Lang]any{CEL: true, Expr: true}},
		{"nested object", `state.review.verdict`, state("review", map[string]any{"verdict": "ok"}),
			map[Lang]any{CEL: "ok", Expr: "ok"}},
		{"open map", `state.context.user`, state("context", map[string]any{"user": "ann"}),
			map[Lang]any{CEL: "ann", Expr: "ann"}},
		{"list result", `[state.status, 1]`, state("status", "open"),
			map[Lang]any{CEL: []any{"open", int64(1)}, Expr: []any{"open", int64(1)}}},
		{"map result", `{"a": state.done}`, state("done", true),
			map[Lang]any{CEL: map[string]any{"a": true}, Expr: map[string]any{"a": true}}},
		{"input", "input.n * 2.0", state(), map[Lang]any{CEL: 4.0, Expr: 4.0}},
		{"loop over objects", `state.items.exists(i, i.name == "b")`,
			state("items", []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}),
			map[Lang]any{CEL: true}},
		{"predicate over objects", `any(state.items, .name == "b")`,
			state("items", []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}),
			map[Lang]any{Expr: true}},
		{"range", "1..3", state(), map[Lang]any{Expr: []any{int64(1), int64(2), int64(3)}}},
		{"integer result", "state.step_count + 1", state("step_count", int64(2)),
			map[Lang]any{CEL: int64(3), Expr: int64(3)}},
		{"map equality, int64 against a literal", `state.review == {"id": 0, "tags": [1, 2.5]}`,
			state("review", map[string]any{"id": int64(0), "tags": []any{int64(1), 2.5}}),
			map[Lang]any{Expr: true}},
		{"list of maps equality", `state.items == [{"n": 1}]`, state("items", []any{map[string]any{"n": int64(1)}}),
			map[Lang]any{Expr: true}},
		{"map inequality", `state.review != {"id": 1}`, state("review", map[string]any{"id": int64(0)}),
			map[Lang]any{Expr: true}},
		{"map inequality, equal maps", `state.review != {"id": 0}`, state("review", map[string]any{"id": int64(0)}),
			map[Lang]any{Expr: false}},
		{"map against nil", `state.review == nil`, state("review", map[string]any{"id": int64(0)}),
			map[Lang]any{Expr: false}},
		{"toJSON is compact", `toJSON({"b": [1, 2], "a": "<x>"})`, state(),
			map[Lang]any{Expr: `{"a":"\u003cx\u003e","b":[1,2]}`}},
		{"toPrettyJSON indents", `toPrettyJSON({"a": [1]})`, state(),
			map[Lang]any{Expr: "{\n  \"a\": [\n    1\n  ]\n}"}},
		// expr-lang/expr#950: findLast and findLastIndex after another operand
		{"findLast after an operand", `"x" + findLast(state.items, .name != "c").name`, state("items", abc),
			map[Lang]any{Expr: "xb"}},
		{"findLast none", `[1, findLast(state.items, .name == "z")]`, state("items", abc),
			map[Lang]any{Expr: []any{int64(1), nil}}},
		{"findLast in a map", `{"r": findLast(state.items, .name < "c").name}`, state("items", abc),
			map[Lang]any{Expr: map[string]any{"r": "b"}}},
		{"findLastIndex after an operand", `10 + findLastIndex(state.items, .name != "c")`, state("items", abc),
			map[Lang]any{Expr: int64(11)}},
		{"findLastIndex none", `[findLastIndex(state.items, .name == "z"), findLastIndex([], true)]`, state("items", abc),
			map[Lang]any{Expr: []any{nil, nil}}},
		{"findLastIndex last", `findLastIndex(state.items, true) + findLastIndex(state.items, .name == "a")`, state("items", abc),
			map[Lang]any{Expr: int64(2)}},
	}
	for _, tt := range tests {
		for lang, want := range tt.want {
			t.Run(tt.name+"/"+string(lang), func(t *testing.T) {
				p, ds := Compile(Source{Text: tt.text, Lang: lang}, testEnv(), nil)
				if p == nil {
					t.Fatalf("Compile(%q): %v", tt.text, ds)
				}
				got, err := p.Eval(tt.vars)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("Eval(%q) = %#v, %v; want %#v", tt.text, got, err, want)
				}
			})
		}
	}
}

func TestEvalErrors(t *testing.T) {
	tests := []struct {
		name, text string
		lang       Lang
		vars       map[string]any
		msg        string
	}{
		{"cel not bool at runtime", "input.x", CEL, map[string]any{"input": map[string]any{"x": "s"}},
			"condition must be boolean, got string"},
		{"expr not bool at runtime", "input.x", Expr, map[string]any{"input": map[string]any{"x": 1}},
			"condition must be boolean, got integer"},
		{"cel missing variable", "input.x", CEL, map[string]any{}, "no such attribute"},
		{"expr index out of range", "state.completed_steps[5] == 'a'", Expr,
			map[string]any{"state": map[string]any{"completed_steps": []any{}}}, "index out of range"},
		{"cel field of wrong value", "state.review.score > 1.0", CEL,
			map[string]any{"state": map[string]any{"review": "x"}}, `no such field "score"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ds := Compile(Source{Text: tt.text, Lang: tt.lang}, testEnv(), BoolType)
			if p == nil {
				t.Fatalf("Compile(%q): %v", tt.text, ds)
			}
			got, err := p.EvalBool(tt.vars)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("EvalBool(%q) = %v, %v; want error containing %q", tt.text, got, err, tt.msg)
			}
		})
	}
}

func TestCompileLimits(t *testing.T) {
	long := strings.Repeat("1 + ", MaxExprLen/4) + "1 > 0"
	tests := []struct {
		name, text string
		lang       Lang
		msg        string
	}{
		{"cel too long", long, CEL, "expression is too long"},
		{"expr too long", long, Expr, "expression is too long"},
		{"cel too deep", strings.Repeat("(", 100) + "true" + strings.Repeat(")", 100), CEL, "recursion"},
		{"cel too expensive", `state.completed_steps.all(a, state.completed_steps.all(b,
			state.completed_steps.all(c, a + b + c != "")))`, CEL, "expression is too expensive"},
		{"expr too many nodes", strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + " != nil", Expr,
			"exceeds maximum allowed nodes"},
		{"expr predicates too deep", `all(1..2, all(1..2, all(1..2, all(1..2, true))))`, Expr,
			"predicates are nested too deeply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ds := Compile(Source{Text: tt.text, Lang: tt.lang}, testEnv(), BoolType)
			if p != nil || len(ds) == 0 || !strings.Contains(ds[0].Message, tt.msg) {
				t.Errorf("Compile: got %v, %v; want error containing %q", p, ds, tt.msg)
			}
		})
	}
}

func TestEvalLimits(t *testing.T) {
	steps, counts := make([]any, 3000), make([]any, 3000)
	for i := range steps {
		steps[i], counts[i] = "step", float64(i)
	}
	vars := map[string]any{"state": map[string]any{"completed_steps": steps, "counts": counts}}
	tests := []struct {
		name, text string
		lang       Lang
		msg        string
	}{
		{"cel cost", `state.counts.map(a, state.counts.map(b, a + b)).size()`, CEL,
			"cost limit exceeded"},
		{"expr repeat", `len(repeat("x", 1000000000))`, Expr, "memory budget exceeded"},
		{"expr nested map", `len(map(1..1000000, map(1..1000000, #)))`, Expr, "memory budget exceeded"},
		{"expr map over state", `len(map(state.completed_steps, map(state.completed_steps, # + "x")))`, Expr,
			"(the limit)"}, // the step or the time bound, whichever comes first on a busy machine
		{"expr doubling reduce", `len(reduce(1..40, #acc + #acc, "x")) > 0`, Expr, "reduce accumulated more than"},
		{"expr nested all", `all(state.counts, all(state.counts, all(state.counts, # >= 0)))`, Expr, "(the limit)"}, // the step or the time bound, whichever comes first on a busy machine
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ds := Compile(Source{Text: tt.text, Lang: tt.lang}, testEnv(), nil)
			if p == nil {
				t.Fatalf("Compile(%q): %v", tt.text, ds)
			}
			got, err := p.Eval(vars)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Eval = %v, %v; want error containing %q", got, err, tt.msg)
			}
		})
	}
}

// TestCompiledTreeHoldsNoNatures: a compiled expr program keeps its tree
// without the checker's natures (each held a copy of the variables'
// types), and still runs.
func TestCompiledTreeHoldsNoNatures(t *testing.T) {
	p, ds := Compile(Source{Text: `state.review.score > 0.5 && len(state.completed_steps) > 1`, Lang: Expr}, testEnv(), BoolType)
	if p == nil {
		t.Fatalf("Compile: %v", ds)
	}
	typed := 0
	ast.Find(p.ev.(*exprProgram).prg.Node(), func(n ast.Node) bool {
		if n.Nature().TypeData != nil || n.Nature().Kind != reflect.Invalid {
			typed++
		}
		return false
	})
	if typed > 0 {
		t.Errorf("%d nodes of the compiled tree keep their natures", typed)
	}
	vars := map[string]any{"state": map[string]any{"review": map[string]any{"score": 1.0}, "completed_steps": []any{"a", "b"}}}
	if ok, err := p.EvalBool(vars); !ok || err != nil {
		t.Errorf("EvalBool = %v, %v; want true", ok, err)
	}
}

// TestCompileConcurrent shares one Env between goroutines (run with -race).
func TestCompileConcurrent(t *testing.T) {
	env := testEnv()
	var wg sync.WaitGroup
	for i := range 8 {
		lang := []Lang{CEL, Expr}[i%2]
		wg.Go(func() {
			p, ds := Compile(Source{Text: "state.step_count >= 20 && state.review.score > 0.5", Lang: lang}, env, BoolType)
			if p == nil {
				t.Errorf("Compile: %v", ds)
				return
			}
			vars := map[string]any{"state": map[string]any{"step_count": 21.0, "review": map[string]any{"score": 1}}}
			if ok, err := p.EvalBool(vars); !ok || err != nil {
				t.Errorf("EvalBool = %v, %v; want true", ok, err)
			}
		})
	}
	wg.Wait()
}

func TestTemplate(t *testing.T) {
	vars := map[string]any{"state": map[string]any{
		"transaction_id": "tx-1", "step_count": float64(3), "completed_steps": []any{"a", "b"}}}
	tests := []struct {
		name, text, want string
		lang             Lang
	}{
		{"cel", "Investigate ${state.transaction_id} at step ${state.step_count}", "Investigate tx-1 at step 3", CEL},
		{"expr", "Investigate ${state.transaction_id} at step ${state.step_count}", "Investigate tx-1 at step 3", Expr},
		{"escape", "literal $${x} and $5 and ${ state.step_count + 1 }", "literal ${x} and $5 and 4", Expr},
		{"braces and strings", `${ {"a": "}"}["a"] } ${state.completed_steps}`, `} ["a","b"]`, CEL},
		{"no expressions", "plain text", "plain text", Expr},
		{"objects as encoding/json writes them", `${ {"b": [1.5, nil], "a": "<x>"} }`, `{"a":"\u003cx\u003e","b":[1.5,null]}`, Expr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, ds := CompileTemplate(Source{Text: tt.text, Lang: tt.lang}, testEnv())
			if tpl == nil {
				t.Fatalf("CompileTemplate(%q): %v", tt.text, ds)
			}
			got, err := tpl.Render(vars)
			if err != nil || got != tt.want {
				t.Errorf("Render = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestTemplateWith: With renders the expressions that read only its
// constants (here input) once; those that read other variables, the
// clock or $env stay to render at each Render.
func TestTemplateWith(t *testing.T) {
	consts := map[string]any{"input": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}}
	vars := map[string]any{"state": map[string]any{"step_count": 3.0}} // no input: only what With rendered has it
	tests := []struct {
		lang       Lang
		text, want string
		exprsLeft  int
	}{
		{Expr, `${join(map(input, .name), ",")} at ${state.step_count}, ${1 + 1} ${let x = input; len(x)}`, "a,b at 3, 2 2", 1},
		{CEL, `${input.map(t, t.name)} at ${state.step_count}, ${size(input)}`, `["a","b"] at 3, 2`, 1},
		{Expr, `${now().Year() > 2000} ${len(input)}`, "true 2", 1},
		{Expr, `${$env["state"] == nil} ${len(input)}`, "false 2", 1},
		{CEL, `${state.step_count + size(input)}`, "", 1},
	}
	for _, tt := range tests {
		tpl, ds := CompileTemplate(Source{Text: tt.text, Lang: tt.lang}, testEnv())
		if tpl == nil {
			t.Fatalf("CompileTemplate(%q): %v", tt.text, ds)
		}
		with := tpl.With(consts)
		left := 0
		for _, p := range with.parts {
			if p.prog != nil {
				left++
			}
		}
		if left != tt.exprsLeft {
			t.Errorf("%s: %d expressions left after With, want %d", tt.text, left, tt.exprsLeft)
		}
		if tt.want == "" {
			continue
		}
		if got, err := with.Render(vars); err != nil || got != tt.want {
			t.Errorf("%s: With(…).Render = %q, %v; want %q", tt.text, got, err, tt.want)
		}
	}
}

// TestTemplateTextAlone: a template without expressions renders as its
// text, allocating nothing.
func TestTemplateTextAlone(t *testing.T) {
	tpl, ds := CompileTemplate(Source{Text: "You are a planner.", Lang: Expr}, testEnv())
	if tpl == nil {
		t.Fatal(ds)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = tpl.Render(nil) }); n != 0 {
		t.Errorf("Render of a text alone: %.0f allocations, want 0", n)
	}
}

func TestTemplateErrors(t *testing.T) {
	tests := []struct {
		name, text, msg, at string
		lang                Lang
	}{
		{"unterminated", "Investigate ${state.transaction_id", "unterminated ${ in template", "${", Expr},
		{"empty", "a ${ } b", "empty ${} in template", "${", CEL},
		{"error inside", "Step ${state.step_cont} of ${state.status}", `state has no field "step_cont"`, "step_cont", CEL},
		{"second expression", "Step ${state.step_count} of ${stat.status}", `unknown name "stat"`, "stat.", Expr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, ds := CompileTemplate(exprSource(t, tt.lang, tt.text), testEnv())
			if tpl != nil || len(ds) != 1 || ds[0].Message != tt.msg {
				t.Fatalf("CompileTemplate(%q) = %v, %v; want error %q", tt.text, tpl, ds, tt.msg)
			}
			col := 5 + utf8.RuneCountInString(tt.text[:strings.Index(tt.text, tt.at)])
			if want := (Pos{File: "p.yaml", Line: 3, Col: col}); ds[0].Pos != want {
				t.Errorf("got position %v, want %v", ds[0].Pos, want)
			}
		})
	}
}

var benchCondition = `state.next_action == "COMPLETE" || state.step_count >= 20`

func BenchmarkCompile(b *testing.B) {
	for _, lang := range []Lang{CEL, Expr} {
		b.Run(string(lang), func(b *testing.B) {
			env := testEnv()
			src := Source{Text: benchCondition, Lang: lang}
			for b.Loop() {
				if p, ds := Compile(src, env, BoolType); p == nil {
					b.Fatal(ds)
				}
			}
		})
		b.Run(string(lang)+"-new-env", func(b *testing.B) {
			src := Source{Text: benchCondition, Lang: lang}
			for b.Loop() {
				if p, ds := Compile(src, testEnv(), BoolType); p == nil {
					b.Fatal(ds)
				}
			}
		})
	}
}

func BenchmarkEval(b *testing.B) {
	vars := map[string]any{"state": map[string]any{
		"next_action": "CONTINUE", "step_count": float64(3), "status": "open"}}
	for _, lang := range []Lang{CEL, Expr} {
		b.Run(string(lang), func(b *testing.B) {
			p, ds := Compile(Source{Text: benchCondition, Lang: lang}, testEnv(), BoolType)
			if p == nil {
				b.Fatal(ds)
			}
			for b.Loop() {
				if ok, err := p.EvalBool(vars); ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// TestCELCostTracking runs conditions whose cost does not grow with their
// input without the runtime cost tracker, and every other one with it.
func TestCELCostTracking(t *testing.T) {
	tests := []struct {
		text    string
		bounded bool
	}{
		{`state.step_count >= 3`, true},
		{`state.next_action in ["a", "b", "c"] || state.status == "x"`, true},
		{`state.completed_steps.exists(s, s == "x")`, false},
		{`state.status.contains("x")`, false},
	}
	for _, tt := range tests {
		p, ds := Compile(Source{Text: tt.text, Lang: CEL}, testEnv(), BoolType)
		if p == nil {
			t.Fatalf("Compile(%q): %v", tt.text, ds)
		}
		ce, _ := testEnv().celEnv()
		parsed, _ := ce.env.Compile(tt.text)
		if got := sizeBounded(ce, parsed); got != tt.bounded {
			t.Errorf("sizeBounded(%q) = %v, want %v", tt.text, got, tt.bounded)
		}
	}
}

// TestRuleGuard finds the tool a CEL condition pins, so the runtime can
// skip the rule for other tools without evaluating it.
func TestRuleGuard(t *testing.T) {
	tests := []struct {
		text  string
		field string
		want  []string
	}{
		{`tool.name == "create_entity"`, "name", []string{"create_entity"}},
		{`"x" == tool.capability_key`, "capability_key", []string{"x"}},
		{`result.tool_name == "a" && result.ok`, "name", []string{"a"}},
		{`state.n > 1 && tool.capability_key in ["u", "c"]`, "capability_key", []string{"c", "u"}},
		{`tool.name == "a" || tool.mutating`, "", nil},
		{`tool.name == "b" || tool.name in ["a"]`, "name", []string{"a", "b"}},
		{`tool.name == "b" || tool.capability_key == "a"`, "", nil},
		{`tool.capability_key in ["u", "c"] || tool.capability_key.startsWith("batch_")`, "capability_key", []string{"c", "u"}},
		{`tool.name in state.names`, "", nil},
		{`state.n >= 3`, "", nil},
	}
	for _, tt := range tests {
		g := guardOf(&Condition{Expression{Program: &Program{text: tt.text, lang: CEL}}})
		switch {
		case tt.field == "" && g != nil:
			t.Errorf("guardOf(%q) = %+v, want none", tt.text, g)
		case tt.field != "" && (g == nil || g.Field != tt.field || !slices.Equal(g.Values, tt.want)):
			t.Errorf("guardOf(%q) = %+v, want %s in %v", tt.text, g, tt.field, tt.want)
		case strings.Contains(tt.text, "startsWith") && (g == nil || !slices.Equal(g.Prefixes, []string{"batch_"})):
			t.Errorf("guardOf(%q) = %+v, want %s in %v", tt.text, g, tt.field, tt.want)
		}
	}
}

// TestExprTimeLimit stops a loop that outlives its evaluation's deadline.
func TestExprTimeLimit(t *testing.T) {
	b := &exprBudget{steps: 1023, deadline: time.Now().Add(-time.Millisecond)}
	if err := tickErr(b); err == nil || !strings.Contains(err.Error(), "running 1s") {
		t.Errorf("tick past the deadline: %v", err)
	}
	b = &exprBudget{steps: 10, deadline: time.Now().Add(-time.Millisecond)}
	if err := tickErr(b); err != nil {
		t.Errorf("the clock is read every 1024 steps, not every step: %v", err)
	}
}

// tickErr ticks b and returns the error the tick stops an evaluation with.
func tickErr(b *exprBudget) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = r.(error)
		}
	}()
	tick(b, nil)
	return nil
}
