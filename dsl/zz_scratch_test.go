package dsl

import (
	"fmt"
	"testing"
)

func TestZZScratch(t *testing.T) {
	env := NewEnv(map[string]*Type{
		"state": ObjectOf(map[string]*Type{"status": StringType, "step_count": IntegerType,
			"completed_steps": ArrayOf(StringType), "context": {Kind: Object},
			"consecutive_failed_resolves": IntegerType,
			"items": ArrayOf(ObjectOf(map[string]*Type{"name": StringType}))}),
		"input": AnyType,
	})
	for _, lang := range []Lang{CEL, Expr} {
		for _, s := range []string{`state.step_count >= 20`, `stat.x`, `state.consecutive_faild_resolves > 1`, `state.status`,
			`state.step_count == "x"`, `state.status + 1`, `state.items[0].nmae == "a"`, `has(state.foo)`, `state.completed_steps.exists(s, s == "a")`,
			`state.items.exists(i, i.nam == "a")`, `1 +`, `state.context.foo.bar`, `input.x`} {
			_, ds := Compile(Source{Text: s, Lang: lang, File: "f.yaml"}, env, BoolType)
			fmt.Printf("%s %-45q %v\n", lang, s, ds)
		}
	}
}
