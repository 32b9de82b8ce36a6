package dsl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZZSlow(t *testing.T) {
	dir := os.Getenv("CORPUS")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	env := testEnv()
	vars := map[string]any{"state": map[string]any{
		"status": "open", "step_count": float64(3), "score": 1, "counts": []any{1.0, 2.0},
		"items":  []any{map[string]any{"name": "x"}, "not an object"},
		"review": map[string]any{"score": 0.5}, "context": map[string]any{"a": []any{}},
	}, "input": nil}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(string(data), "\n")
		s := strings.TrimSuffix(strings.TrimPrefix(lines[1], "string("), ")")
		text, err := strconv.Unquote(s)
		if err != nil { continue }
		for _, lang := range []Lang{CEL, Expr} {
			start := time.Now()
			src := fuzzSource(text); src.Lang = lang
			p, _ := Compile(src, env, nil)
			c := time.Since(start)
			if p != nil { p.Eval(vars) }
			tpl, _ := CompileTemplate(src, env)
			if tpl != nil { tpl.Render(vars) }
			if d := time.Since(start); d > 20*time.Millisecond {
				t.Logf("%s %v (compile %v) %q", lang, d, c, text)
			}
		}
	}
}
