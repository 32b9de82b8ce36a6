package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Rule triggers.
const (
	BeforeToolCall = "before_tool_call"
	AfterToolCall  = "after_tool_call"
	BeforeLLMCall  = "before_llm_call"
	AfterLLMCall   = "after_llm_call"
	AfterNode      = "after_node"
)

// Rule actions.
const (
	ActRequireHITL = "require_hitl"
	ActDeny        = "deny"
	ActAbort       = "abort"
	ActSet         = "set"
	ActNote        = "note"
)

// Rule is a compiled rule: on its trigger, when its condition holds, it
// takes its action. A graph's rules are in precedence order: platform rule
// sets, the agent's, the loaded skills'; a tenant's rule replaces, for that
// tenant's runs, the rule of the same key.
type Rule struct {
	Key string
	On  string
	// Scope says where the rule comes from: platform, agent, skill or
	// tenant. Skill rules fire only while Skill is loaded; tenant rules
	// only in runs of Tenant.
	Scope  string
	Skill  string
	Tenant string
	When   Condition // nil: always
	// Guard, when set, is a tool the condition requires (by name or
	// capability): the rule is skipped, unevaluated, for other tools.
	Guard  *Guard
	Action Action
	// Locked: a rule of the same key replaces this one only if it does
	// not weaken it (see Weakens).
	Locked bool
}

// Strength ranks an action: abort and deny, which keep a call from
// running, above require_hitl, which has a human decide, above set and
// note, which let it run.
func Strength(action string) int {
	switch action {
	case ActAbort, ActDeny:
		return 2
	case ActRequireHITL:
		return 1
	}
	return 0
}

// Weakens says how r, replacing the locked rule of its key, would weaken
// it — another trigger, or a weaker action — or "" when it does not.
func (r *Rule) Weakens(locked *Rule) string {
	switch {
	case r.On != locked.On:
		return fmt.Sprintf("it fires on %s, the locked rule on %s", r.On, locked.On)
	case Strength(r.Action.Kind) < Strength(locked.Action.Kind):
		return fmt.Sprintf("%s is weaker than the locked rule's %s", r.Action.Kind, locked.Action.Kind)
	}
	return ""
}

// Guard pins a tool rule to tools whose Field ("name" or
// "capability_key") is one of Values (sorted) or starts with one of
// Prefixes.
type Guard struct {
	Field    string
	Values   []string
	Prefixes []string
}

// Admits reports whether a call of tool t may match the rule (a nil
// guard, or no tool — a model call — admits all).
func (g *Guard) Admits(t *ToolInfo) bool {
	if g == nil || t == nil {
		return true
	}
	v := t.Name
	if g.Field == "capability_key" {
		v = t.CapabilityKey
	}
	if _, found := slices.BinarySearch(g.Values, v); found {
		return true
	}
	for _, p := range g.Prefixes {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// Action is what a rule does when it fires.
type Action struct {
	Kind string // require_hitl, deny, abort, set or note
	// Text renders the reason (deny, abort), the note, or the message a
	// reviewer sees (require_hitl).
	Text Evaluator
	// Set maps state fields to their new values (set).
	Set map[string]Evaluator
	// HITL configures require_hitl.
	HITL *HITL
}

// HITL is a require_hitl action's gate.
type HITL struct {
	CheckpointType string
	// Decisions lists what a reviewer may answer: approve, edit, reject,
	// respond (empty: all four).
	Decisions    []string
	ResumeSchema map[string]any
	// Expires, when set, takes OnExpire (reject by default) for a reviewer
	// who has not answered in time.
	Expires  time.Duration
	OnExpire string
	// Check, when set, validates the resume value against ResumeSchema.
	Check func(any) error
	// Reviewers, when set, computes over the rule's variables, as the gate
	// opens, who may decide it: a list of "role:NAME" and "principal:NAME"
	// (access.ParseReviewers), frozen in the journal. Unset, or a list of
	// none: anyone of the thread's tenant.
	Reviewers Evaluator
	// Quorum is how many distinct principals must approve before the call
	// runs (0 or 1: one); a single reject decides at once.
	Quorum int
	// DistinctFromRequester keeps the principal who started the run from
	// deciding.
	DistinctFromRequester bool
	// Escalate, when set, widens who may decide a gate still pending
	// After it opened.
	Escalate *Escalate
	// Notify names the webhooks told of the gate's approval events.
	Notify []string
}

// Escalate is a require_hitl gate's escalation: After the gate opened,
// To — computed over the rule's variables as it opens, a list of
// "role:NAME" and "principal:NAME", frozen in the journal — joins its
// reviewers.
type Escalate struct {
	After time.Duration
	To    Evaluator
}

// ballots reports whether a gate of h records who may decide it.
func (h *HITL) ballots() bool { return h.Reviewers != nil || h.Quorum > 1 || h.DistinctFromRequester }

// RuleError ends a run: a rule aborted it, or a rule could not be
// evaluated (a gate that cannot decide does not let the call through).
type RuleError struct {
	Key    string
	Reason string
}

func (e *RuleError) Error() string { return fmt.Sprintf("rule %s: %s", e.Key, e.Reason) }

// DeniedError is a call a rule kept from running; the run goes on and the
// model sees the reason as the call's error.
type DeniedError struct {
	Key    string
	Reason string
}

func (e *DeniedError) Error() string { return fmt.Sprintf("denied by rule %s: %s", e.Key, e.Reason) }

// MustStop reports whether err ends a node even where call failures are
// only recorded: a cancelled run, a spent budget, an interrupt, an
// aborting rule, a store that could not journal a call.
func MustStop(ctxErr, err error) bool {
	return ctxErr != nil || isA[*BudgetError](err) || isA[*Interrupt](err) || isA[*RuleError](err) || errors.Is(err, errStore)
}

// firing is what the rules of one trigger decided for one call.
type firing struct {
	gate  *Rule          // the first require_hitl rule that fired
	vars  map[string]any // the variables it fired on
	deny  *DeniedError
	abort *RuleError
}

// fire evaluates the rules of trigger that may match — loaded skill,
// guard — over the variables vars builds (once, when a rule needs them):
// set and note take effect at once; the strongest of abort, deny and
// require_hitl is returned.
func (r *Run) fire(trigger string, tool *ToolInfo, skills []string, mkVars func() map[string]any) (firing, error) {
	var f firing
	var vars map[string]any
	for _, rule := range r.rules[trigger] {
		if (rule.Skill != "" && !slices.Contains(skills, rule.Skill)) || !rule.Guard.Admits(tool) {
			continue
		}
		if vars == nil {
			vars = mkVars()
		}
		if rule.When != nil {
			ok, err := rule.When.EvalBool(vars)
			if err != nil {
				return f, &RuleError{Key: rule.Key, Reason: "condition: " + err.Error()}
			}
			if !ok {
				continue
			}
		}
		if err := r.act(rule, vars, &f); err != nil {
			return f, err
		}
	}
	return f, nil
}

// act takes a fired rule's action.
func (r *Run) act(rule *Rule, vars map[string]any, f *firing) error {
	text, err := render(rule.Action.Text, vars)
	if err != nil {
		return &RuleError{Key: rule.Key, Reason: err.Error()}
	}
	r.emit(EventRule, r.in.Node, map[string]any{"rule": rule.Key, "scope": rule.Scope, "action": rule.Action.Kind, "text": text})
	switch rule.Action.Kind {
	case ActAbort:
		if f.abort == nil {
			f.abort = &RuleError{Key: rule.Key, Reason: or(text, "aborted")}
		}
	case ActDeny:
		if f.deny == nil {
			f.deny = &DeniedError{Key: rule.Key, Reason: or(text, "not allowed")}
		}
	case ActRequireHITL:
		if f.gate == nil {
			f.gate, f.vars = rule, vars
		}
	case ActSet:
		upd := Update{}
		for field, e := range rule.Action.Set {
			v, err := e.Eval(vars)
			if err != nil {
				return &RuleError{Key: rule.Key, Reason: fmt.Sprintf("set %s: %v", field, err)}
			}
			upd[field] = v
		}
		r.setState(upd)
	}
	return nil
}

// setState keeps state updates made by calls (state-aware tools) and
// rules; the step merges them after its node's update, and rules fired
// later in the step see them.
func (r *Run) setState(upd Update) {
	if len(upd) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sideUpd == nil {
		r.sideUpd = Update{}
	}
	for k, v := range upd {
		if old, ok := r.sideUpd[k]; ok {
			if nv, err := r.Graph.Fields[k].Reducer(old, v); err == nil && r.Graph.Fields[k].Reducer != nil {
				v = nv
			}
		}
		r.sideUpd[k] = v
	}
}

// stateView is the state as rules see it: the step's state with the
// updates calls and rules made so far.
func (r *Run) stateView() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sideUpd) == 0 {
		return r.in.State
	}
	view := make(State, len(r.in.State))
	for k, v := range r.in.State {
		view[k] = v
	}
	if _, err := merge(r.Graph, view, r.sideUpd); err != nil {
		return r.in.State
	}
	return view
}

// afterNode fires the after_node rules on the merged state, then merges
// the state updates calls and rules made this step. It returns those
// updates: checkpoints keep them apart from the node's own.
func (r *Run) afterNode(s *Step, merged State) (Update, error) {
	r.in.State = merged
	f, err := r.fire(AfterNode, nil, nil, func() map[string]any {
		return r.ruleVars("node", map[string]any{"name": s.Name, "type": s.Type})
	})
	if err == nil && f.abort != nil {
		err = f.abort
	}
	r.mu.Lock()
	upd := r.sideUpd
	r.sideUpd = nil
	r.mu.Unlock()
	if err != nil || len(upd) == 0 {
		return nil, err
	}
	if _, err := mergeGrowing(r.Graph, merged, upd, r.lists); err != nil {
		return nil, &RunError{Code: "node_error", Node: s.Name, Message: fmt.Sprintf("node %s: a tool's or a rule's state update: %v", s.Name, err)}
	}
	return upd, nil
}

// ruleVars is what every rule sees, with the trigger's own variables.
func (r *Run) ruleVars(extra ...any) map[string]any {
	vars := map[string]any{"state": r.stateView(), "input": r.input, "budget": r.budget, "agent": r.agent, "run": r.runVar()}
	for i := 0; i+1 < len(extra); i += 2 {
		vars[extra[i].(string)] = extra[i+1]
	}
	return vars
}

// ActiveRules is g's rules by trigger as they apply to a tenant's runs:
// the tenant's rules replace the rules of the same key — unless that
// weakens a locked rule, which then stands — and other tenants' rules
// drop out.
func (g *Graph) ActiveRules(tenant string) map[string][]*Rule {
	mine := map[string]*Rule{}
	for _, rule := range g.Rules {
		if rule.Tenant != "" && rule.Tenant == tenant {
			mine[rule.Key] = rule
		}
	}
	for _, rule := range g.Rules {
		if m := mine[rule.Key]; rule.Tenant == "" && m != nil && rule.Locked && m.Weakens(rule) != "" {
			delete(mine, rule.Key)
		}
	}
	out := map[string][]*Rule{}
	for _, rule := range g.Rules {
		if m := mine[rule.Key]; (rule.Tenant == "" && m != nil) || (rule.Tenant != "" && m != rule) {
			continue
		}
		out[rule.On] = append(out[rule.On], rule)
	}
	return out
}

// render evaluates an optional text.
func render(e Evaluator, vars map[string]any) (string, error) {
	if e == nil {
		return "", nil
	}
	v, err := e.Eval(vars)
	if err != nil {
		return "", err
	}
	s, _ := v.(string)
	return s, nil
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
