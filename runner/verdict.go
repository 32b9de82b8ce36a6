package runner

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runner-dev/runner/runner/suggest"
)

// The decide path. Every gate — before a tool call, after one, before a
// model call — reads its reviewer's answer through decide: the same
// forms, the same keys, the rule's resume_schema, the same checks of each
// decision against its call. A refused answer changes nothing: the thread
// stays paused, and the error wraps ErrInvalidResume and ErrInput.

// Decision types a reviewer answers a gate with.
const (
	DecisionApprove = "approve"
	DecisionEdit    = "edit"
	DecisionReject  = "reject"
	DecisionRespond = "respond"
)

// Decision is a reviewer's verdict on one gated call.
type Decision struct {
	Type string `json:"type"`
	// Args are the edited arguments (edit); Message is the reviewer's
	// comment (reject) or the text standing for the result (respond).
	Args    map[string]any `json:"args,omitempty"`
	Message string         `json:"message,omitempty"`
	// Reviewer is who decided, as the verdict names them; Extra holds the
	// verdict's keys that the rule's resume_schema declares.
	Reviewer string         `json:"reviewer,omitempty"`
	Extra    map[string]any `json:"extra,omitempty"`
	tool     string         // the tool an edit names
}

// Verdict is a reviewer's answer to a gate: one decision per gated call,
// in the gate's order, and who gave it.
type Verdict struct {
	Decisions []*Decision
	Reviewer  string
}

// decisionsOn are the decisions a gate on each trigger can take: after a
// call has run its arguments can no longer be edited, and a model call is
// approved or rejected.
var decisionsOn = map[string][]string{
	BeforeToolCall: {DecisionApprove, DecisionEdit, DecisionReject, DecisionRespond},
	AfterToolCall:  {DecisionApprove, DecisionReject, DecisionRespond},
	BeforeLLMCall:  {DecisionApprove, DecisionReject},
}

// AllowedDecisions are the decisions a gate's rule allows on a trigger.
func AllowedDecisions(h *HITL, trigger string) []string {
	on := decisionsOn[trigger]
	if len(h.Decisions) == 0 {
		return on
	}
	return slices.DeleteFunc(slices.Clone(h.Decisions), func(d string) bool { return !slices.Contains(on, d) })
}

// heldCall is one call a gate holds, as decide checks a decision on it.
type heldCall struct {
	id, tool string
	rule     string
	trigger  string
	hitl     *HITL
	// checkArgs, when set, validates edited arguments.
	checkArgs func(map[string]any) error
	// quorum is how many distinct principals must approve the call.
	quorum int
}

// decide is the one decide path: it reads v, a reviewer's answer, as the
// verdict on calls. The answer must satisfy the resume_schema of every
// rule holding a call, use only keys its form knows or a resume_schema
// declares, and give each call, in order, a decision its rule allows on
// its trigger: an edit keeps the gated tool and gives arguments the tool
// accepts; a response has its text. It changes nothing; a refusal says
// what to fix.
func decide(v any, calls []heldCall) (*Verdict, error) {
	if v == nil {
		return nil, InvalidResume(errors.New(`the approval gate waits for a decision: {"decisions": [{"type": "approve"}]}, {"approved": false, "message": "why"}, or an Agent Inbox response`))
	}
	named := map[string]bool{}
	for _, c := range calls {
		if c.hitl.Check != nil {
			if err := c.hitl.Check(v); err != nil {
				return nil, InvalidResume(fmt.Errorf("the verdict does not satisfy the resume_schema of rule %s: %w", c.rule, err))
			}
		}
		schemaNames(c.hitl.ResumeSchema, named)
	}
	p := verdictParser{named: named}
	verdict, err := p.parse(v, len(calls))
	if err != nil {
		return nil, InvalidResume(err)
	}
	for i, c := range calls {
		if err := c.accept(verdict.Decisions[i]); err != nil {
			return nil, InvalidResume(fmt.Errorf("decision %d (%s %s): %w", i+1, c.tool, c.id, err))
		}
	}
	return verdict, nil
}

// accept checks a decision against the call it decides.
func (c heldCall) accept(d *Decision) error {
	if allowed := AllowedDecisions(c.hitl, c.trigger); !slices.Contains(allowed, d.Type) {
		return fmt.Errorf("%s is not allowed on this gate (%s); allowed: %s", d.Type, c.trigger, strings.Join(allowed, ", "))
	}
	if d.Type != DecisionEdit {
		return nil
	}
	if c.quorum > 1 {
		return fmt.Errorf("an edit is not allowed where %d principals must approve the same call: approve it as it is, or reject it", c.quorum)
	}
	if d.tool != "" && d.tool != c.tool {
		return fmt.Errorf("the edit names tool %s, but the gated call is %s: an edit changes a call's arguments, never its tool; reject the call instead", d.tool, c.tool)
	}
	if c.checkArgs != nil {
		return c.checkArgs(d.Args)
	}
	return nil
}

// The keys each form of a verdict knows.
var (
	verdictKeys   = []string{"decisions", "reviewer"}
	shorthandKeys = []string{"approved", "message", "reviewer"}
	decisionKeys  = []string{"type", "message", "args", "edited_action", "reviewer"}
	actionKeys    = []string{"name", "args"}
	inboxKeys     = []string{"action", "args"} // an Agent Inbox edit's args
)

// synonyms are words reviewers write for a key a verdict knows.
var synonyms = map[string]string{
	"comment": "message", "comments": "message", "reason": "message", "note": "message", "feedback": "message", "text": "message",
	"approve": "approved", "approval": "approved", "decision": "decisions", "arguments": "args", "action": "edited_action",
	"approver": "reviewer", "by": "reviewer", "user": "reviewer",
}

// verdictParser reads a verdict; named are the keys resume_schemas declare.
type verdictParser struct{ named map[string]bool }

// parse reads a reviewer's answer for n gated calls, in any of the forms
// reviewer UIs send:
//
//   - LangChain HITL: {"decisions": [{"type": "approve"}, {"type": "edit",
//     "edited_action": {"name": ..., "args": {...}}}, {"type": "reject",
//     "message": "..."}, {"type": "respond", "message": "..."}]};
//   - Agent Inbox: {"type": "accept" | "edit" | "response" | "ignore",
//     "args": ...}, or a list of them;
//   - a shorthand for every call at once: {"approved": true|false,
//     "message": "..."}.
//
// Each form may name its "reviewer".
func (p verdictParser) parse(v any, n int) (*Verdict, error) {
	m, isMap := v.(map[string]any)
	_, hasDecisions := m["decisions"]
	_, hasApproved := m["approved"]
	switch list, isList := v.([]any); {
	case isList:
		return p.list(list, n, &Verdict{}, nil)
	case hasDecisions:
		extra, err := p.keys(m, "the verdict", verdictKeys)
		if err != nil {
			return nil, err
		}
		reviewer, err := text(m, "reviewer")
		if err != nil {
			return nil, err
		}
		return p.list(listOf(m["decisions"]), n, &Verdict{Reviewer: reviewer}, extra)
	case hasApproved:
		return p.shorthand(m, n)
	case isMap:
		return p.list([]any{m}, n, &Verdict{}, nil)
	}
	return nil, fmt.Errorf("a verdict is an object or a list of decisions, not %s", jsonType(v))
}

// list reads a decision per call into out; extra are the verdict's
// declared keys, which each decision keeps.
func (p verdictParser) list(list []any, n int, out *Verdict, extra map[string]any) (*Verdict, error) {
	for i, item := range list {
		d, err := p.decision(item, fmt.Sprintf("decision %d", i+1))
		if err != nil {
			return nil, err
		}
		d.Reviewer = or(d.Reviewer, out.Reviewer)
		out.Decisions = append(out.Decisions, d)
	}
	if len(out.Decisions) != n {
		return nil, fmt.Errorf("%d decision(s) for %d gated call(s): give one per call, in order", len(out.Decisions), n)
	}
	addExtra(out.Decisions, extra)
	return out, nil
}

// shorthand reads {"approved": bool, "message": ...} as the decision on
// each of n calls.
func (p verdictParser) shorthand(m map[string]any, n int) (*Verdict, error) {
	extra, err := p.keys(m, "the verdict", shorthandKeys)
	if err != nil {
		return nil, err
	}
	approved, ok := m["approved"].(bool)
	if !ok {
		return nil, fmt.Errorf("approved is true or false, not %s", jsonType(m["approved"]))
	}
	d := Decision{Type: DecisionReject}
	if approved {
		d.Type = DecisionApprove
	}
	if d.Message, err = text(m, "message"); err != nil {
		return nil, err
	}
	if d.Reviewer, err = text(m, "reviewer"); err != nil {
		return nil, err
	}
	out := &Verdict{Reviewer: d.Reviewer}
	for range n {
		each := d
		out.Decisions = append(out.Decisions, &each)
	}
	addExtra(out.Decisions, extra)
	return out, nil
}

// decision reads one decision in the LangChain or the Agent Inbox form.
func (p verdictParser) decision(v any, where string) (*Decision, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is an object, not %s", where, jsonType(v))
	}
	extra, err := p.keys(m, where, decisionKeys)
	if err != nil {
		return nil, err
	}
	d := &Decision{Extra: extra}
	if d.Message, err = text(m, "message"); err != nil {
		return nil, err
	}
	if d.Reviewer, err = text(m, "reviewer"); err != nil {
		return nil, err
	}
	switch t, _ := m["type"].(string); t {
	case DecisionApprove, "accept":
		d.Type = DecisionApprove
	case DecisionReject, "ignore":
		d.Type = DecisionReject
	case DecisionRespond, "response":
		d.Type = DecisionRespond
		if s, ok := m["args"].(string); ok {
			d.Message = s
		}
		if d.Message == "" {
			return nil, fmt.Errorf("%s: respond needs the response text in message", where)
		}
	case DecisionEdit:
		d.Type = DecisionEdit
		return d, p.edit(m, d, where)
	default:
		return nil, fmt.Errorf("%s: unknown decision type %q: use approve, edit, reject or respond", where, t)
	}
	return d, nil
}

// edit reads an edit's action: LangChain's edited_action {name, args} or
// Agent Inbox's args {action, args}.
func (p verdictParser) edit(m map[string]any, d *Decision, where string) error {
	action, known, nameKey := m["edited_action"], actionKeys, "name"
	if action == nil {
		action, known, nameKey = m["args"], inboxKeys, "action"
	}
	a, _ := action.(map[string]any)
	if a == nil {
		return fmt.Errorf(`%s: edit needs edited_action: {"name": ..., "args": {...}}`, where)
	}
	if _, err := p.keys(a, where+": the edited action", known); err != nil {
		return err
	}
	if d.Args, _ = a["args"].(map[string]any); d.Args == nil {
		return fmt.Errorf(`%s: edit needs the edited arguments: edited_action: {"name": ..., "args": {...}}`, where)
	}
	var err error
	d.tool, err = text(a, nameKey)
	return err
}

// keys refuses a key of m that its form does not know and no
// resume_schema declares, suggesting the key meant; it returns the
// declared ones, which the journal keeps with the decision.
func (p verdictParser) keys(m map[string]any, where string, known []string) (map[string]any, error) {
	var extra map[string]any
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch {
		case slices.Contains(known, k):
		case p.named[k]:
			if extra == nil {
				extra = map[string]any{}
			}
			extra[k] = m[k]
		default:
			msg := fmt.Sprintf("%s has a key %q that it does not know", where, k)
			if hint := meant(k, known); hint != "" {
				msg += fmt.Sprintf(": did you mean %q?", hint)
			}
			return nil, fmt.Errorf("%s. Its keys are %s; declare others in the rule's resume_schema", msg, strings.Join(known, ", "))
		}
	}
	return extra, nil
}

// meant is the known key a reviewer likely meant by k: one it misspelt,
// or one it said in other words ("comment" for "message"); "" if none.
func meant(k string, known []string) string {
	candidates := slices.Clone(known)
	for word, key := range synonyms {
		if slices.Contains(known, key) {
			candidates = append(candidates, word)
		}
	}
	s := suggest.Closest(strings.ToLower(k), candidates)
	if key, ok := synonyms[s]; ok && !slices.Contains(known, s) {
		return key
	}
	return s
}

// text reads an optional string key of m.
func text(m map[string]any, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", fmt.Errorf("%s is a string, not %s", key, jsonType(v))
	}
	return s, nil
}

// addExtra gives each decision the verdict's declared keys.
func addExtra(ds []*Decision, extra map[string]any) {
	for _, d := range ds {
		for k, v := range extra {
			if d.Extra == nil {
				d.Extra = map[string]any{}
			}
			if _, ok := d.Extra[k]; !ok {
				d.Extra[k] = v
			}
		}
	}
}

// listOf makes a list of one of a value that is not a list.
func listOf(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// schemaNames adds the property names a JSON Schema declares, at any
// depth, to names.
func schemaNames(schema map[string]any, names map[string]bool) {
	for k, v := range schema {
		sub, _ := v.(map[string]any)
		if k == "properties" {
			for name := range sub {
				names[name] = true
			}
		}
		if sub != nil {
			schemaNames(sub, names)
		}
		if list, ok := v.([]any); ok {
			for _, item := range list {
				if m, ok := item.(map[string]any); ok {
					schemaNames(m, names)
				}
			}
		}
	}
}

// jsonType names a JSON value's type.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "a number"
}
