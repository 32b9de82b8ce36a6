package dsl

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
)

// Triggers are the events rules fire on, with the variables each one gives
// its conditions besides state, input, agent and budget.
var Triggers = map[string]map[string]*Type{
	runner.BeforeToolCall: {"tool": toolVar, "skill": StringType},
	runner.AfterToolCall:  {"tool": toolVar, "result": resultVar, "skill": StringType},
	runner.BeforeLLMCall:  {"llm": llmBefore},
	runner.AfterLLMCall:   {"llm": llmVar},
	runner.AfterNode:      {"node": goType(reflect.TypeFor[runner.NodeInfo]())},
}

// The variables' types are derived from the records the runtime's call
// path fills, so a name validate accepts is a name the runtime writes.
var (
	toolVar   = goType(reflect.TypeFor[runner.ToolInfo]())
	resultVar = goType(reflect.TypeFor[runner.ToolExecution]())
	llmVar    = goType(reflect.TypeFor[runner.LLMCall]())
	// llmBefore is what is known of a model call before it is made.
	llmBefore = ObjectOf(map[string]*Type{"node": StringType, "model": StringType, "phase": StringType, "call": IntegerType})
	agentVar  = goType(reflect.TypeFor[runner.AgentInfo]())
)

// goType is the expression type of a Go record: its JSON names and kinds.
func goType(t reflect.Type) *Type {
	switch t.Kind() {
	case reflect.String:
		return StringType
	case reflect.Bool:
		return BoolType
	case reflect.Int, reflect.Int64:
		return IntegerType
	case reflect.Float64:
		return NumberType
	case reflect.Slice:
		return ArrayOf(goType(t.Elem()))
	case reflect.Map:
		return &Type{Kind: Object}
	case reflect.Struct:
		fields := map[string]*Type{}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			fields[name] = goType(f.Type)
		}
		return ObjectOf(fields)
	}
	return AnyType
}

// actionsOn are the actions each trigger allows: a gate needs a call to
// hold, and after_llm_call's reply is not kept across a pause.
var actionsOn = map[string][]string{
	runner.BeforeToolCall: {runner.ActRequireHITL, runner.ActDeny, runner.ActAbort, runner.ActSet, runner.ActNote},
	runner.AfterToolCall:  {runner.ActRequireHITL, runner.ActDeny, runner.ActAbort, runner.ActSet, runner.ActNote},
	runner.BeforeLLMCall:  {runner.ActRequireHITL, runner.ActDeny, runner.ActAbort, runner.ActSet, runner.ActNote},
	runner.AfterLLMCall:   {runner.ActDeny, runner.ActAbort, runner.ActSet, runner.ActNote},
	runner.AfterNode:      {runner.ActAbort, runner.ActSet, runner.ActNote},
}

// ruleSet checks a RuleSet: each condition against its trigger's variables
// and the state the rule set declares, each action's parameters.
func (k *check) ruleSet(d *Document) {
	rs := &RuleSet{Doc: d, Name: d.Name, State: k.objectOf(d.Get("state")), Platform: scalarValue(d.Get("scope")) == "platform",
		Tenant: scalarValue(d.Get("tenant"))}
	lang := docLang(d, CEL)
	nx := k.namedExpressions(d, lang, ruleVars(rs.State))
	keys := map[string]bool{}
	for _, r := range items(d.Get("rules")) {
		if k.bad(r) {
			continue // a rule with a schema error is not checked further
		}
		rule := &Rule{Key: scalarValue(mapGet(r, "key")), On: scalarValue(mapGet(r, "on")), Pos: d.Pos(r),
			Locked: scalarValue(mapGet(r, "locked")) == "true"}
		if keys[rule.Key] {
			k.diags.Errorf(d.Pos(mapGet(r, "key")), CodeRefDuplicate, "rule key %q is used twice in rule set %q", rule.Key, rs.Name)
		}
		keys[rule.Key] = true
		env := k.ruleEnv(rs.State, rule.On, k.mcpRuleArgs(d, mapGet(r, "when"), lang))
		env = k.namedEnv(env, nx)
		if w := mapGet(r, "when"); w != nil {
			rule.When = &Condition{Expression{node: w}}
			rule.When.Program = k.compile(d, w, lang, env, BoolType)
		}
		pairs(mapGet(r, "do"), func(key, v *yaml.Node) {
			rule.Action, rule.ActionPos = key.Value, d.Pos(key)
			if !slices.Contains(actionsOn[rule.On], rule.Action) {
				k.diags.Errorf(d.Pos(key), CodeRuleAction, "%s cannot be taken on %s", rule.Action, rule.On).Hint =
					"on " + rule.On + " a rule can: " + strings.Join(actionsOn[rule.On], ", ")
			}
			k.action(d, rs, rule, v, lang, env)
		})
		rs.Rules = append(rs.Rules, rule)
	}
	k.proj.RuleSets[rs.Name] = rs
}

// lockedRules reports each rule that would replace a locked rule of its
// key with a weaker one: a rule set later in precedence (an agent's or a
// skill's after the platform's, a tenant's after both) replaces a locked
// rule only on the same trigger with an action at least as strong.
func (k *check) lockedRules() {
	names := slices.Sorted(maps.Keys(k.proj.RuleSets))
	for _, n := range names {
		rs := k.proj.RuleSets[n]
		for _, locked := range rs.Rules {
			if !locked.Locked {
				continue
			}
			for _, m := range names {
				other := k.proj.RuleSets[m]
				if m == n || other.precedence() < rs.precedence() {
					continue
				}
				for _, r := range other.Rules {
					if why := r.weakens(locked); r.Key == locked.Key && why != "" {
						k.diags.Errorf(r.ActionPos, CodeRuleLocked, "rule %s of rule set %s weakens the locked rule %s of rule set %s (%s): %s",
							r.Key, m, locked.Key, n, locked.Pos, why).Hint =
							"a locked rule is replaced only on its trigger by an action at least as strong: abort or deny, then require_hitl, then set or note"
					}
				}
			}
		}
	}
}

// precedence orders rule sets by which replaces which: platform rule
// sets first, then agents' and skills', then tenants'.
func (rs *RuleSet) precedence() int {
	switch {
	case rs.Tenant != "":
		return 2
	case rs.Platform:
		return 0
	}
	return 1
}

// weakens says how r, replacing the locked rule of its key, would weaken
// it, or "" when it does not.
func (r *Rule) weakens(locked *Rule) string {
	return r.runtime().Weakens(locked.runtime())
}

// runtime is the rule's trigger and action as the runtime compares them.
func (r *Rule) runtime() *runner.Rule {
	return &runner.Rule{Key: r.Key, On: r.On, Action: runner.Action{Kind: r.Action}}
}

// ruleEnv is the environment of a trigger's rules over a declared state;
// args, when not nil, types tool.args and result.input (a rule on one
// pinned MCP tool). Rule sets that declare the same state share one, so
// its compiled forms (a CEL environment is costly to build) are built
// once per Check.
func (k *check) ruleEnv(state *Type, trigger string, args *Type) *Env {
	key := ruleEnvKey{state.signature(), trigger, ""}
	if args != nil {
		key.args = args.signature()
	}
	if e := k.ruleEnvs[key]; e != nil {
		return e
	}
	vars := ruleVars(state)
	for n, t := range Triggers[trigger] {
		vars[n] = t
	}
	if args != nil {
		vars["tool"] = withField(vars["tool"], "args", args)
		vars["result"] = withField(vars["result"], "input", args)
	}
	e := k.env(vars)
	k.ruleEnvs[key] = e
	return e
}

// withField is object type t with field name of type f; nil when t is.
func withField(t *Type, name string, f *Type) *Type {
	if t == nil {
		return nil
	}
	c := *t
	c.Fields = maps.Clone(t.Fields)
	c.Fields[name] = f
	return &c
}

// ruleVars are the variables every rule over state sees, whatever its
// trigger.
func ruleVars(state *Type) map[string]*Type {
	return map[string]*Type{"state": state, "input": {Kind: Object}, "agent": agentVar, "budget": budgetType, "run": runType}
}

// ruleEnvKey is what a rule's environment depends on: the signature of
// the state, the trigger (whose variables' types are many: writing
// their signature is what k.env would do) and that of the tool's args.
type ruleEnvKey struct {
	state   string
	trigger string
	args    string
}

// action checks a rule's action parameters: texts are templates over the
// rule's variables, set writes declared fields.
func (k *check) action(d *Document, rs *RuleSet, rule *Rule, v *yaml.Node, lang Lang, env *Env) {
	text := func(n *yaml.Node) *Template {
		return k.template(d, n, lang, env)
	}
	switch rule.Action {
	case runner.ActNote:
		rule.Text = text(v)
	case runner.ActDeny, runner.ActAbort:
		rule.Text = text(mapGet(v, "reason"))
	case runner.ActRequireHITL:
		rule.Text = text(mapGet(v, "message"))
		h := &runner.HITL{CheckpointType: scalarValue(mapGet(v, "checkpoint_type")), OnExpire: scalarValue(mapGet(v, "on_expire"))}
		for _, n := range items(mapGet(v, "decisions")) {
			h.Decisions = append(h.Decisions, n.Value)
		}
		k.decode(d, mapGet(v, "expires"), &h.Expires, "require_hitl.expires")
		k.decode(d, mapGet(v, "quorum"), &h.Quorum, "require_hitl.quorum")
		k.decode(d, mapGet(v, "distinct_from_requester"), &h.DistinctFromRequester, "require_hitl.distinct_from_requester")
		h.Notify = k.notify(d, mapGet(v, "notify"))
		h.ResumeSchema = k.jsonSchema(d, mapGet(v, "resume_schema"))
		if p := k.reviewers(d, mapGet(v, "reviewers"), lang, env); p != nil {
			h.Reviewers = p
		}
		h.Escalate = k.escalate(d, mapGet(v, "escalate"), h, lang, env)
		rule.HITL = h
	case runner.ActSet:
		rule.Set = map[string]*Expression{}
		pairs(v, func(f, e *yaml.Node) {
			if !rs.State.declares(f.Value) {
				k.diags.Errorf(d.Pos(f), CodeRefUndeclared, "rule %q sets state field %q, which the rule set does not declare", rule.Key, f.Value).Hint =
					hintOr(didYouMean(f.Value, rs.State.FieldNames()), "declare it under the rule set's state:")
			}
			rule.Set[f.Value] = &Expression{Program: k.compile(d, e, lang, env, nil), node: e}
		})
	}
}

// bindRules checks that a pipeline declares, with the same types, every
// state field a rule set declares.
func (k *check) bindRules(d *Document, n *yaml.Node, rsName string, p *Pipeline) {
	rs := k.proj.RuleSets[rsName]
	if rs == nil || p == nil || p.State.Fields == nil { // a state the schema refused
		return
	}
	for _, f := range rs.State.FieldNames() {
		want := rs.State.Fields[f]
		got, ok := p.State.Fields[f]
		switch {
		case !ok:
			k.diags.Errorf(d.Pos(n), CodeRefStateBinding, "rule set %q needs state field %q (%s), which pipeline %q does not declare", rsName, f, want, p.Name)
		case !sameType(got, want):
			k.diags.Errorf(d.Pos(n), CodeRefStateBinding, "rule set %q needs state field %q as %s, but pipeline %q declares it as %s", rsName, f, want, p.Name, got)
		}
	}
}

// appliesTo reports whether a platform or tenant rule set applies to a
// pipeline: it must declare every state field the rule set declares, with
// the same types. A rule set that declares none applies everywhere.
func (rs *RuleSet) appliesTo(p *Pipeline) bool {
	for f, want := range rs.State.Fields {
		if got, ok := p.State.Fields[f]; !ok || !sameType(got, want) {
			return false
		}
	}
	return true
}

func hintOr(h, alt string) string {
	if h != "" {
		return h
	}
	return alt
}

// reviewers checks a gate's reviewers: a list of "role:NAME" and
// "principal:NAME", each checked where it is written, or an expression
// over the rule's variables that gives such a list, checked as it runs.
// Nil when there are none or they do not check.
func (k *check) reviewers(d *Document, n *yaml.Node, lang Lang, env *Env) runner.Evaluator {
	if n == nil || k.bad(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		if p := k.compile(d, n, lang, env, ArrayOf(StringType)); p != nil {
			return p
		}
		return nil
	}
	list := reviewerList{}
	for _, item := range n.Content {
		if _, err := access.ParseReviewers([]string{item.Value}); err != nil {
			k.diags.Errorf(d.Pos(item), CodeSchemaValue, "%v", err)
		}
		list = append(list, item.Value)
	}
	return list
}

// escalate checks a gate's escalation: who it escalates to, as its
// reviewers are checked, and that it comes before the gate expires. Nil
// when there is none or it does not check.
func (k *check) escalate(d *Document, n *yaml.Node, h *runner.HITL, lang Lang, env *Env) *runner.Escalate {
	if n == nil || k.bad(n) {
		return nil
	}
	esc := &runner.Escalate{}
	after := mapGet(n, "after")
	k.decode(d, after, &esc.After, "require_hitl.escalate.after")
	if esc.To = k.reviewers(d, mapGet(n, "to"), lang, env); esc.To == nil {
		return nil
	}
	if h.Expires > 0 && esc.After >= h.Expires {
		k.diags.Errorf(d.Pos(after), CodeSchemaValue, "the gate escalates after %s, but expires after %s: it would expire first",
			esc.After, h.Expires).Hint = "escalate before it expires (escalate.after shorter than expires), or drop expires"
	}
	return esc
}

// reviewerList is a gate's reviewers written as a list.
type reviewerList []any

// Eval returns the list.
func (l reviewerList) Eval(map[string]any) (any, error) { return []any(l), nil }

// notify reads a notify: list of webhook names, kept for CheckHooks.
func (k *check) notify(d *Document, n *yaml.Node) []string {
	var names []string
	for _, item := range items(n) {
		names = append(names, item.Value)
		k.proj.notify = append(k.proj.notify, docNode{d, item})
	}
	return names
}
