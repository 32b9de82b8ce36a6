package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// The approval gate and the step's journal. A require_hitl rule pauses
// the thread before a call runs (before_tool_call, before_llm_call) or
// before its result is acted on (after_tool_call). Where a gate can pause
// a step, every call the step makes is journaled as it ends — its result
// and its state updates — and, where none can, every mutating call; every
// checkpoint written inside the step carries the journal: the
// frozen call, the reviewer's verdict once given, the call's result once
// it ran. A node that runs again — resumed, or after a crash — finds its
// calls there, so no call is made twice, no rule fires twice on one, an
// approved call runs exactly once with its frozen arguments and id, and a
// resume in a new process behaves as a warm one. Gated and mutating calls
// are journaled durably at once; the others with the next checkpoint
// (the pause's, at the latest).

// obey makes rules, by trigger, the rules the run fires.
func (r *Run) obey(rules map[string][]*Rule) {
	r.rules, r.gated = rules, false
	for _, on := range rules {
		for _, rule := range on {
			r.gated = r.gated || rule.Action.Kind == ActRequireHITL
		}
	}
}

// keeps reports whether the journal keeps a call: every call when a gate
// may pause the step — the calls made before it must not be made again —
// and else a mutating one.
func (r *Run) keeps(mutating bool) bool { return r.gated || mutating }

// callEntry is one call in the step's journal.
type callEntry struct {
	ID   string         `json:"id"`
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
	// Mutating marks a call of a mutating tool: its entry outlives a
	// failed attempt of the node (see forget).
	Mutating bool `json:"mutating,omitempty"`
	// Rule is the gate that paused the call; After marks a gate on its
	// result; Expires is when an unanswered gate takes its on_expire.
	Rule    string     `json:"rule,omitempty"`
	After   bool       `json:"after,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
	// Ballot, for a gate whose rule names reviewers, a quorum or a
	// requester kept apart, is who may decide it, frozen as it opened, and
	// who has approved it so far.
	Ballot *access.Ballot `json:"ballot,omitempty"`
	// Escalate, for a gate whose rule escalates, is when and to whom.
	Escalate *escalation    `json:"escalate,omitempty"`
	Decision *Decision      `json:"decision,omitempty"`
	Exec     *ToolExecution `json:"exec,omitempty"`
	State    Update         `json:"state,omitempty"` // a state-aware call's updates
	// Deny is a before rule's denial, kept with the other calls of a
	// round that paused (their rules do not fire again on resume).
	Deny *DeniedError `json:"deny,omitempty"`
	// Model marks a model call, with its record and reply once made.
	Model *modelCall `json:"model,omitempty"`
}

// modelCall is a model call's outcome in the journal.
type modelCall struct {
	Rec   *LLMCall      `json:"rec,omitempty"`
	Reply *ChatResponse `json:"reply,omitempty"`
}

// trigger is the trigger of the gate that holds the call.
func (e *callEntry) trigger() string {
	switch {
	case e.Model != nil:
		return BeforeLLMCall
	case e.After:
		return AfterToolCall
	}
	return BeforeToolCall
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

// seen journals the calls of a round that pauses, so that on resume their
// before rules do not fire again.
func (r *Run) seen(calls []*toolCall) {
	for _, c := range calls {
		if c != nil && c.entry == nil {
			c.entry = r.journal(&callEntry{ID: c.info.ID, Tool: c.info.Name, Args: c.info.Args, Mutating: c.info.Mutating, Deny: c.deny})
		}
	}
}

// record journals how a call ended, durably when asked — a crash after
// this point does not make the call again. A store that fails ends the
// node: nothing more can be made durable.
func (r *Run) record(c *toolCall, o ToolOutcome, durably bool) (ToolOutcome, error) {
	e := &callEntry{ID: c.info.ID, Tool: c.info.Name, Args: c.info.Args, Mutating: c.info.Mutating}
	if c.entry != nil {
		cp := *c.entry
		e = &cp
	}
	e.Exec, e.State = o.Exec, o.state
	c.entry = r.journal(e)
	if !durably {
		return o, nil
	}
	if err := r.saveJournal(); err != nil {
		return ToolOutcome{}, Permanent(err)
	}
	return o, nil
}

// forget drops, after a failed attempt of the node, what a retry or a
// resume must do again: the calls that were neither gated nor mutating,
// and every model call's reply (a gate's decision on it stands).
func (r *Run) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, e := range r.calls {
		switch {
		case e.Model != nil && e.Rule != "":
			cp := *e
			cp.Model = &modelCall{}
			r.calls[id] = &cp
		case e.Model != nil || (e.Rule == "" && !e.Mutating):
			delete(r.calls, id)
		}
	}
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

// hold journals a call a gate stops, with when it expires and who may
// decide it, computed over the rule's variables vars. Reviewers that
// cannot be computed end the run: the call does not go through.
func (r *Run) hold(c *toolCall, gate *Rule, e *callEntry, vars map[string]any) error {
	e.ID, e.Tool, e.Args, e.Mutating, e.Rule = c.info.ID, c.info.Name, c.info.Args, c.info.Mutating, gate.Key
	h := gate.Action.HITL
	if h.Expires > 0 {
		t := r.clock.Now().Add(h.Expires)
		e.Expires = &t
	}
	if h.ballots() {
		b, err := r.ballot(h, vars)
		if err != nil {
			return &RuleError{Key: gate.Key, Reason: "reviewers: " + err.Error()}
		}
		e.Ballot = b
	}
	if esc := h.Escalate; esc != nil {
		to, err := reviewersOf(esc.To, vars)
		if err != nil {
			return &RuleError{Key: gate.Key, Reason: "escalate.to: " + err.Error()}
		}
		e.Escalate = &escalation{At: r.clock.Now().Add(esc.After), To: to}
	}
	c.entry = r.journal(e)
	r.ledger(store.AuditOpened, e, digest(e.Args), nil)
	return nil
}

// ballot is who may decide a gate of h, its reviewers computed over vars,
// and who asked: the principal who started the turn.
func (r *Run) ballot(h *HITL, vars map[string]any) (*access.Ballot, error) {
	b := &access.Ballot{Tenant: r.tenant, Quorum: h.Quorum, Requester: r.requester, DistinctFromRequester: h.DistinctFromRequester}
	if h.Reviewers == nil {
		return b, nil
	}
	var err error
	b.Reviewers, err = reviewersOf(h.Reviewers, vars)
	return b, err
}

// reviewersOf computes a list of "role:NAME" and "principal:NAME" over
// vars.
func reviewersOf(ev Evaluator, vars map[string]any) (access.Reviewers, error) {
	v, err := ev.Eval(vars)
	if err != nil {
		return access.Reviewers{}, err
	}
	list, _ := NormalizeJSON(v).([]any)
	entries := make([]string, len(list))
	for i, x := range list {
		if entries[i], _ = x.(string); entries[i] == "" {
			return access.Reviewers{}, fmt.Errorf("entry %d is %s, not a reviewer: a list of \"role:NAME\" and \"principal:NAME\"", i+1, jsonType(x))
		}
	}
	if list == nil && v != nil {
		return access.Reviewers{}, fmt.Errorf("%s, not a list of \"role:NAME\" and \"principal:NAME\"", jsonType(NormalizeJSON(v)))
	}
	return access.ParseReviewers(entries)
}

// gateRule returns the require_hitl rule called key.
func (r *Run) gateRule(key string) *Rule { return ruleByKey(r.rules, key) }

// ruleByKey returns, of rules by trigger, the require_hitl rule called key
// (a gate with default settings when the definitions no longer have it).
func ruleByKey(rules map[string][]*Rule, key string) *Rule {
	for _, on := range rules {
		for _, rule := range on {
			if rule.Key == key && rule.Action.HITL != nil {
				return rule
			}
		}
	}
	return &Rule{Key: key, Action: Action{Kind: ActRequireHITL, HITL: &HITL{}}}
}

// settle decides the calls a gate holds, for every kind of gate: an
// expired gate takes its on_expire decision; otherwise the resume value,
// read by decide, gives each call its decision, journaled durably before
// anything runs. Without a verdict for exactly these calls the thread
// pauses (again): the gate fails closed. A refused verdict changes
// nothing.
func (r *Run) settle(calls []*toolCall) error {
	if r.expire(calls) {
		r.approval = r.approvalOf(calls, store.ApprovalExpired)
		return Permanent(r.saveJournal())
	}
	v, ok := r.takeVerdict(ids(calls))
	if !ok {
		return r.gateInterrupt(calls)
	}
	held := make([]heldCall, len(calls))
	for i, c := range calls {
		held[i] = r.held(c)
	}
	for _, c := range calls {
		if err := access.MayDecide(r.as, r.ballotOf(c.entry)); err != nil {
			return InvalidResume(fmt.Errorf("%s %s: %w", c.info.Name, c.info.ID, err))
		}
	}
	verdict, err := decide(v, held)
	if err != nil {
		return err
	}
	reviewer := or(r.as.Name, verdict.Reviewer) // the principal, when it has a name
	var open []*toolCall                        // approved, short of their quorum
	for i, c := range calls {
		if c.entry.Decision != nil { // expired meanwhile
			continue
		}
		e, d := *c.entry, verdict.Decisions[i]
		d.Reviewer = reviewer
		held := digest(e.Args)
		if d.Type == DecisionApprove && e.Ballot != nil {
			b := *e.Ballot
			b.Voted = append(slices.Clone(b.Voted), r.as.Name)
			if e.Ballot = &b; len(b.Voted) < b.Quorum {
				c.entry = r.journal(&e)
				r.ledger(store.AuditVoted, &e, held, d)
				open = append(open, c)
				continue
			}
		}
		e.Decision = d
		if d.Type == DecisionEdit {
			e.Args, c.info.Args = d.Args, d.Args
		}
		c.entry = r.journal(&e)
		r.ledger(store.AuditDecided, &e, held, d)
	}
	r.emit(EventRule, r.in.Node, map[string]any{"rule": calls[0].entry.Rule, "action": "decision", "decisions": verdict.Decisions,
		"reviewer": reviewer})
	if len(open) > 0 { // the pause's checkpoint journals the votes
		return r.gateInterrupt(open)
	}
	r.approval = r.approvalOf(calls, store.ApprovalDecided)
	return Permanent(r.saveJournal())
}

// approvalNS is the UUID namespace of approval IDs.
var approvalNS = uuid.MustParse("5d0c9a7e-3b41-5f2a-8c6d-7e9f0a1b2c3d")

// approvalOf is the durable record (store.Approval) of the approval that
// holds calls, with status: its ID, stable from the gate's opening to its
// decision, is made of the thread and the first call's id; its record
// holds the journal's entries of the calls — arguments, rule, ballot and
// decision. The next checkpoint writes it.
func (r *Run) approvalOf(calls []*toolCall, status string) *store.Approval {
	entries := make([]*callEntry, len(calls))
	for i, c := range calls {
		entries[i] = c.entry
	}
	now := r.clock.Now()
	a := &store.Approval{ID: approvalID(r.Thread, entries[0].ID), Tenant: r.tenant, Thread: r.Thread,
		Agent: or(r.agentName(), r.Graph.Name), Status: status, CreatedAt: now, UpdatedAt: now}
	a.Record = holding(a, entries, r.in.Node)
	return a
}

// holding sets what of approval a its held calls' journal entries say —
// its rule, reviewers, expiry and escalation — and returns its record.
func holding(a *store.Approval, entries []*callEntry, node string) json.RawMessage {
	first := entries[0]
	a.Rule, a.Reviewers, a.ExpiresAt, a.EscalateAt = first.Rule, nil, time.Time{}, time.Time{}
	for _, e := range entries {
		for _, k := range ballotIn(a.Tenant, e).Reviewers.Keys() {
			if !slices.Contains(a.Reviewers, k) {
				a.Reviewers = append(a.Reviewers, k)
			}
		}
	}
	if first.Expires != nil {
		a.ExpiresAt = *first.Expires
	}
	if esc := first.Escalate; esc != nil && esc.Done == nil {
		a.EscalateAt = esc.At
	}
	rec, _ := json.Marshal(map[string]any{"calls": entries, "trigger": first.trigger(), "node": node})
	return rec
}

// approvalID is the ID of the approval of thread's gate whose first call
// is call.
func approvalID(thread, call string) string {
	return uuid.NewSHA1(approvalNS, []byte(thread+"/"+call)).String()
}

// ballotOf is who may decide the call e: anyone of the run's tenant for a
// gate whose rule names no one.
func (r *Run) ballotOf(e *callEntry) access.Ballot { return ballotIn(r.tenant, e) }

// ballotIn is who may decide the call e of a thread of tenant.
func ballotIn(tenant string, e *callEntry) access.Ballot {
	if e.Ballot == nil {
		return access.Ballot{Tenant: tenant}
	}
	return *e.Ballot
}

// ResumeChecker is a node that pauses with no rule and checks the value
// it is resumed with (an interrupt node, against its resume_schema).
type ResumeChecker interface {
	CheckResume(value any) error
}

// Resolve is the decide path of a node that paused with no rule: the
// value it was resumed with must pass the node's check (ResumeChecker),
// or it is refused as a gate's verdict is — nothing changes, the error
// wraps ErrInvalidResume and ErrInput. A value taken is announced by a
// decision event, as a gate's verdict is.
func (r *Run) Resolve(value any) error {
	if err := checkValue(r.Graph.Nodes[r.in.Node], value); err != nil {
		return err
	}
	m, _ := value.(map[string]any)
	reviewer, _ := m["reviewer"].(string)
	r.emit(EventRule, r.in.Node, map[string]any{"action": "decision", "value": value, "reviewer": reviewer})
	return nil
}

// checkValue is a node's check of the value it is resumed with.
func checkValue(s *Step, value any) error {
	rc, ok := s.Node.(ResumeChecker)
	if !ok {
		return nil
	}
	if err := rc.CheckResume(value); err != nil {
		return InvalidResume(fmt.Errorf("the value does not satisfy node %s: %w", s.Name, err))
	}
	return nil
}

// CheckResume tells, before a resume starts, whether a thread of g that
// stands at ts would take value from principal p: p must be allowed to
// decide every call a gate holds (access.MayDecide, an error wrapping
// access.ErrForbidden), and the verdict is read by decide — forms, keys,
// resume_schemas, each decision against its call, edited arguments
// against the tool — or a node's value by its check. It changes nothing;
// a refusal wraps ErrInvalidResume and ErrInput, as the resume's own
// would. A thread paused where the resume decides more (a budget, a child
// thread, a static pause) passes: the resume itself says.
func CheckResume(g *Graph, ts *ThreadState, value any, p access.Principal) error {
	intr, s := ts.Interrupt, g.Nodes[ts.Next]
	if intr == nil || s == nil || len(intr.Pending) > 0 || intr.static() || intr.Kind == KindBudget || intr.Node != s.Name {
		return nil
	}
	value = NormalizeJSON(value)
	if intr.Rule == "" {
		return checkValue(s, value)
	}
	rules := g.ActiveRules(ts.Tenant)
	var held []heldCall
	trigger, _ := intr.Payload["trigger"].(string)
	actions, _ := intr.Payload["action_requests"].([]any)
	for _, a := range actions {
		req, _ := a.(map[string]any)
		h := heldCall{trigger: or(trigger, BeforeToolCall)}
		h.id, _ = req["id"].(string)
		h.tool, _ = req["name"].(string)
		h.rule, _ = req["rule"].(string)
		h.rule = or(h.rule, intr.Rule)
		h.hitl, h.checkArgs = ruleByKey(rules, h.rule).Action.HITL, argsChecker(g.Tools[h.tool])
		b := access.Ballot{Tenant: ts.Tenant}
		if raw, err := json.Marshal(req["ballot"]); err == nil && req["ballot"] != nil {
			_ = json.Unmarshal(raw, &b)
		}
		if err := access.MayDecide(p, b); err != nil {
			return InvalidResume(fmt.Errorf("%s %s: %w", h.tool, h.id, err))
		}
		h.quorum = b.Quorum
		held = append(held, h)
	}
	_, err := decide(value, held)
	return err
}

// held is a gated call as decide checks a decision on it.
func (r *Run) held(c *toolCall) heldCall {
	rule := r.gateRule(c.entry.Rule)
	return heldCall{id: c.info.ID, tool: c.info.Name, rule: rule.Key, trigger: c.entry.trigger(), hitl: rule.Action.HITL,
		checkArgs: argsChecker(c.req.Spec), quorum: r.ballotOf(c.entry).Quorum}
}

// argsChecker is a tool's check of its arguments; nil when it has none.
func argsChecker(spec *ToolSpec) func(map[string]any) error {
	if spec == nil {
		return nil
	}
	if ac, ok := spec.Tool.(ArgsChecker); ok {
		return ac.CheckArgs
	}
	return nil
}

// expire gives every expired, unanswered gate its on_expire decision; it
// reports whether every gate of the round is then decided.
func (r *Run) expire(gated []*toolCall) bool {
	all := true
	for _, c := range gated {
		e := c.entry
		if e.Decision != nil {
			continue
		}
		if e.Expires == nil || r.clock.Now().Before(*e.Expires) {
			all = false
			continue
		}
		cp := *e
		cp.Decision = &Decision{Type: or(r.gateRule(e.Rule).Action.HITL.OnExpire, DecisionReject), Message: "no decision before " + stamp(*e.Expires)}
		c.entry = r.journal(&cp)
		r.ledger(store.AuditExpired, &cp, digest(cp.Args), cp.Decision)
		r.emit(EventRule, r.in.Node, map[string]any{"rule": e.Rule, "action": "expired", "decision": cp.Decision.Type,
			"approval_id": approvalID(r.Thread, gated[0].entry.ID), "call": e.ID, "tool": e.Tool})
	}
	return all
}

// decideAfter settles a gate on a call's result: approve keeps it,
// reject withholds it, respond replaces it with the reviewer's text.
func (r *Run) decideAfter(c *toolCall) (ToolOutcome, error) {
	if c.entry.Decision == nil {
		if err := r.settle([]*toolCall{c}); err != nil {
			return ToolOutcome{}, err
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

// takeVerdict returns the resume value when this run resumed the gate
// that paused exactly these calls; it is taken once. A run resumed only
// to expire gates has none.
func (r *Run) takeVerdict(ids []string) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.expireOnly || !r.in.Resumed || r.verdictTaken || !slices.Equal(ids, r.awaiting) {
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
func (r *Run) gateInterrupt(calls []*toolCall) *Interrupt {
	first := calls[0].entry
	gate := r.gateRule(first.Rule)
	h := gate.Action.HITL
	decisions := AllowedDecisions(h, first.trigger())
	var actions, configs, callIDs []any
	var msg string
	for _, c := range calls {
		vars := c.vars // a model call's
		if first.Model == nil {
			vars = r.toolVars(c, c.entry.Exec)
		}
		desc, err := render(gate.Action.Text, vars)
		if err != nil || desc == "" {
			desc = fmt.Sprintf("%s wants to call %s; rule %s requires a human decision", or(r.agentName(), "the agent"), c.info.Name, first.Rule)
		}
		msg = desc
		action := map[string]any{"name": c.info.Name, "args": c.info.Args, "description": desc, "id": c.info.ID, "rule": c.entry.Rule}
		if b := c.entry.Ballot; b != nil {
			action["ballot"] = b
		}
		actions = append(actions, action)
		configs = append(configs, map[string]any{"action_name": c.info.Name, "allowed_decisions": anyList(decisions)})
		callIDs = append(callIDs, c.info.ID)
	}
	after := first.trigger() == AfterToolCall
	payload := map[string]any{"action_requests": actions, "review_configs": configs, "rule": first.Rule,
		"checkpoint_type": h.CheckpointType, "calls": callIDs, "after_call": after, "trigger": first.trigger()}
	if e := first.Expires; e != nil {
		payload["expires_at"] = stamp(*e)
	}
	if b := first.Ballot; b != nil { // who may decide, and the quorum's progress
		payload["ballot"] = b
	}
	if esc := first.Escalate; esc != nil {
		payload["escalation"] = esc
	}
	if after {
		payload["result"] = first.Exec.Value()
	}
	r.approval = r.approvalOf(calls, store.ApprovalPending)
	payload["approval_id"] = r.approval.ID
	return &Interrupt{Kind: or(h.CheckpointType, "approval"), Rule: first.Rule, Message: msg, Payload: payload, ResumeSchema: h.ResumeSchema}
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
