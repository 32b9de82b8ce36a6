package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// Budget bounds what a run may spend; zero fields are unlimited. Unlike a
// pipeline's hard limits, exceeding a budget follows OnExceed.
type Budget struct {
	MaxTokens     int64         `json:"max_tokens,omitempty" yaml:"max_tokens"`
	MaxCostUSD    float64       `json:"max_cost_usd,omitempty" yaml:"max_cost_usd"`
	MaxIterations int           `json:"max_iterations,omitempty" yaml:"max_iterations"`
	MaxSteps      int           `json:"max_steps,omitempty" yaml:"max_steps"`
	MaxLLMCalls   int           `json:"max_llm_calls,omitempty" yaml:"max_llm_calls"`
	MaxToolCalls  int           `json:"max_tool_calls,omitempty" yaml:"max_tool_calls"`
	Timeout       time.Duration `json:"timeout,omitempty" yaml:"timeout"`
	// OnExceed is fail (the default), interrupt (ask a human to extend
	// the budget) or the name of a node to route to.
	OnExceed string `json:"on_exceed,omitempty" yaml:"on_exceed"`
}

// On-exceed policies besides a node name.
const (
	OnExceedFail      = "fail"
	OnExceedInterrupt = "interrupt"
)

// RunUsage is what a run has spent so far. It is checkpointed, so budgets
// hold across resumes and crashes.
type RunUsage struct {
	Usage
	CostUSD    float64 `json:"cost_usd,omitempty"`
	LLMCalls   int     `json:"llm_calls,omitempty"`
	ToolCalls  int     `json:"tool_calls,omitempty"`
	Iterations int     `json:"iterations,omitempty"`
	// StructuredRetries counts the LLM calls that asked again for a
	// structured reply after one that did not fit its schema.
	StructuredRetries int `json:"structured_retries,omitempty"`
}

// Tokens is every token counted against max_tokens.
func (u RunUsage) Tokens() int64 { return u.InputTokens + u.OutputTokens + u.CachedInputTokens }

// BudgetError is a budget a run would exceed: which one, its limit and the
// amount used. Nodes return it as they get it from the Run; the step loop
// applies the budget's on_exceed policy.
type BudgetError struct {
	Budget string // max_tokens, max_cost_usd, max_iterations, ...
	Limit  float64
	Used   float64
}

func (e *BudgetError) Error() string {
	switch e.Budget {
	case "max_cost_usd":
		return fmt.Sprintf("budget max_cost_usd exceeded: used $%.4f of $%.4f", e.Used, e.Limit)
	case "timeout":
		return fmt.Sprintf("budget timeout exceeded: ran %s of %s", time.Duration(e.Used), time.Duration(e.Limit))
	}
	return fmt.Sprintf("budget %s exceeded: used %v of %v", e.Budget, e.Used, e.Limit)
}

// meter counts a run's usage against its budget. A run and its child
// threads (subgraphs, parallel branches) share one meter.
type meter struct {
	mu     sync.Mutex
	budget Budget
	usage  RunUsage
	// version counts changes, so the step loop refreshes what expressions
	// see, and checkpoints record the usage, only when it changed; saved
	// is the version last checkpointed.
	version atomic.Uint64
	saved   uint64
	// extended: a human raised the budget, which is then checkpointed too.
	extended bool
}

// limit is one budget compared with its usage.
type limit struct {
	name        string
	limit, used float64
}

// over returns the first budget the usage has reached, checking what a
// call of the given kind ("llm", "tool", "iteration") is bounded by.
func (m *meter) over(kind string) *BudgetError {
	b, u := m.budget, m.usage
	var buf [3]limit
	checks := append(buf[:0], limit{"max_tokens", float64(b.MaxTokens), float64(u.Tokens())}, limit{"max_cost_usd", b.MaxCostUSD, u.CostUSD})
	switch kind {
	case "llm":
		checks = append(checks, limit{"max_llm_calls", float64(b.MaxLLMCalls), float64(u.LLMCalls)})
	case "tool":
		checks = append(checks, limit{"max_tool_calls", float64(b.MaxToolCalls), float64(u.ToolCalls)})
	case "iteration":
		checks = append(buf[:0], limit{"max_iterations", float64(b.MaxIterations), float64(u.Iterations)})
	}
	for _, c := range checks {
		if c.limit > 0 && c.used >= c.limit {
			return &BudgetError{Budget: c.name, Limit: c.limit, Used: c.used}
		}
	}
	return nil
}

// charge checks the budget for one call of kind and, if it allows it,
// counts the call; it returns the call's number (from 0).
func (m *meter) charge(kind string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.over(kind); e != nil {
		return 0, Permanent(e)
	}
	m.version.Add(1)
	switch kind {
	case "llm":
		m.usage.LLMCalls++
		return m.usage.LLMCalls - 1, nil
	case "retry":
		m.usage.LLMCalls++
		m.usage.StructuredRetries++
		return m.usage.LLMCalls - 1, nil
	case "tool":
		m.usage.ToolCalls++
		return m.usage.ToolCalls - 1, nil
	}
	m.usage.Iterations++
	return m.usage.Iterations - 1, nil
}

// refund takes back the charge of a call of kind ("llm", "retry") that
// was cut short before any answer.
func (m *meter) refund(kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.version.Add(1)
	m.usage.LLMCalls--
	if kind == "retry" {
		m.usage.StructuredRetries--
	}
}

// check returns the budget a call of kind would exceed, without counting
// the call.
func (m *meter) check(kind string) *BudgetError {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.over(kind)
}

// chargeTool checks the budget for a tool call and counts it.
func (m *meter) chargeTool() error {
	_, err := m.charge("tool")
	return err
}

// Iterate checks max_iterations before another round of a tool loop and
// counts the round — once: a round resumed in the middle (its calls
// journaled before a pause or a crash) was counted when it began.
func (r *Run) Iterate() error {
	if r.midStep {
		return nil
	}
	_, err := r.meter.charge("iteration")
	return err
}

// Spend adds an LLM call's reported tokens and their cost.
func (r *Run) Spend(u Usage, costUSD float64) {
	m := r.meter
	m.mu.Lock()
	defer m.mu.Unlock()
	m.usage.InputTokens += u.InputTokens
	m.usage.OutputTokens += u.OutputTokens
	m.usage.CachedInputTokens += u.CachedInputTokens
	m.usage.CostUSD += costUSD
	m.version.Add(1)
}

// Usage returns what the run has spent so far.
func (r *Run) Usage() RunUsage {
	r.meter.mu.Lock()
	defer r.meter.mu.Unlock()
	return r.meter.usage
}

// exceeded ends a run that exceeded a budget under the fail or interrupt
// policy (a timeout fails it as timed out); the route policy never gets
// here (see errorRoute).
func (r *Run) exceeded(ctx context.Context, state State, cur string, be *BudgetError) (*Result, error) {
	if r.meter.budget.OnExceed == OnExceedInterrupt {
		return r.pause(ctx, state, cur, &Interrupt{Node: cur, Kind: KindBudget,
			Message: be.Error() + `; resume with higher limits, e.g. {"` + be.Budget + `": N}, or {"approved": false} to stop`,
			Payload: map[string]any{"budget": be.Budget, "limit": be.Limit, "used": be.Used}})
	}
	status := StatusFailed
	if be.Budget == "timeout" {
		status = StatusTimedOut
	}
	return r.end(ctx, state, cur, status, budgetFailure(r.Graph.Name, cur, be))
}

func budgetFailure(pipeline, cur string, be *BudgetError) *RunError {
	return &RunError{Code: "budget_exceeded", Node: cur, Kind: KindBudgetErr, Message: fmt.Sprintf(
		"%s (pipeline %s, at node %s); raise budget.%s if the run needs more", be, pipeline, cur, be.Budget)}
}

// KindBudget is the kind of the interrupt raised by on_exceed: interrupt.
const KindBudget = "budget"

// extension is the resume value of a budget interrupt: new limits, or a
// refusal.
type extension struct {
	MaxTokens     int64   `json:"max_tokens"`
	MaxCostUSD    float64 `json:"max_cost_usd"`
	MaxIterations int     `json:"max_iterations"`
	MaxSteps      int     `json:"max_steps"`
	MaxLLMCalls   int     `json:"max_llm_calls"`
	MaxToolCalls  int     `json:"max_tool_calls"`
	Approved      *bool   `json:"approved"`
}

// extend applies a budget interrupt's resume value. It reports false when
// the human refused to extend.
func (m *meter) extend(value any) (bool, error) {
	raw, err := json.Marshal(value)
	if err != nil {
		return false, InvalidResume(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var x extension
	if err := dec.Decode(&x); err != nil || value == nil {
		return false, InvalidResume(fmt.Errorf(`a budget interrupt resumes with new limits, e.g. {"max_tokens": 200000}, or {"approved": false}: %v`, err))
	}
	if x.Approved != nil && !*x.Approved {
		return false, nil
	}
	m.budget = m.budget.Over(Budget{MaxTokens: x.MaxTokens, MaxCostUSD: x.MaxCostUSD, MaxIterations: x.MaxIterations,
		MaxSteps: x.MaxSteps, MaxLLMCalls: x.MaxLLMCalls, MaxToolCalls: x.MaxToolCalls})
	m.extended = true
	m.version.Add(1)
	return true, nil
}

// Over returns b with every limit o sets, and its policy if set, replacing
// b's.
func (b Budget) Over(o Budget) Budget {
	setIf(&b.MaxTokens, o.MaxTokens)
	setIf(&b.MaxCostUSD, o.MaxCostUSD)
	setIf(&b.MaxIterations, o.MaxIterations)
	setIf(&b.MaxSteps, o.MaxSteps)
	setIf(&b.MaxLLMCalls, o.MaxLLMCalls)
	setIf(&b.MaxToolCalls, o.MaxToolCalls)
	setIf(&b.Timeout, o.Timeout)
	if o.OnExceed != "" {
		b.OnExceed = o.OnExceed
	}
	return b
}

func setIf[T int | int64 | float64 | time.Duration](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

// isPolicyNode reports whether an on_exceed policy names a node.
func isPolicyNode(p string) bool { return p != "" && p != OnExceedFail && p != OnExceedInterrupt }

// stepBudget returns the exceeded max_steps budget before another step.
func (r *Run) stepBudget() *BudgetError {
	if b := r.meter.budget.MaxSteps; b > 0 && r.step-r.turn >= b && r.ownsMeter {
		return &BudgetError{Budget: "max_steps", Limit: float64(b), Used: float64(r.step - r.turn)}
	}
	return nil
}

// syncBudget refreshes what expressions see as budget: the step count,
// and the usage when it changed since the last refresh.
func (r *Run) syncBudget(steps int) {
	b := r.budget
	b["steps"] = steps
	if v := r.meter.version.Load(); v != r.synced {
		r.synced = v
		u := r.Usage()
		b["tokens_used"], b["cost_usd"] = u.Tokens(), u.CostUSD
		b["iterations"], b["llm_calls"], b["tool_calls"] = u.Iterations, u.LLMCalls, u.ToolCalls
		b["structured_retries"] = u.StructuredRetries
	}
}

// restore continues counting from a checkpoint's usage and budget.
func (m *meter) restore(md *meta) {
	if md.Usage != nil {
		m.usage = *md.Usage
	}
	if md.Budget != nil {
		m.budget, m.extended = *md.Budget, true
	}
}

// budgetInterrupt returns the exceeded budget a checkpoint's pending
// interrupt is about, or nil when it is not a budget interrupt.
func budgetInterrupt(cp *store.Checkpoint) *BudgetError {
	intr := pendingInterrupt(cp)
	if intr == nil || intr.Kind != KindBudget {
		return nil
	}
	limit, _, _ := number(intr.Payload["limit"])
	used, _, _ := number(intr.Payload["used"])
	return &BudgetError{Budget: fmt.Sprint(intr.Payload["budget"]), Limit: limit, Used: used}
}

// resumeBudget applies the resume value of a budget interrupt: new limits
// let the run go on (nil result: the node runs afresh); a refusal fails
// the thread.
func (r *Run) resumeBudget(ctx context.Context, state State, node string, be *BudgetError, value any) (*Result, error) {
	ok, err := r.meter.extend(value)
	if err != nil || ok {
		return nil, err
	}
	return r.fail(ctx, state, node, budgetFailure(r.Graph.Name, node, be))
}

// record returns what a checkpoint keeps of the meter: nothing when it
// has not changed since the last checkpoint, unless snap asks for it.
func (m *meter) record(snap bool) (*RunUsage, *Budget) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.version.Load()
	if !snap && v == m.saved {
		return nil, nil
	}
	m.saved = v
	u := m.usage
	if !m.extended {
		return &u, nil
	}
	b := m.budget
	return &u, &b
}
