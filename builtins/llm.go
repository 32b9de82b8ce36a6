package builtins

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// metricsField receives one record per LLM call (tokens in and out,
// latency, cost, node, phase) when the pipeline declares it; the run's
// totals are in its usage either way.
const metricsField = "turn_metrics"

// caller makes a node's LLM calls through one model and keeps their
// metrics.
type caller struct {
	model   *dsl.Model
	params  runner.Params
	phase   string
	stream  bool
	skills  []string // loaded now: their rules apply
	metrics []any
	last    *runner.LLMCall
}

// chat makes one LLM call through the run's call path (budget, rules,
// the provider, usage) and keeps its metrics. With streaming on, each
// text chunk is emitted as an llm_token event.
func (c *caller) chat(ctx context.Context, in *runner.Input, req *runner.ChatRequest) (*runner.ChatResponse, error) {
	return c.ask(ctx, in, req, "", 0)
}

// ask is chat for attempt n (from 1) of a structured reply by method.
func (c *caller) ask(ctx context.Context, in *runner.Input, req *runner.ChatRequest, method string, n int) (*runner.ChatResponse, error) {
	req.Model, req.Params = c.model.Def.ID, c.params
	if c.stream {
		req.OnToken = func(text string) { in.Run.Emit(runner.EventLLMToken, in.Node, map[string]any{"text": text}) }
	}
	resp, rec, err := in.Run.CallLLM(ctx, &runner.LLMRequest{Provider: c.model.Provider, Model: c.model.Def.Name,
		Price: c.model.Def.Pricing.Cost, Phase: c.phase, Method: method, Attempt: n, Skills: c.skills, Chat: req})
	if err != nil {
		return nil, err
	}
	c.metrics = append(c.metrics, rec.Metric())
	c.last = rec
	return resp, nil
}

// record adds the calls' metrics to upd when the pipeline keeps them.
func (c *caller) record(upd runner.Update, keep bool) {
	if keep && len(c.metrics) > 0 {
		upd[metricsField] = c.metrics
	}
}

// Structured-output methods, tried in order.
const (
	MethodSchema = "schema" // the provider's native structured output
	MethodTool   = "tool"   // a tool whose parameters are the schema
	MethodPrompt = "prompt" // instructions, and JSON parsed from the text
)

// structured asks for a reply satisfying schema: each method in turn, each
// up to attempts times, telling the model what was wrong with its last
// reply. It returns the decoded value, or a permanent error once every
// method and attempt is spent.
func (c *caller) structured(ctx context.Context, in *runner.Input, msgs []runner.Message, s *outputSchema, methods []string, attempts int) (any, error) {
	var last error
	n := 0 // attempts over every method
	for _, m := range methods {
		conv := append([]runner.Message(nil), msgs...)
		for a := 0; a < attempts; a++ {
			req := s.request(m, conv)
			n++
			resp, err := c.ask(ctx, in, req, m, n)
			if err != nil {
				return nil, err
			}
			v, err := s.parse(m, resp.Message)
			if err == nil {
				return v, nil
			}
			last = fmt.Errorf("%s method, attempt %d: %w", m, a+1, err)
			in.Run.Emit(runner.EventError, in.Node, map[string]any{"error": last.Error(), "retrying": a+1 < attempts || m != methods[len(methods)-1]})
			conv = append(conv, resp.Message, runner.Message{Role: "user",
				Content: "That reply was not valid: " + err.Error() + ". Reply again, following the required format exactly."})
		}
	}
	return nil, runner.Permanent(&runner.ValidationError{Err: fmt.Errorf("no valid structured reply after %d methods × %d attempts; last: %w", len(methods), attempts, last)})
}

// outputSchema is a structured reply's JSON Schema, compiled.
type outputSchema struct {
	name string
	doc  map[string]any
	s    *dsl.JSONSchema
}

func newOutputSchema(name string, doc map[string]any) (*outputSchema, error) {
	s, err := dsl.CompileJSONSchema(doc)
	if err != nil {
		return nil, fmt.Errorf("output_schema is not a valid JSON Schema: %w", err)
	}
	return &outputSchema{name: name, doc: doc, s: s}, nil
}

// request builds the request of one method.
func (s *outputSchema) request(method string, msgs []runner.Message) *runner.ChatRequest {
	req := &runner.ChatRequest{Messages: msgs}
	switch method {
	case MethodSchema:
		req.Schema = &runner.OutputSchema{Name: s.name, Schema: s.doc}
	case MethodTool:
		req.Tools = []runner.ToolSchema{{Name: s.name, Description: "Give your answer by calling this tool.", Parameters: s.doc}}
		req.Messages = withSystem(msgs, "Answer by calling the tool "+s.name+" exactly once.")
	default:
		b, _ := json.Marshal(s.doc)
		req.Messages = withSystem(msgs, "Reply with only a JSON document that satisfies this JSON Schema, and nothing else:\n"+string(b))
	}
	return req
}

// parse decodes and validates the reply of one method.
func (s *outputSchema) parse(method string, m runner.Message) (any, error) {
	text := m.Content
	switch method {
	case MethodTool:
		text = ""
		for _, tc := range m.ToolCalls {
			if tc.Name == s.name {
				text = tc.Args
			}
		}
		if text == "" {
			return nil, fmt.Errorf("the reply did not call %s", s.name)
		}
	case MethodPrompt:
		text = jsonIn(text)
	}
	v, err := runner.DecodeJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if err := s.s.Check(v); err != nil {
		return nil, fmt.Errorf("does not satisfy the schema: %v", err)
	}
	return v, nil
}

// jsonIn returns the JSON document in a free-text reply: inside a code
// fence, or from the first brace or bracket to the last.
func jsonIn(text string) string {
	if i := strings.Index(text, "```"); i >= 0 {
		rest := text[i+3:]
		rest = strings.TrimPrefix(rest, "json")
		if j := strings.Index(rest, "```"); j >= 0 {
			return strings.TrimSpace(rest[:j])
		}
	}
	start := strings.IndexAny(text, "{[")
	end := strings.LastIndexAny(text, "}]")
	if start < 0 || end < start {
		return text
	}
	return text[start : end+1]
}

// withSystem returns msgs followed by a system instruction.
func withSystem(msgs []runner.Message, text string) []runner.Message {
	return append(append([]runner.Message(nil), msgs...), runner.Message{Role: "system", Content: text})
}
