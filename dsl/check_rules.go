package dsl

import (
	"go.yaml.in/yaml/v3"
)

// Triggers are the events rules fire on, with the variables each one gives
// its conditions besides state, agent and budget.
var Triggers = map[string]map[string]*Type{
	"before_tool_call": {"tool": toolVar},
	"after_tool_call":  {"tool": toolVar, "result": resultVar},
	"before_llm_call":  {"llm": llmVar},
	"after_llm_call":   {"llm": llmVar},
	"after_node":       {"node": ObjectOf(map[string]*Type{"name": StringType, "type": StringType})},
}

var (
	toolVar = ObjectOf(map[string]*Type{
		"name": StringType, "capability_key": StringType, "mutating": BoolType,
		"args": {Kind: Object}, "id": StringType,
	})
	resultVar = ObjectOf(map[string]*Type{
		"tool_name": StringType, "status": StringType, "output": AnyType,
		"error": StringType, "execution_time_ms": IntegerType,
	})
	llmVar = ObjectOf(map[string]*Type{
		"model": StringType, "phase": StringType, "node": StringType,
		"tokens_in": IntegerType, "tokens_out": IntegerType, "cost_usd": NumberType,
		"content": StringType, "tool_calls": ArrayOf(AnyType),
	})
	agentVar = ObjectOf(map[string]*Type{"name": StringType, "model": StringType, "skills": ArrayOf(StringType)})
)

// ruleSet checks a RuleSet: each condition against its trigger's variables
// and the state the rule set declares, each action's writes.
func (k *check) ruleSet(d *Document) {
	rs := &RuleSet{Doc: d, Name: d.Name, State: objectOf(d.Get("state"))}
	lang := docLang(d, CEL)
	envs := map[string]*Env{}
	for _, r := range items(d.Get("rules")) {
		rule := &Rule{Key: scalarValue(mapGet(r, "key")), On: scalarValue(mapGet(r, "on")), Pos: d.Pos(r)}
		env := envs[rule.On]
		if env == nil {
			env = ruleEnv(rs.State, rule.On)
			envs[rule.On] = env
		}
		if w := mapGet(r, "when"); w != nil {
			rule.When = &Condition{Expression{node: w}}
			rule.When.Program = k.compile(d, w, lang, env, BoolType)
		}
		pairs(mapGet(r, "do"), func(key, v *yaml.Node) {
			rule.Action = key.Value
			k.action(d, rs, rule, v, lang, env)
		})
		rs.Rules = append(rs.Rules, rule)
	}
	k.proj.RuleSets[rs.Name] = rs
}

func ruleEnv(state *Type, trigger string) *Env {
	vars := map[string]*Type{"state": state, "agent": agentVar, "budget": budgetType}
	for n, t := range Triggers[trigger] {
		vars[n] = t
	}
	return NewEnv(vars)
}

// action checks a rule's action parameters; set writes declared fields.
func (k *check) action(d *Document, rs *RuleSet, rule *Rule, v *yaml.Node, lang Lang, env *Env) {
	if rule.Action != "set" {
		if v.Kind == yaml.MappingNode {
			_ = v.Decode(&rule.Params)
		} else {
			rule.Params = map[string]any{"text": v.Value}
		}
		return
	}
	rule.Set = map[string]*Expression{}
	pairs(v, func(f, e *yaml.Node) {
		if _, ok := rs.State.Fields[f.Value]; !ok {
			k.diags.Errorf(d.Pos(f), "rule %q sets state field %q, which the rule set does not declare", rule.Key, f.Value).Hint =
				hintOr(didYouMean(f.Value, rs.State.FieldNames()), "declare it under the rule set's state:")
		}
		rule.Set[f.Value] = &Expression{Program: k.compile(d, e, lang, env, nil), node: e}
	})
}

// bindRules checks that an agent's pipeline declares, with the same types,
// every state field its rule sets declare.
func (k *check) bindRules(d *Document, n *yaml.Node, rsName string, p *Pipeline) {
	rs := k.proj.RuleSets[rsName]
	if rs == nil || p == nil {
		return
	}
	for _, f := range rs.State.FieldNames() {
		want := rs.State.Fields[f]
		got, ok := p.State.Fields[f]
		switch {
		case !ok:
			k.diags.Errorf(d.Pos(n), "rule set %q needs state field %q (%s), which pipeline %q does not declare", rsName, f, want, p.Name)
		case !sameType(got, want):
			k.diags.Errorf(d.Pos(n), "rule set %q needs state field %q as %s, but pipeline %q declares it as %s", rsName, f, want, p.Name, got)
		}
	}
}

func hintOr(h, alt string) string {
	if h != "" {
		return h
	}
	return alt
}
