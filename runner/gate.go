package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
)

// The approval gate. A require_hitl rule pauses the thread before a call
// runs (before_tool_call) or before its result is acted on
// (after_tool_call). What the gate decided lives in the step's journal,
// which every checkpoint written inside the step carries: the frozen
// call, the reviewer's verdict once given, and the call's result once it
// ran. A node that runs again — resumed, or after a crash — finds its
// calls there, so an approved call runs exactly once with its frozen
// arguments and id, and a resume in a new process behaves as a warm one.

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
}

// callEntry is one call in the step's journal.
type callEntry struct {
	ID   string         `json:"id"`
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
	// Rule is the gate that paused the call; After marks a gate on its
	// result; Expires is when an unanswered gate takes its on_expire.
	Rule     string         `json:"rule,omitempty"`
	After    bool           `json:"after,omitempty"`
	Expires  *time.Time     `json:"expires,omitempty"`
	Decision *Decision      `json:"decision,omitempty"`
	Exec     *ToolExecution `json:"exec,omitempty"`
	State    Update         `json:"state,omitempty"` // a state-aware call's updates
	// Deny is a before rule's denial, kept with the other calls of a
	// round that paused (their rules do not fire again on resume).
	Deny *DeniedError `json:"deny,omitempty"`
}

// awaiting reports whether the call waits for a verdict before it runs.
func (e *callEntry) awaiting() bool {
	return e.Rule != "" && !e.After && e.Decision == nil && e.Exec == nil
}

// outcome is the recorded outcome of a call that ran.
func (e *callEntry) outcome() ToolOutcome {
	o := ToolOutcome{Exec: e.Exec, state: e.State}
	if !e.Exec.OK {
		o.Err = errors.New(e.Exec.ErrorMessage)
	}
	return o
}

// journaled returns the journal's entry for a call id.
func (r *Run) journaled(id string) *callEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[id]
}

// journal adds or replaces an entry.
func (r *Run) journal(e *callEntry) *callEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]*callEntry{}
	}
	r.calls[e.ID] = e
	return e
}

// seen journals the calls of a round that pauses at a gate, so that on
// resume their before rules do not fire again.
func (r *Run) seen(calls []*toolCall) {
	for _, c := range calls {
		if c.entry == nil {
			c.entry = r.journal(&callEntry{ID: c.info.ID, Tool: c.info.Name, Args: c.info.Args, Deny: c.deny})
		}
	}
}

// record journals a call's outcome durably, before the node goes on: a
// crash after this point does not run the call again. A store that fails
// ends the node: nothing more can be made durable.
func (r *Run) record(c *toolCall, o ToolOutcome) (ToolOutcome, error) {
	e := &callEntry{ID: c.info.ID, Tool: c.info.Name, Args: c.info.Args, Exec: o.Exec, State: o.state}
	if c.entry != nil {
		cp := *c.entry
		cp.Exec, cp.State, e = o.Exec, o.state, &cp
	}
	c.entry = r.journal(e)
	if err := r.saveJournal(); err != nil {
		return ToolOutcome{}, Permanent(err)
	}
	return o, nil
}

// saveJournal writes a checkpoint of the step so far: no writes, the
// journal in its meta.
func (r *Run) saveJournal() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkpoint(context.Background(), cpRecord{node: r.in.Node, next: r.in.Node, status: StatusRunning, state: r.in.State})
}

// restoreJournal continues a step whose checkpoints journaled calls,
// with the state updates its calls and rules had made.
func (r *Run) restoreJournal(entries []*callEntry, pending Update) {
	for _, e := range entries {
		r.journal(e)
	}
	r.sideUpd, r.midStep = pending, len(entries) > 0
}

// journalEntries returns the journal's entries, sorted by id.
func (r *Run) journalEntries() []*callEntry {
	out := make([]*callEntry, 0, len(r.calls))
	for _, e := range r.calls {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// pausedAt sets when an unanswered gate expires.
func (e *callEntry) pausedAt(now time.Time, h *HITL) {
	if h != nil && h.Expires > 0 {
		t := now.Add(h.Expires)
		e.Expires = &t
	}
}

// gateRule returns the require_hitl rule called key (a gate with default
// settings when the definitions no longer have it).
func (r *Run) gateRule(key string) *Rule {
	for _, rules := range r.rules {
		for _, rule := range rules {
			if rule.Key == key && rule.Action.HITL != nil {
				return rule
			}
		}
	}
	return &Rule{Key: key, Action: Action{Kind: ActRequireHITL, HITL: &HITL{}}}
}

// decide settles the gated calls of a round: an expired gate takes its
// on_expire decision; otherwise the resume value must carry one valid
// decision per call, which is journaled durably before any call runs;
// without one the thread pauses (again): the gate fails closed.
func (r *Run) decide(gated []*toolCall) error {
	if r.expire(gated) {
		return Permanent(r.saveJournal())
	}
	v, ok := r.takeVerdict(ids(gated))
	if !ok {
		return r.gateInterrupt(gated, false)
	}
	if h := r.gateRule(gated[0].entry.Rule).Action.HITL; h.Check != nil {
		if err := h.Check(v); err != nil {
			return InvalidResume(fmt.Errorf("resume_schema: %w", err))
		}
	}
	ds, err := decisions(v, len(gated))
	if err != nil {
		return InvalidResume(err)
	}
	for i, c := range gated {
		if err := r.accept(c, ds[i]); err != nil {
			return InvalidResume(fmt.Errorf("decision %d (%s %s): %w", i+1, c.info.Name, c.info.ID, err))
		}
	}
	for i, c := range gated {
		e := *c.entry
		e.Decision = ds[i]
		if ds[i].Type == DecisionEdit {
			e.Args, c.info.Args = ds[i].Args, ds[i].Args
		}
		c.entry = r.journal(&e)
	}
	r.emit(EventRule, r.in.Node, map[string]any{"rule": gated[0].entry.Rule, "action": "decision", "decisions": ds})
	return Permanent(r.saveJournal())
}

// accept checks a decision against its gate: an allowed type, and edited
// arguments the tool accepts.
func (r *Run) accept(c *toolCall, d *Decision) error {
	h := r.gateRule(c.entry.Rule).Action.HITL
	if !h.allowed(d.Type) {
		return fmt.Errorf("%s is not allowed here; allowed: %v", d.Type, h.Decisions)
	}
	if d.Type != DecisionEdit {
		return nil
	}
	if d.Args == nil {
		return errors.New("edit needs the edited arguments")
	}
	if ac, ok := c.req.Spec.Tool.(ArgsChecker); ok {
		return ac.CheckArgs(d.Args)
	}
	return nil
}

// expire gives every expired, unanswered gate its on_expire decision; it
// reports whether every gate of the round is then decided.
func (r *Run) expire(gated []*toolCall) bool {
	all := true
	for _, c := range gated {
		e := c.entry
		if e.Expires == nil || r.clock.Now().Before(*e.Expires) {
			all = false
			continue
		}
		cp := *e
		cp.Decision = &Decision{Type: or(r.gateRule(e.Rule).Action.HITL.OnExpire, DecisionReject), Message: "no decision before " + stamp(*e.Expires)}
		c.entry = r.journal(&cp)
		r.emit(EventRule, r.in.Node, map[string]any{"rule": e.Rule, "action": "expired", "decision": cp.Decision.Type})
	}
	return all
}

// decideAfter settles a gate on a call's result: approve keeps it,
// reject withholds it, respond replaces it with the reviewer's text.
func (r *Run) decideAfter(c *toolCall) (ToolOutcome, error) {
	e := c.entry
	if e.Decision == nil && !r.expire([]*toolCall{c}) {
		v, ok := r.takeVerdict([]string{e.ID})
		if !ok {
			return ToolOutcome{}, r.gateInterrupt([]*toolCall{c}, true)
		}
		ds, err := decisions(v, 1)
		if err == nil && ds[0].Type == DecisionEdit {
			err = errors.New("a gate on a result takes approve, reject or respond")
		}
		if err == nil {
			err = r.accept(c, ds[0])
		}
		if err != nil {
			return ToolOutcome{}, InvalidResume(err)
		}
		cp := *e
		cp.Decision = ds[0]
		c.entry = r.journal(&cp)
		if err := r.saveJournal(); err != nil {
			return ToolOutcome{}, Permanent(err)
		}
	}
	o := c.entry.outcome()
	switch d := c.entry.Decision; d.Type {
	case DecisionReject:
		return r.withheld(c, o, &DeniedError{Key: c.entry.Rule, Reason: "result rejected by the reviewer" + colon(d.Message)}), nil
	case DecisionRespond:
		exec := *o.Exec
		exec.Output, exec.OK, exec.Status, exec.ErrorMessage = d.Message, true, ToolAnswered, ""
		return ToolOutcome{Exec: &exec}, nil
	}
	return o, nil
}

// approveLLM gates a model call: approved, it goes on; rejected, the node
// fails; unanswered, the thread pauses.
func (r *Run) approveLLM(rule *Rule, rec *LLMCall) error {
	id := fmt.Sprintf("llm.%s.%d", r.in.Node, r.step)
	v, ok := r.takeVerdict([]string{id})
	if !ok {
		c := &toolCall{info: ToolInfo{ID: id, Name: "llm:" + rec.Model, Args: map[string]any{"model": rec.Model, "phase": rec.Phase}},
			entry: &callEntry{ID: id, Rule: rule.Key}}
		return r.gateInterrupt([]*toolCall{c}, false)
	}
	ds, err := decisions(v, 1)
	if err != nil {
		return InvalidResume(err)
	}
	if ds[0].Type != DecisionApprove {
		return Permanent(&DeniedError{Key: rule.Key, Reason: "the reviewer did not approve the model call" + colon(ds[0].Message)})
	}
	return nil
}

// takeVerdict returns the resume value when this run resumed the gate
// that paused exactly these calls; it is taken once.
func (r *Run) takeVerdict(ids []string) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.in.Resumed || r.verdictTaken || !slices.Equal(ids, r.awaiting) {
		return nil, false
	}
	r.verdictTaken = true
	return r.in.Resume, true
}

func ids(calls []*toolCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.info.ID
	}
	return out
}

// gateInterrupt pauses for a reviewer. Its payload is LangChain's HITL
// request — action_requests and review_configs, what agent-chat-ui shows as
// an approval card — with the rule, checkpoint type, call ids and expiry.
func (r *Run) gateInterrupt(calls []*toolCall, after bool) *Interrupt {
	rule := calls[0].entry.Rule
	gate := r.gateRule(rule)
	h := gate.Action.HITL
	decisions := h.Decisions
	if len(decisions) == 0 {
		decisions = []string{DecisionApprove, DecisionEdit, DecisionReject, DecisionRespond}
		if after {
			decisions = []string{DecisionApprove, DecisionReject, DecisionRespond}
		}
	}
	var actions, configs, callIDs []any
	var msg string
	for _, c := range calls {
		vars := r.toolVars(c, c.entry.Exec)
		desc, err := render(gate.Action.Text, vars)
		if err != nil || desc == "" {
			desc = fmt.Sprintf("%s wants to call %s; rule %s requires a human decision", or(r.agentName(), "the agent"), c.info.Name, rule)
		}
		msg = desc
		actions = append(actions, map[string]any{"name": c.info.Name, "args": c.info.Args, "description": desc, "id": c.info.ID})
		configs = append(configs, map[string]any{"action_name": c.info.Name, "allowed_decisions": anyList(decisions)})
		callIDs = append(callIDs, c.info.ID)
	}
	payload := map[string]any{"action_requests": actions, "review_configs": configs, "rule": rule,
		"checkpoint_type": h.CheckpointType, "calls": callIDs, "after_call": after}
	if e := calls[0].entry.Expires; e != nil {
		payload["expires_at"] = stamp(*e)
	}
	if after {
		payload["result"] = calls[0].entry.Exec.Value()
	}
	return &Interrupt{Kind: or(h.CheckpointType, "approval"), Rule: rule, Message: msg, Payload: payload, ResumeSchema: h.ResumeSchema}
}

func (r *Run) agentName() string {
	if r.Graph.Agent == nil {
		return ""
	}
	return r.Graph.Agent.Name
}

// awaitingCalls reads the call ids a gate interrupt waits on.
func awaitingCalls(intr *Interrupt) []string {
	if intr == nil || intr.Rule == "" {
		return nil
	}
	list, _ := intr.Payload["calls"].([]any)
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// decisions reads a reviewer's answer for n gated calls, in any of the
// forms reviewer UIs send:
//
//   - LangChain HITL: {"decisions": [{"type": "approve"}, {"type": "edit",
//     "edited_action": {"name": ..., "args": {...}}}, {"type": "reject",
//     "message": "..."}, {"type": "respond", "message": "..."}]};
//   - Agent Inbox: {"type": "accept" | "edit" | "response" | "ignore",
//     "args": ...}, or a list of them;
//   - a shorthand for every call at once: {"approved": true|false,
//     "message": "..."}.
func decisions(v any, n int) ([]*Decision, error) {
	var out []*Decision
	switch x := v.(type) {
	case nil:
		return nil, errors.New(`the approval gate waits for a decision: {"decisions": [{"type": "approve"}]}, {"approved": false, "message": "why"}, or an Agent Inbox response`)
	case []any:
		for _, item := range x {
			d, err := decision(item)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
	case map[string]any:
		if list, ok := x["decisions"]; ok {
			return decisions(listOr(list), n)
		}
		if ok, isBool := x["approved"].(bool); isBool {
			msg, _ := x["message"].(string)
			t := DecisionApprove
			if !ok {
				t = DecisionReject
			}
			for range n {
				out = append(out, &Decision{Type: t, Message: msg})
			}
			return out, nil
		}
		d, err := decision(x)
		if err != nil {
			return nil, err
		}
		out = []*Decision{d}
	default:
		return nil, fmt.Errorf("a decision is an object, not %T", v)
	}
	if len(out) != n {
		return nil, fmt.Errorf("%d decision(s) for %d gated call(s): give one per call, in order", len(out), n)
	}
	return out, nil
}

// listOr makes a list of one of a value that is not a list.
func listOr(v any) any {
	if _, ok := v.([]any); ok || v == nil {
		return v
	}
	return []any{v}
}

// decision reads one decision in the LangChain or the Agent Inbox form.
func decision(v any) (*Decision, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a decision is an object, not %T", v)
	}
	t, _ := m["type"].(string)
	d := &Decision{}
	d.Message, _ = m["message"].(string)
	switch t {
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
			return nil, errors.New("respond needs the response text in message")
		}
	case DecisionEdit:
		d.Type = DecisionEdit
		action, _ := m["edited_action"].(map[string]any)
		if action == nil {
			action, _ = m["args"].(map[string]any) // Agent Inbox: {action, args}
		}
		d.Args, _ = action["args"].(map[string]any)
		if d.Args == nil {
			return nil, errors.New(`edit needs edited_action: {"name": ..., "args": {...}}`)
		}
	default:
		return nil, fmt.Errorf("unknown decision type %q: use approve, edit, reject or respond", t)
	}
	return d, nil
}
