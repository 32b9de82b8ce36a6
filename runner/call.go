package runner

import (
	"context"
	"fmt"
	"time"
)

// Every tool call and every model call, from any node, goes through this
// file, in one order: budget check → before_* rules → approval gate →
// call event → timeout → the call → after_* rules → budget charge →
// typed record.

// ToolRequest is one tool call a node asks its run to make.
type ToolRequest struct {
	// ID is the model's tool-call id; a call a node makes on its own
	// leaves it empty and gets "<node>.<step>.<Seq>".
	ID   string
	Seq  int
	Spec *ToolSpec
	Args map[string]any
	// Timeout bounds the call (0: the tool's own).
	Timeout time.Duration
	// Skill is the loaded skill offering the tool; Skills are the skills
	// loaded now (a skill's rules fire only while it is loaded).
	Skill  string
	Skills []string
}

// ToolOutcome is how one call ended: its record, and the call's error
// (nil when it succeeded) for the model or the node to see. A state-aware
// tool's state updates are merged by the step, after the node's update,
// and the after_tool_call rules already see them.
type ToolOutcome struct {
	Exec  *ToolExecution
	Err   error
	state Update
}

// ArgsChecker is implemented by tools that validate their arguments; a
// reviewer's edited arguments are checked before they are accepted.
type ArgsChecker interface {
	CheckArgs(args map[string]any) error
}

// toolCall is a request on its way through the call path.
type toolCall struct {
	req   ToolRequest
	info  ToolInfo
	vars  map[string]any // what its rules see, built once, when a rule needs it
	entry *callEntry     // its journal entry, when it has one
	deny  *DeniedError
	seq   int // a model call's place among the node's (see modelID)
}

// toolVars is what the call's rules see: the run's variables, tool and
// skill, and result once there is one. The state is read anew each time:
// the call's own state updates may have changed it.
func (r *Run) toolVars(c *toolCall, result *ToolExecution) map[string]any {
	if c.vars == nil {
		c.vars = r.ruleVars("tool", c.info.Vars(), "skill", c.req.Skill)
	} else {
		c.vars["state"] = r.stateView()
	}
	if result != nil {
		c.vars["result"] = result.vars()
	}
	return c.vars
}

// CallTool makes one tool call; see CallTools.
func (r *Run) CallTool(ctx context.Context, req ToolRequest) (ToolOutcome, error) {
	out, err := r.CallTools(ctx, []ToolRequest{req})
	if err != nil {
		return ToolOutcome{}, err
	}
	return out[0], nil
}

// CallTools makes a round of tool calls, in order. The before_tool_call
// rules see every call first, so one approval covers every gated call of
// the round and nothing runs before the reviewer answers. A call's own
// failure is its outcome's Err; the error returned ends the node: an
// interrupt (a gate), a spent budget, an aborting rule, a cancelled run.
// Each call is journaled as it ends, so a round that pauses — before its
// calls or after one of them — makes none of them again when it resumes.
func (r *Run) CallTools(ctx context.Context, reqs []ToolRequest) ([]ToolOutcome, error) {
	calls := make([]*toolCall, len(reqs))
	var gated []*toolCall
	for i, req := range reqs {
		c, err := r.before(req, i)
		if err != nil {
			return nil, err
		}
		calls[i] = c
		if c.entry != nil && c.entry.awaiting() {
			gated = append(gated, c)
		}
	}
	out, err := r.callAll(ctx, calls, gated)
	if isA[*Interrupt](err) {
		r.seen(calls) // their before rules fired: not again on resume
	}
	return out, err
}

// callAll settles a round's gated calls, then makes every call.
func (r *Run) callAll(ctx context.Context, calls, gated []*toolCall) ([]ToolOutcome, error) {
	if len(gated) > 0 {
		if err := r.settle(gated); err != nil {
			return nil, err
		}
	}
	out := make([]ToolOutcome, len(calls))
	for i, c := range calls {
		var err error
		if out[i], err = r.callOne(ctx, c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// before checks the budget and fires the before_tool_call rules for a call
// that the journal has not seen yet.
func (r *Run) before(req ToolRequest, i int) (*toolCall, error) {
	s := req.Spec
	id := req.ID
	if id == "" {
		id = fmt.Sprintf("%s.%d.%d", r.in.Node, r.step, req.Seq+i)
	}
	if r.keeps(s.Mutating) {
		id = r.unique(id)
	}
	c := &toolCall{req: req, info: ToolInfo{ID: id, Name: s.Name, CapabilityKey: s.Capability, Mutating: s.Mutating,
		Tags: s.Tags, Args: req.Args, Skill: req.Skill}}
	if c.entry = r.journaled(id); c.entry != nil {
		c.info.Args, c.deny = c.entry.Args, c.entry.Deny // frozen when the gate paused
		return c, nil
	}
	if be := r.meter.check("tool"); be != nil {
		return nil, Permanent(be)
	}
	f, err := r.fire(BeforeToolCall, &c.info, req.Skills, func() map[string]any { return r.toolVars(c, nil) })
	switch {
	case err != nil:
		return nil, err
	case f.abort != nil:
		return nil, f.abort
	case f.deny != nil:
		c.deny = f.deny
	case f.gate != nil:
		if err := r.hold(c, f.gate, &callEntry{}, f.vars); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// callOne runs a call as decided: from the journal when it already ran,
// not at all when a rule or a reviewer kept it from running, else for
// real; then the after_tool_call rules see its result.
func (r *Run) callOne(ctx context.Context, c *toolCall) (ToolOutcome, error) {
	e := c.entry
	switch {
	case c.deny != nil:
		return r.unrun(c, ToolDenied, c.deny), nil
	case e != nil && e.After:
		return r.decideAfter(c)
	case e != nil && e.Exec != nil:
		return e.outcome(), nil
	case e != nil && e.Decision != nil:
		switch d := e.Decision; d.Type {
		case DecisionReject:
			return r.record(c, r.unrun(c, ToolDenied, &DeniedError{Key: e.Rule, Reason: "rejected by the reviewer" + colon(d.Message)}), true)
		case DecisionRespond:
			exec := r.newExec(c, r.clock.Now())
			exec.Output, exec.OK, exec.Status = d.Message, true, ToolAnswered
			return r.record(c, ToolOutcome{Exec: exec}, true)
		}
	}
	if err := r.meter.chargeTool(); err != nil {
		return ToolOutcome{}, err
	}
	if r.engine.Sink != nil {
		r.emit(EventToolCall, r.in.Node, map[string]any{"tool": c.info.Name, "id": c.info.ID, "args": c.info.Args})
	}
	o := r.invoke(ctx, c)
	if MustStop(ctx.Err(), o.Err) { // a cancelled run stops even when the call itself got through
		if o.Err == nil {
			return ToolOutcome{}, ctx.Err()
		}
		return ToolOutcome{}, o.Err
	}
	r.setState(o.state)
	if r.engine.Sink != nil {
		r.emit(EventToolResult, r.in.Node, map[string]any{"tool": c.info.Name, "id": c.info.ID, "output": o.Exec.Output, "error": errString(o.Err),
			"status": o.Exec.Status, "duration_ms": o.Exec.ExecutionTimeMS})
	}
	o, err := r.after(c, o)
	if err != nil || (e == nil && !r.keeps(c.info.Mutating)) {
		return o, err
	}
	return r.record(c, o, e != nil || c.info.Mutating) // durably: a crash from here on does not run it again
}

// invoke calls the tool with its timeout and an idempotency key derived
// from the thread and the call id, so a call repeated after a crash can
// be recognised by the service.
func (r *Run) invoke(ctx context.Context, c *toolCall) ToolOutcome {
	timeout := c.req.Timeout
	if timeout <= 0 {
		timeout = c.req.Spec.Timeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = WithTimeout(ctx, timeout)
		defer cancel()
	}
	exec := r.newExec(c, r.clock.Now())
	start := r.clock.Now()
	out, err := c.req.Spec.Tool.Call(ctx, &ToolCall{Name: c.info.Name, Args: c.info.Args, State: r.in.State, Key: r.Thread + ":" + c.info.ID,
		Memory: r.engine.memory(r.tenant)})
	out = NormalizeJSON(out)                                        // whatever the tool's kind, rules and nodes see JSON-like values
	out, err = r.Graph.Redact.Value(out), r.Graph.Redact.Error(err) // before anything keeps or shows them
	if err != nil && timeout > 0 && TimedOut(ctx) {
		err = &TimeoutError{What: "tool " + c.info.Name, After: timeout}
	}
	exec.ExecutionTimeMS = r.clock.Now().Sub(start).Milliseconds()
	var st Update
	if err == nil && c.req.Spec.UpdatesState {
		out, st, err = stateAware(c.info.Name, out)
	}
	exec.Output, exec.OK, exec.Status = out, err == nil, ToolSuccess
	switch {
	case isA[*TimeoutError](err):
		exec.Status, exec.ErrorMessage = ToolTimedOut, err.Error()
	case err != nil:
		exec.Status, exec.ErrorMessage = ToolFailed, err.Error()
	}
	if err != nil {
		err = &ToolError{Tool: c.info.Name, Err: err}
	}
	return ToolOutcome{Exec: exec, Err: err, state: st}
}

// stateAware splits a state-aware tool's result into its output, for the
// model, and its state updates.
func stateAware(name string, out any) (any, Update, error) {
	m, ok := out.(map[string]any)
	st, ok2 := m["state"].(map[string]any)
	if !ok || (m["state"] != nil && !ok2) {
		return nil, nil, Permanent(fmt.Errorf("tool %s updates state, so it must return {output, state: {...}}, not %T", name, out))
	}
	return m["output"], st, nil
}

// after fires the after_tool_call rules on a call's result.
func (r *Run) after(c *toolCall, o ToolOutcome) (ToolOutcome, error) {
	f, err := r.fire(AfterToolCall, &c.info, c.req.Skills, func() map[string]any { return r.toolVars(c, o.Exec) })
	switch {
	case err != nil:
		return ToolOutcome{}, err
	case f.abort != nil:
		return ToolOutcome{}, f.abort
	case f.deny != nil:
		return r.withheld(c, o, f.deny), nil
	case f.gate != nil:
		// the result is journaled with the pause: the call never runs again
		if err := r.hold(c, f.gate, &callEntry{Exec: o.Exec, State: o.state, After: true}, f.vars); err != nil {
			return ToolOutcome{}, err
		}
		return r.decideAfter(c)
	}
	return o, nil
}

// unrun is the outcome of a call that did not run.
func (r *Run) unrun(c *toolCall, status string, why error) ToolOutcome {
	exec := r.newExec(c, r.clock.Now())
	exec.Status, exec.ErrorMessage = status, why.Error()
	return ToolOutcome{Exec: exec, Err: why}
}

// withheld is a call whose result a rule or a reviewer kept from the model.
func (r *Run) withheld(c *toolCall, o ToolOutcome, why error) ToolOutcome {
	exec := *o.Exec
	exec.Output, exec.OK, exec.Status, exec.ErrorMessage = nil, false, ToolDenied, why.Error()
	return ToolOutcome{Exec: &exec, Err: why}
}

func (r *Run) newExec(c *toolCall, start time.Time) *ToolExecution {
	return &ToolExecution{ToolName: c.info.Name, CallID: c.info.ID, Input: c.info.Args, Timestamp: stamp(start)}
}

// LLMRequest is one model call a node asks its run to make.
type LLMRequest struct {
	Provider Provider
	// Model is the Model document's name; Price turns usage into dollars.
	Model string
	Price func(Usage) float64
	Phase string
	// Method and Attempt, for a structured reply, are the method asked
	// (schema, tool, prompt) and the attempt, from 1 over every method: an
	// attempt after the first is counted as a structured retry.
	Method  string
	Attempt int
	// Skills are the skills loaded now.
	Skills []string
	Chat   *ChatRequest
}

// CallLLM makes one model call. It returns the reply and its record, or
// the error that ends the call: the provider's (for the node's retry
// policy), a spent budget, a rule that denied or aborted it, or the
// interrupt of a gate. A call the step's journal holds — made before the
// step paused — is not made again: its reply and record are returned.
func (r *Run) CallLLM(ctx context.Context, req *LLMRequest) (*ChatResponse, *LLMCall, error) {
	c := r.modelCall(req)
	if m := c.entry.modelReply(); m != nil {
		return m.Reply, m.Rec, nil
	}
	if be := r.meter.check("llm"); be != nil {
		return nil, nil, Permanent(be)
	}
	rec := &LLMCall{Node: r.in.Node, Model: req.Model, Phase: req.Phase, Call: int64(r.Usage().LLMCalls + 1),
		Method: req.Method, Attempt: int64(req.Attempt)}
	if err := r.approveLLM(c, rec, req.Skills); err != nil {
		return nil, nil, err
	}
	kind := "llm"
	if req.Attempt > 1 {
		kind = "retry"
	}
	n, err := r.meter.charge(kind)
	if err != nil {
		return nil, nil, err
	}
	rec.Call = int64(n + 1)
	req.Chat.Node, req.Chat.Call = r.in.Node, n
	if r.engine.Sink != nil {
		r.emit(EventLLMCall, r.in.Node, map[string]any{"model": req.Model, "phase": req.Phase, "call": rec.Call})
	}
	start := r.clock.Now()
	resp, err := r.chat(ctx, req.Provider, req.Chat)
	rec.LatencyMS = r.clock.Now().Sub(start).Milliseconds()
	if err != nil {
		if ctx.Err() != nil && !TimedOut(ctx) { // the run was stopped, the call never answered: not counted, so the resumed run makes it again as call n
			r.meter.refund(kind)
		}
		r.llmResult(rec, err)
		return nil, nil, err
	}
	rec.InputTokens, rec.OutputTokens, rec.CachedInputTokens = resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.CachedInputTokens
	rec.CostUSD = req.Price(resp.Usage)
	r.llmResult(rec, nil)
	rec.Content = resp.Message.Content
	for _, tc := range resp.Message.ToolCalls {
		rec.ToolCalls = append(rec.ToolCalls, tc.Name)
	}
	_, err = r.fireLLM(AfterLLMCall, req.Skills, func() map[string]any { return r.ruleVars("llm", rec.vars()) })
	r.Spend(resp.Usage, rec.CostUSD) // spent, whatever the rules say
	if err != nil {
		return nil, nil, err
	}
	if r.gated {
		e := callEntry{ID: r.modelID(c, req.Model), Tool: c.info.Name}
		if c.entry != nil {
			e = *c.entry
		}
		e.Model = &modelCall{Rec: rec, Reply: resp}
		r.journal(&e)
	}
	return resp, rec, nil
}

// modelCall is a model call on its way through the call path. Where a
// gate can pause the step, its id names the node, the step and its place
// among the node's model calls, so a node that runs again finds the call
// in the journal (made only when the journal holds calls, or the call
// must be journaled).
func (r *Run) modelCall(req *LLMRequest) *toolCall {
	c := &toolCall{}
	if !r.gated {
		return c
	}
	r.mu.Lock()
	r.models++
	c.seq = r.models
	lookup := len(r.calls) > 0
	r.mu.Unlock()
	if lookup {
		c.entry = r.journaled(r.modelID(c, req.Model))
	}
	return c
}

// modelID names a model call of model, as the journal does: its id is
// "llm.<node>.<step>", "#<n>" added for the node's n-th model call from
// the second on; its name "llm:<model>".
func (r *Run) modelID(c *toolCall, model string) string {
	if c.info.ID == "" {
		c.info.ID, c.info.Name = fmt.Sprintf("llm.%s.%d", r.in.Node, r.step), "llm:"+model
		if c.seq > 1 {
			c.info.ID += fmt.Sprintf("#%d", c.seq)
		}
	}
	return c.info.ID
}

// unique makes a call id unique among those the node's attempt asked
// for: the n-th ask of one id gets "<id>#n" (n ≥ 2), in the order the
// node asks — a node that calls one tool twice makes two calls, and a
// node that runs again finds each in the journal.
func (r *Run) unique(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.asked == nil {
		r.asked = map[string]int{}
	}
	r.asked[id]++
	if n := r.asked[id]; n > 1 {
		return fmt.Sprintf("%s#%d", id, n)
	}
	return id
}

// modelReply is the journaled outcome of a model call that was made.
func (e *callEntry) modelReply() *modelCall {
	if e == nil || e.Model == nil || e.Model.Reply == nil {
		return nil
	}
	return e.Model
}

// approveLLM fires the before_llm_call rules of a model call the journal
// has not seen and settles its gate: approved, the call goes on; rejected,
// the node fails; unanswered, the thread pauses.
func (r *Run) approveLLM(c *toolCall, rec *LLMCall, skills []string) error {
	vars := func() map[string]any {
		if c.vars == nil {
			c.vars = r.ruleVars("llm", rec.vars())
		}
		return c.vars
	}
	if c.entry == nil {
		gate, err := r.fireLLM(BeforeLLMCall, skills, vars)
		if gate == nil || err != nil {
			return err
		}
		c.info.Args = map[string]any{"model": rec.Model, "phase": rec.Phase}
		r.modelID(c, rec.Model)
		if err := r.hold(c, gate, &callEntry{Model: &modelCall{}}, vars()); err != nil {
			return err
		}
	}
	if c.entry.Decision == nil {
		vars() // what the reviewer reads is rendered with them
		if err := r.settle([]*toolCall{c}); err != nil {
			return err
		}
	}
	if d := c.entry.Decision; d.Type != DecisionApprove {
		return Permanent(&DeniedError{Key: c.entry.Rule, Reason: "the reviewer did not approve the model call" + colon(d.Message)})
	}
	return nil
}

// llmResult emits the llm_result event of a model call: its record
// (usage, cost, latency) and its error.
func (r *Run) llmResult(rec *LLMCall, err error) {
	if r.engine.Sink != nil {
		d := rec.Metric()
		d["error"] = errString(err)
		r.emit(EventLLMResult, r.in.Node, d)
	}
}

// chat asks the provider, with the graph's secrets kept out of the
// streamed text, the reply and the error.
func (r *Run) chat(ctx context.Context, p Provider, req *ChatRequest) (*ChatResponse, error) {
	red := r.Graph.Redact
	if red != nil && req.OnToken != nil {
		onToken := req.OnToken
		write, flush := red.Stream(onToken)
		req.OnToken = write
		defer func() { flush(); req.OnToken = onToken }()
	}
	resp, err := p.Chat(ctx, req)
	return red.reply(resp), red.Error(err)
}

// fireLLM fires a model call's rules of trigger: an abort, or a denial
// (which fails the node for good), is the error that ends the call; the
// gate that holds it is returned.
func (r *Run) fireLLM(trigger string, skills []string, vars func() map[string]any) (*Rule, error) {
	f, err := r.fire(trigger, nil, skills, vars)
	switch {
	case err != nil:
		return nil, err
	case f.abort != nil:
		return nil, f.abort
	case f.deny != nil:
		return nil, Permanent(f.deny)
	}
	return f.gate, nil
}

func colon(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func errString(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}
