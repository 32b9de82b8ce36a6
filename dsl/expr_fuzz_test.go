package dsl

import (
	"strconv"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzCompile compiles arbitrary text in both languages, as an expression
// and as a template, from a double-quoted YAML scalar; compiling, mapping
// error positions and evaluating on a sample state must never panic, and
// evaluation stays within its bounds (steps, time, memory).
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`state.next_action == "COMPLETE" || state.step_count >= 20`,
		`state.items.exists(i, i.name == "x")`, `any(state.items, .name == "x")`,
		`state.consecutive_faild_resolves > 1`, `stat.x`, `1 +`, `"é" + state.status`,
		`${state.transaction_id} at ${state.step_count}`, `$${x} ${`, `map(1..3, # * 2)`,
		`[1, 2, 3].map(x, x * state.step_count)`, `state.counts[7]`, `{"a": state.review}`,
		`reduce(1..40, #acc + #acc, "x")`, `all(1..300, all(1..300, all(1..300, # > 0)))`, `repeat("x", 1000000000)`,
	} {
		f.Add(s)
	}
	env := testEnv()
	vars := map[string]any{"state": map[string]any{
		"status": "open", "step_count": float64(3), "score": 1, "counts": []any{1.0, 2.0},
		"items":  []any{map[string]any{"name": "x"}, "not an object"},
		"review": map[string]any{"score": 0.5}, "context": map[string]any{"a": []any{}},
	}, "input": nil}
	f.Fuzz(func(t *testing.T, text string) {
		src := fuzzSource(text)
		for _, lang := range []Lang{CEL, Expr} {
			src.Lang = lang
			if p, _ := Compile(src, env, nil); p != nil {
				_, _ = p.Eval(vars)
				_, _ = p.EvalBool(vars)
			}
			if tpl, _ := CompileTemplate(src, env); tpl != nil {
				_, _ = tpl.Render(vars)
			}
		}
	})
}

// fuzzSource places text in a double-quoted scalar of a file, if YAML can
// hold it, so that positions are mapped through escapes.
func fuzzSource(text string) Source {
	data := []byte("when: " + strconv.Quote(text) + "\n")
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 ||
		len(doc.Content[0].Content) < 2 || doc.Content[0].Content[1].Value != text {
		return Source{Text: text, File: "f.yaml"}
	}
	return Source{Text: text, File: "f.yaml", Node: doc.Content[0].Content[1], Src: data}
}
