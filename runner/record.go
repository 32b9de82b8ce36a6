package runner

import "time"

// The records the call path fills. Rules see them as variables (tool,
// result, llm), tool nodes keep ToolExecution in the state and llm nodes
// keep LLMCall in turn_metrics: their JSON names are the only names, so
// what validate type-checks (dsl derives the variables' types from these
// structs) is what the runtime writes.

// ToolInfo is a tool call about to be made: the rules' `tool`.
type ToolInfo struct {
	ID            string         `json:"id"`
	Name          string         `json:"name"`
	CapabilityKey string         `json:"capability_key"`
	Mutating      bool           `json:"mutating"`
	Tags          []string       `json:"tags"`
	Args          map[string]any `json:"args"`
	// Skill is the loaded skill that offers the tool ("" for core and agent
	// tools).
	Skill string `json:"skill"`
}

// Vars is the call as rules see it: their tool.
func (t *ToolInfo) Vars() map[string]any {
	return map[string]any{"id": t.ID, "name": t.Name, "capability_key": t.CapabilityKey, "mutating": t.Mutating,
		"tags": anyList(t.Tags), "args": t.Args, "skill": t.Skill}
}

// Tool execution statuses.
const (
	ToolSuccess  = "SUCCESS"
	ToolFailed   = "FAILED"
	ToolTimedOut = "TIMED_OUT"
	ToolDenied   = "DENIED"   // a rule or a reviewer kept the call from running
	ToolAnswered = "ANSWERED" // a reviewer's response stands for the result
)

// ToolExecution is the record of one tool call: the rules' `result`, and
// what tool nodes write to their record field.
type ToolExecution struct {
	ToolName string         `json:"tool_name"`
	CallID   string         `json:"call_id"`
	Input    map[string]any `json:"input"`
	Output   any            `json:"output"`
	OK       bool           `json:"ok"`
	// Status is SUCCESS, FAILED, TIMED_OUT, DENIED or ANSWERED.
	Status          string `json:"status"`
	ErrorMessage    string `json:"error_message"`
	ExecutionTimeMS int64  `json:"execution_time_ms"`
	Timestamp       string `json:"timestamp"`
}

// Value is the record as the state keeps it (error_message is null when
// the call succeeded).
func (e *ToolExecution) Value() map[string]any {
	v := e.vars()
	if e.ErrorMessage == "" {
		v["error_message"] = nil
	}
	return v
}

func (e *ToolExecution) vars() map[string]any {
	return map[string]any{"tool_name": e.ToolName, "call_id": e.CallID, "input": e.Input, "output": e.Output, "ok": e.OK,
		"status": e.Status, "error_message": e.ErrorMessage, "execution_time_ms": e.ExecutionTimeMS, "timestamp": e.Timestamp}
}

// LLMCall is the record of one model call: the rules' `llm` (before the
// call only node, model, phase and call are set) and, without content and
// tool_calls, one entry of turn_metrics.
type LLMCall struct {
	Node              string  `json:"node"`
	Model             string  `json:"model"`
	Phase             string  `json:"phase"`
	Call              int64   `json:"call"`
	InputTokens       int64   `json:"input_tokens"`
	OutputTokens      int64   `json:"output_tokens"`
	CachedInputTokens int64   `json:"cached_input_tokens"`
	CostUSD           float64 `json:"cost_usd"`
	LatencyMS         int64   `json:"latency_ms"`
	// Method and Attempt say which structured-output method and attempt
	// the call was ("" and 0 for a call that asked for no structure).
	Method    string   `json:"method"`
	Attempt   int64    `json:"attempt"`
	Content   string   `json:"content"`
	ToolCalls []string `json:"tool_calls"`
}

func (c *LLMCall) vars() map[string]any {
	v := c.Metric()
	v["content"], v["tool_calls"] = c.Content, anyList(c.ToolCalls)
	return v
}

// Metric is the call's entry in turn_metrics.
func (c *LLMCall) Metric() map[string]any {
	return map[string]any{"node": c.Node, "model": c.Model, "phase": c.Phase, "call": c.Call,
		"input_tokens": c.InputTokens, "output_tokens": c.OutputTokens, "cached_input_tokens": c.CachedInputTokens,
		"cost_usd": c.CostUSD, "latency_ms": c.LatencyMS, "method": c.Method, "attempt": c.Attempt}
}

// AgentInfo is the agent a graph runs for: the rules' `agent`.
type AgentInfo struct {
	Name   string   `json:"name"`
	Model  string   `json:"model"`
	Skills []string `json:"skills"`
}

func (a *AgentInfo) vars() map[string]any {
	return map[string]any{"name": a.Name, "model": a.Model, "skills": anyList(a.Skills)}
}

// NodeInfo is the node a step ran: the after_node rules' `node`.
type NodeInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func anyList(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
