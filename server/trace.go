package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
)

// tracing turns runs into OpenTelemetry spans: a run's span holds its
// nodes' spans, which hold their tool calls', model calls' and approval
// gates' spans.
type tracing struct{ tr trace.Tracer }

// newTracing returns the spans of tp's tracer; nil, which builds no
// span, without a provider.
func newTracing(tp trace.TracerProvider) *tracing {
	if tp == nil {
		return nil
	}
	return &tracing{tr: tp.Tracer("github.com/runner-dev/runner/server")}
}

// spanCtx is an open span with the context its children start from.
type spanCtx struct {
	ctx  context.Context
	span trace.Span
}

// runSpans are one run's spans, built from its events as they come.
type runSpans struct {
	tr        trace.Tracer
	run       spanCtx
	pipelines map[string]string     // thread → its pipeline
	nodes     map[string]spanCtx    // thread → the node it runs
	models    map[string]trace.Span // thread → its model call under way
	tools     map[string]trace.Span // thread and call id → a tool call under way
	approvals map[string]trace.Span // thread → its pending approval
	attrs     []attribute.KeyValue  // every span's: run, thread, investigation id
}

func (t *tracing) run(l *liveRun, start time.Time) *runSpans {
	r := &runSpans{tr: t.tr, pipelines: map[string]string{l.rec.Thread: l.g.Name}, nodes: map[string]spanCtx{},
		models: map[string]trace.Span{}, tools: map[string]trace.Span{}, approvals: map[string]trace.Span{},
		attrs: []attribute.KeyValue{attribute.String("runner.run_id", l.rec.ID), attribute.String("investigation_id", access.ThreadID(l.rec.Thread))}}
	ctx, span := t.tr.Start(context.Background(), "invoke_agent "+l.rec.Assistant, trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(append(r.attrs,
			attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", l.rec.Assistant),
			attribute.String("runner.thread_id", access.ThreadID(l.rec.Thread)), attribute.String("runner.pipeline", l.g.Name),
			attribute.String("runner.tenant", l.rec.Tenant))...))
	r.run = spanCtx{ctx, span}
	return r
}

// start opens a span under parent at the event's time.
func (r *runSpans) start(parent context.Context, name string, ev runner.Event, attrs ...attribute.KeyValue) spanCtx {
	attrs = append(append(attrs, r.attrs...), attribute.String("runner.thread_id", access.ThreadID(ev.Thread)), attribute.Int("runner.step", ev.Step))
	ctx, span := r.tr.Start(parent, name, trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
	return spanCtx{ctx, span}
}

// parent is the context a span of thread starts under: the node the
// thread runs, else its parent thread's (a child thread is
// "<thread>/<node>@<step>"), else the run.
func (r *runSpans) parent(thread string) context.Context {
	if n, ok := r.nodes[thread]; ok {
		return n.ctx
	}
	if i := strings.LastIndex(thread, "/"); i > 0 {
		return r.parent(thread[:i])
	}
	return r.run.ctx
}

func (r *runSpans) event(ev runner.Event) {
	d, _ := ev.Data.(map[string]any)
	end := trace.WithTimestamp(ev.Time)
	switch ev.Type {
	case runner.EventRunStart:
		if p, ok := d["pipeline"].(string); ok {
			r.pipelines[ev.Thread] = p
		}
	case runner.EventNodeStart:
		r.nodes[ev.Thread] = r.start(r.parent(ev.Thread), "node "+ev.Node, ev,
			attribute.String("runner.node", ev.Node), attribute.String("runner.pipeline", r.pipelines[ev.Thread]))
	case runner.EventNodeEnd:
		r.nodeEnd(ev, d)
	case runner.EventError:
		r.nodeError(ev, d)
	case runner.EventLLMCall:
		model, _ := d["model"].(string)
		r.models[ev.Thread] = r.start(r.parent(ev.Thread), "chat "+model, ev, attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.request.model", model), attribute.String("runner.node", ev.Node), attribute.String("runner.phase", str(d["phase"]))).span
	case runner.EventLLMResult:
		r.modelEnd(ev, d)
	case runner.EventToolCall:
		tool, id := str(d["tool"]), str(d["id"])
		r.tools[ev.Thread+" "+id] = r.start(r.parent(ev.Thread), "execute_tool "+tool, ev, attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", tool), attribute.String("gen_ai.tool.call.id", id), attribute.String("runner.node", ev.Node)).span
	case runner.EventToolResult:
		r.toolEnd(ev, d)
	case runner.EventInterrupt:
		r.approval(ev)
	case runner.EventRule:
		if d["action"] == "decision" {
			s := r.start(r.parent(ev.Thread), "approval.decision "+ev.Node, ev, attribute.String("runner.node", ev.Node),
				attribute.String("runner.approval.rule", str(d["rule"])), attribute.StringSlice("runner.approval.decisions", decisionTypes(d["decisions"])))
			s.span.End(end)
		}
	}
}

// nodeEnd closes a node's span with its route, and the tool a planner
// selected.
func (r *runSpans) nodeEnd(ev runner.Event, d map[string]any) {
	n, ok := r.nodes[ev.Thread]
	if !ok {
		return
	}
	delete(r.nodes, ev.Thread)
	if next, ok := d["next"].(string); ok {
		n.span.SetAttributes(attribute.String("runner.next", next))
	}
	upd, _ := d["update"].(runner.Update)
	for _, v := range upd {
		for _, rec := range records(v) {
			if tool, ok := rec["selected_tool"].(string); ok {
				n.span.SetAttributes(attribute.String("selected_tool", tool))
			}
		}
	}
	n.span.End(trace.WithTimestamp(ev.Time))
}

// nodeError marks the running node's span failed: a retried attempt is
// an event on it; otherwise the node ended.
func (r *runSpans) nodeError(ev runner.Event, d map[string]any) {
	n, ok := r.nodes[ev.Thread]
	if !ok {
		return
	}
	msg := str(d["error"])
	if re, ok := ev.Data.(*runner.RunError); ok {
		msg = re.Message
	}
	if d["retrying"] == true {
		n.span.AddEvent("retry", trace.WithTimestamp(ev.Time), trace.WithAttributes(attribute.String("error", msg)))
		return
	}
	delete(r.nodes, ev.Thread)
	n.span.SetStatus(codes.Error, msg)
	n.span.End(trace.WithTimestamp(ev.Time))
}

// modelEnd closes a model call's span with its usage.
func (r *runSpans) modelEnd(ev runner.Event, d map[string]any) {
	s, ok := r.models[ev.Thread]
	if !ok {
		return
	}
	delete(r.models, ev.Thread)
	in, _ := d["input_tokens"].(int64)
	out, _ := d["output_tokens"].(int64)
	cost, _ := d["cost_usd"].(float64)
	s.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", in), attribute.Int64("gen_ai.usage.output_tokens", out),
		attribute.Float64("runner.cost_usd", cost))
	if e := str(d["error"]); e != "" {
		s.SetStatus(codes.Error, e)
	}
	s.End(trace.WithTimestamp(ev.Time))
}

// toolEnd closes a tool call's span with its status.
func (r *runSpans) toolEnd(ev runner.Event, d map[string]any) {
	key := ev.Thread + " " + str(d["id"])
	s, ok := r.tools[key]
	if !ok {
		return
	}
	delete(r.tools, key)
	status := str(d["status"])
	ms, _ := d["duration_ms"].(int64)
	s.SetAttributes(attribute.String("runner.status", status), attribute.Int64("execution_time_ms", ms))
	if e := str(d["error"]); e != "" {
		s.SetStatus(codes.Error, e)
	}
	s.End(trace.WithTimestamp(ev.Time))
}

// approval opens the span of an interrupt, under its node's: it ends
// with the run, which the interrupt pauses.
func (r *runSpans) approval(ev runner.Event) {
	intr, ok := ev.Data.(*runner.Interrupt)
	if !ok {
		return
	}
	var tools []string
	acts, _ := intr.Payload["action_requests"].([]any)
	for _, a := range records(acts) {
		tools = append(tools, str(a["name"]))
	}
	r.approvals[ev.Thread] = r.start(r.parent(ev.Thread), "approval "+intr.Node, ev, attribute.String("runner.node", intr.Node),
		attribute.String("runner.approval.kind", intr.Kind), attribute.String("runner.approval.rule", intr.Rule),
		attribute.String("runner.approval.message", intr.Message), attribute.StringSlice("runner.approval.tools", tools),
		attribute.String("runner.interrupt_id", intr.ID)).span
}

// end closes the spans still open, then the run's, with its status.
func (r *runSpans) end(e runEnd) {
	at := trace.WithTimestamp(e.at)
	for _, m := range []map[string]trace.Span{r.tools, r.models, r.approvals} {
		for _, s := range m {
			s.End(at)
		}
	}
	for _, n := range r.nodes {
		n.span.End(at)
	}
	r.run.span.SetAttributes(attribute.String("runner.status", e.status))
	if e.err != "" {
		r.run.span.SetStatus(codes.Error, e.err)
	}
	r.run.span.End(at)
}

// decisionTypes are the types of a gate's decisions.
func decisionTypes(v any) []string {
	ds, _ := v.([]*runner.Decision)
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Type
	}
	return out
}

func str(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
