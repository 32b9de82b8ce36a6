package server_test

import (
	"context"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/runner-dev/runner/server"
)

// TestTraceSpans checks the span tree of rule_37 run to its approval gate
// and resumed: run → node → model call, tool call, approval.
func TestTraceSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}), func(c *server.Config) { c.TracerProvider = tp })
	e.call("POST", "/threads", map[string]any{"thread_id": "conv-1"}, 200)
	e.call("POST", "/threads/conv-1/runs/wait", map[string]any{"assistant_id": "rule_37",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the Mitchell Ranch 3H well."}}}}, 200)
	e.call("POST", "/threads/conv-1/runs/wait", map[string]any{"assistant_id": "rule_37",
		"command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}}, 200)
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	parent := func(s tracetest.SpanStub) string { return byID[s.Parent.SpanID().String()].Name }
	attr := func(s tracetest.SpanStub, key string) string {
		for _, a := range s.Attributes {
			if string(a.Key) == key {
				return a.Value.String()
			}
		}
		return ""
	}
	find := func(name string) []tracetest.SpanStub {
		var out []tracetest.SpanStub
		for _, s := range spans {
			if s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}
	runs := find("invoke_agent rule_37")
	if len(runs) != 2 {
		t.Fatalf("%d run spans, want 2 (the run to the gate, the resume)", len(runs))
	}
	for _, r := range runs {
		if r.Parent.IsValid() || attr(r, "runner.thread_id") != "conv-1" || attr(r, "investigation_id") != "conv-1" || attr(r, "runner.pipeline") != "orchestration" {
			t.Errorf("run span %s: parent %v, attributes %v", r.Name, r.Parent.SpanID(), r.Attributes)
		}
	}
	if got := []string{attr(runs[0], "runner.status"), attr(runs[1], "runner.status")}; !slices.Equal(got, []string{"interrupted", "success"}) {
		t.Errorf("run statuses %v", got)
	}
	chats := find("chat gpt-4o")
	if len(chats) != 2 || parent(chats[0]) != "node initial_llm_call" || attr(chats[0], "gen_ai.usage.input_tokens") != "1200" {
		t.Fatalf("model call spans %v", chats)
	}
	if n := byID[chats[0].Parent.SpanID().String()]; parent(n) != "invoke_agent rule_37" || attr(n, "runner.node") != "initial_llm_call" {
		t.Errorf("node span %s under %s", n.Name, parent(n))
	}
	approvals := find("approval tool_node")
	if len(approvals) != 1 || parent(approvals[0]) != "node tool_node" || attr(approvals[0], "runner.approval.tools") != `["create_entity"]` ||
		attr(approvals[0], "runner.approval.rule") == "" || approvals[0].SpanContext.TraceID() != runs[0].SpanContext.TraceID() {
		t.Fatalf("approval spans %+v", approvals)
	}
	decisions := find("approval.decision tool_node")
	if len(decisions) != 1 || attr(decisions[0], "runner.approval.decisions") != `["approve"]` || decisions[0].SpanContext.TraceID() != runs[1].SpanContext.TraceID() {
		t.Fatalf("decision spans %+v", decisions)
	}
	tools := find("execute_tool create_entity")
	if len(tools) != 1 || parent(tools[0]) != "node tool_node" || attr(tools[0], "runner.status") != "SUCCESS" ||
		tools[0].SpanContext.TraceID() != runs[1].SpanContext.TraceID() {
		t.Fatalf("tool spans %+v", tools)
	}
	for _, s := range spans {
		if s.EndTime.Before(s.StartTime) {
			t.Errorf("span %s ends before it starts", s.Name)
		}
	}
}
