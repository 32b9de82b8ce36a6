package server_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// scrape reads GET /metrics, which needs no key.
func (e *env) scrape() string {
	e.t.Helper()
	resp, err := http.Get(e.url + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		e.t.Fatalf("GET /metrics = %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// sample is the value of series (name{labels in order}) in a scrape; -1
// when it is not there.
func sample(text, series string) float64 {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// TestMetrics scrapes /metrics after real runs through the API: a fraud
// investigation (seed 004's series), and rule_37 paused at its approval
// gate, then approved.
func TestMetrics(t *testing.T) {
	e := newEnv(t, withShipped(t, map[string]string{"fraud_investigator": fraudScript, "rule_37": rule37Script}))
	e.call("POST", "/threads", map[string]any{"thread_id": "inv-1"}, 200)
	out := e.call("POST", "/threads/inv-1/runs/wait", map[string]any{"assistant_id": "fraud_investigator",
		"input": map[string]any{"transaction_id": "txn_1001"}}, 200)
	if out["status"] != "COMPLETED" || out["severity"] != "CRITICAL" {
		t.Fatalf("investigation ended %v %v: %v", out["status"], out["severity"], out)
	}
	e.call("POST", "/threads", map[string]any{"thread_id": "conv-1"}, 200)
	e.call("POST", "/threads/conv-1/runs/wait", map[string]any{"assistant_id": "rule_37",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the Mitchell Ranch 3H well."}}}}, 200)

	m := e.scrape()
	want := map[string]float64{
		`runner_runs_total{assistant="fraud_investigator",pipeline="fraud_investigation",status="success"}`:                 1,
		`runner_runs_total{assistant="rule_37",pipeline="orchestration",status="interrupted"}`:                              1,
		`runner_node_duration_seconds_count{node="planner",pipeline="fraud_investigation"}`:                                 7,
		`runner_node_duration_seconds_count{node="tool_executor",pipeline="fraud_investigation"}`:                           6,
		`runner_run_duration_seconds_count{assistant="fraud_investigator",pipeline="fraud_investigation",status="success"}`: 1,
		`runner_tool_calls_total{status="SUCCESS",tool="context_tool"}`:                                                     1,
		`runner_tool_calls_total{status="SUCCESS",tool="rule_draft_tool"}`:                                                  1,
		`runner_model_calls_total{model="llama3.2",status="ok"}`:                                                            1,
		`runner_model_calls_total{model="llama3.2",status="error"}`:                                                         6,
		`runner_model_tokens_total{direction="input",model="llama3.2"}`:                                                     100,
		`runner_model_tokens_total{direction="output",model="llama3.2"}`:                                                    20,
		`runner_model_tokens_total{direction="input",model="gpt-4o"}`:                                                       1200,
		`runner_pending_approvals{pipeline="orchestration"}`:                                                                1,
		`ops_agent_planner_decisions_total{selected_tool="context_tool",used_fallback="false"}`:                             1,
		`ops_agent_planner_decisions_total{selected_tool="pattern_tool",used_fallback="true"}`:                              1,
		`ops_agent_planner_decisions_total{selected_tool="COMPLETE",used_fallback="true"}`:                                  1,
		`ops_agent_tool_execution_latency_seconds_count{status="SUCCESS",tool_name="context_tool"}`:                         1,
		`ops_agent_investigation_steps_bucket{le="7"}`:                                                                      1,
		`ops_agent_investigation_steps_bucket{le="6"}`:                                                                      0,
		`ops_agent_investigation_steps_sum`:                                                                                 7,
		`ops_agent_investigation_completed_total{severity="CRITICAL",status="COMPLETED"}`:                                   1,
	}
	for series, v := range want {
		if got := sample(m, series); got != v {
			t.Errorf("%s = %v, want %v", series, got, v)
		}
	}
	if cost := sample(m, `runner_model_cost_usd_total{model="gpt-4o"}`); cost <= 0 {
		t.Errorf("gpt-4o cost %v, want > 0", cost)
	}
	for _, series := range []string{"process_resident_memory_bytes", "go_goroutines", "go_memstats_heap_inuse_bytes"} {
		if v := sample(m, series); v <= 0 {
			t.Errorf("%s = %v, want the process's own figure", series, v)
		}
	}

	e.call("POST", "/threads/conv-1/runs/wait", map[string]any{"assistant_id": "rule_37",
		"command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}}, 200)
	m = e.scrape()
	for series, v := range map[string]float64{
		`runner_runs_total{assistant="rule_37",pipeline="orchestration",status="success"}`: 1,
		`runner_tool_calls_total{status="SUCCESS",tool="create_entity"}`:                   1,
		`runner_pending_approvals{pipeline="orchestration"}`:                               -1,
		`runner_model_tokens_total{direction="output",model="gpt-4o"}`:                     34 + 12,
	} {
		if got := sample(m, series); got != v {
			t.Errorf("after the approval: %s = %v, want %v", series, got, v)
		}
	}
}
