package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// metrics are the server's Prometheus series, in a registry of their own.
type metrics struct {
	reg          *prometheus.Registry
	runs         *prometheus.CounterVec
	runDuration  *prometheus.HistogramVec
	nodeDuration *prometheus.HistogramVec
	toolCalls    *prometheus.CounterVec
	modelCalls   *prometheus.CounterVec
	tokens       *prometheus.CounterVec
	cost         *prometheus.CounterVec
	// seed 004's investigation metrics
	decisions     *prometheus.CounterVec
	toolLatency   *prometheus.HistogramVec
	investSteps   prometheus.Histogram
	investigation *prometheus.CounterVec
	// refusals past the server's limits, by reason (bounds.go)
	refusals *prometheus.CounterVec
}

// newMetrics registers the series; pending approvals are counted from
// the store on each scrape.
func newMetrics(st store.Store) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		f(c)
		return c
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		f(h)
		return h
	}
	m.runs = counter("runner_runs_total", "Runs ended, by assistant, pipeline and status (success, error, timeout, interrupted).",
		"assistant", "pipeline", "status")
	m.runDuration = histogram("runner_run_duration_seconds", "Wall time of a run, from its start to its end.",
		prometheus.ExponentialBuckets(0.01, 4, 10), "assistant", "pipeline", "status")
	m.nodeDuration = histogram("runner_node_duration_seconds", "Wall time of a node's step.",
		prometheus.ExponentialBuckets(0.001, 4, 10), "pipeline", "node")
	m.toolCalls = counter("runner_tool_calls_total", "Tool calls made, by tool and status (SUCCESS, FAILED, TIMED_OUT).", "tool", "status")
	m.modelCalls = counter("runner_model_calls_total", "Model calls made, by model and status (ok, error).", "model", "status")
	m.tokens = counter("runner_model_tokens_total", "Tokens of model calls, by model and direction (input, output).", "model", "direction")
	m.cost = counter("runner_model_cost_usd_total", "Cost of model calls in US dollars, by model.", "model")
	m.decisions = counter("ops_agent_planner_decisions_total", "Planner decisions, by selected tool and whether the fallback sequence decided.",
		"selected_tool", "used_fallback")
	m.toolLatency = histogram("ops_agent_tool_execution_latency_seconds", "Latency of tool executions, by tool and status.",
		prometheus.DefBuckets, "tool_name", "status")
	m.investSteps = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ops_agent_investigation_steps",
		Help: "Planner steps of an ended investigation.", Buckets: prometheus.LinearBuckets(1, 1, 20)})
	f(m.investSteps)
	m.investigation = counter("ops_agent_investigation_completed_total", "Investigations ended, by their status and severity.", "status", "severity")
	m.refusals = newRefusals(m.reg)
	f(collectors.NewGoCollector())                                       // go_*: heap, GC, goroutines
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})) // process_*: resident memory, CPU, open files
	f(&pendingApprovals{st: st, desc: prometheus.NewDesc("runner_pending_approvals",
		"Threads paused at an approval gate (a require_hitl rule) waiting for a reviewer, by pipeline.", []string{"pipeline"}, nil)})
	return m
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// countRun counts a run that ended.
func (m *metrics) countRun(l *liveRun, status string) {
	m.runs.WithLabelValues(l.rec.Assistant, l.g.Name, status).Inc()
}

// runMetrics derives one run's series from its events.
type runMetrics struct {
	m         *metrics
	l         *liveRun
	start     time.Time
	pipelines map[string]string // thread → the pipeline it runs (child threads run subgraphs)
}

func (m *metrics) run(l *liveRun, start time.Time) *runMetrics {
	return &runMetrics{m: m, l: l, start: start, pipelines: map[string]string{l.rec.Thread: l.g.Name}}
}

func (r *runMetrics) event(ev runner.Event) {
	d, _ := ev.Data.(map[string]any)
	switch ev.Type {
	case runner.EventRunStart:
		if p, ok := d["pipeline"].(string); ok {
			r.pipelines[ev.Thread] = p
		}
	case runner.EventNodeEnd:
		ms, _ := d["duration_ms"].(int64)
		r.m.nodeDuration.WithLabelValues(r.pipelines[ev.Thread], ev.Node).Observe(seconds(ms))
		upd, _ := d["update"].(runner.Update)
		r.m.countDecisions(upd)
	case runner.EventToolResult:
		tool, _ := d["tool"].(string)
		status, _ := d["status"].(string)
		ms, _ := d["duration_ms"].(int64)
		r.m.toolCalls.WithLabelValues(tool, status).Inc()
		r.m.toolLatency.WithLabelValues(tool, status).Observe(seconds(ms))
	case runner.EventLLMResult:
		r.m.countModelCall(d)
	case runner.EventDone:
		if res, ok := ev.Data.(*runner.Result); ok && ev.Thread == r.l.rec.Thread {
			r.m.countInvestigation(res)
		}
	}
}

func (r *runMetrics) end(e runEnd) {
	r.m.countRun(r.l, e.status)
	r.m.runDuration.WithLabelValues(r.l.rec.Assistant, r.l.g.Name, e.status).Observe(e.at.Sub(r.start).Seconds())
}

func seconds(ms int64) float64 { return float64(ms) / 1000 }

// countModelCall counts an llm_result: the call, its tokens and cost.
func (m *metrics) countModelCall(d map[string]any) {
	model, _ := d["model"].(string)
	status := "ok"
	if d["error"] != nil {
		status = "error"
	}
	m.modelCalls.WithLabelValues(model, status).Inc()
	in, _ := d["input_tokens"].(int64)
	out, _ := d["output_tokens"].(int64)
	cost, _ := d["cost_usd"].(float64)
	m.tokens.WithLabelValues(model, "input").Add(float64(in))
	m.tokens.WithLabelValues(model, "output").Add(float64(out))
	m.cost.WithLabelValues(model).Add(cost)
}

// countDecisions counts the planner decisions a step wrote: any record
// of the update with a selected_tool (a planner node's PlannerDecision).
func (m *metrics) countDecisions(upd runner.Update) {
	for _, v := range upd {
		for _, d := range records(v) {
			tool, ok := d["selected_tool"].(string)
			if !ok {
				continue
			}
			fallback := "false"
			if d["decided_by"] == "fallback" {
				fallback = "true"
			}
			m.decisions.WithLabelValues(tool, fallback).Inc()
		}
	}
}

// records are the objects of a value: itself, or a list's.
func records(v any) []map[string]any {
	switch x := v.(type) {
	case map[string]any:
		return []map[string]any{x}
	case []any:
		var out []map[string]any
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

// countInvestigation counts an ended run whose state keeps planner
// decisions (an investigation): its steps, and its end by the state's
// status and severity.
func (m *metrics) countInvestigation(res *runner.Result) {
	decisions, ok := res.State["planner_decisions"].([]any)
	if !ok {
		return
	}
	steps, ok := res.State["step_count"].(int64)
	if !ok {
		steps = int64(len(decisions))
	}
	m.investSteps.Observe(float64(steps))
	status, _ := res.State["status"].(string)
	if status == "" {
		status = res.Status
	}
	severity, _ := res.State["severity"].(string)
	m.investigation.WithLabelValues(status, severity).Inc()
}

// pendingApprovals counts, on each scrape, the threads whose newest
// checkpoint holds an approval gate's interrupt.
type pendingApprovals struct {
	st   store.Store
	desc *prometheus.Desc
}

func (p *pendingApprovals) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

func (p *pendingApprovals) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	threads, err := p.st.Threads(ctx, 0)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(p.desc, err)
		return
	}
	counts := map[string]int{}
	for _, t := range threads {
		if t.Status == runner.StatusInterrupted && access.Root(t.ID) == t.ID && gated(ctx, p.st, t.ID) {
			counts[t.Pipeline]++
		}
	}
	for pipeline, n := range counts {
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, float64(n), pipeline)
	}
}

// gated reports whether thread's pending interrupt is an approval gate's.
func gated(ctx context.Context, st store.Store, thread string) bool {
	cps, err := st.Load(ctx, thread, 0)
	if err != nil || len(cps) == 0 {
		return false
	}
	var intr struct {
		Rule string `json:"rule"`
	}
	return json.Unmarshal(cps[len(cps)-1].Interrupt, &intr) == nil && intr.Rule != ""
}
