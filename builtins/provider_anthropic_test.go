package builtins_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/runner"
)

const anthropicKey = "sk-ant-t3st-k3y"

// anthropicAPI is a fake Messages API endpoint: it answers with a scripted

// anthropicServe starts a fake endpoint answering with reply and returns
// a provider pointed at it.
func anthropicServe(t *testing.T, reply http.HandlerFunc) (runner.Provider, *apiRecord) {
	t.Helper()
	srv, api := serveAPI(t, reply)
	p := builtins.NewAnthropic(builtins.Endpoint{BaseURL: srv.URL, APIKey: anthropicKey, Client: srv.Client()})
	return p, api
}

// anthropicSSE answers with an event stream.
func anthropicSSE(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}
}

const anthropicTextReply = `{
  "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
  "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": " there"}],
  "stop_reason": "end_turn", "stop_sequence": null,
  "usage": {"input_tokens": 10, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 7}
}`

func TestAnthropicRequestAndTextReply(t *testing.T) {
	p, api := anthropicServe(t, jsonReply(200, anthropicTextReply))
	temp, topP := 0.2, 0.9
	req := &runner.ChatRequest{
		Model: "claude-test",
		Messages: []runner.Message{
			{Role: "system", Content: "You are a fraud analyst.", Cache: true},
			{Role: "system", Content: "Answer briefly."},
			{Role: "user", Content: "Check tx 7."},
			{Role: "assistant", Content: "Looking.", ToolCalls: []runner.ToolCallRequest{
				{ID: "toolu_1", Name: "lookup", Args: `{"id":"7"}`},
				{ID: "toolu_2", Name: "now", Args: ""},
			}},
			{Role: "tool", ToolCallID: "toolu_1", Content: `{"amount":12}`},
			{Role: "tool", ToolCallID: "toolu_2", Content: "noon"},
			{Role: "system", Content: "Skill: fraud rules."},
			{Role: "user", Content: "And?"},
		},
		Tools: []runner.ToolSchema{
			{Name: "lookup", Description: "Look a transaction up.", Parameters: map[string]any{
				"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []any{"id"},
			}},
			{Name: "now"},
		},
		Params: runner.Params{Temperature: &temp, TopP: &topP, Stop: []string{"END"}},
	}
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}

	path, header, body := api.last()
	if path != "/v1/messages" {
		t.Errorf("path = %q, want /v1/messages", path)
	}
	if got := header.Get("X-Api-Key"); got != anthropicKey {
		t.Errorf("x-api-key = %q, want %q", got, anthropicKey)
	}
	if header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	assertField(t, body, "model", `"claude-test"`)
	assertField(t, body, "max_tokens", `4096`)
	assertField(t, body, "temperature", `0.2`)
	assertField(t, body, "top_p", `0.9`)
	assertField(t, body, "stop_sequences", `["END"]`)
	assertField(t, body, "stream", `null`)
	assertField(t, body, "system", `[
	  {"type": "text", "text": "You are a fraud analyst.", "cache_control": {"type": "ephemeral"}},
	  {"type": "text", "text": "Answer briefly."},
	  {"type": "text", "text": "Skill: fraud rules."}]`)
	assertField(t, body, "messages", `[
	  {"role": "user", "content": [{"type": "text", "text": "Check tx 7."}]},
	  {"role": "assistant", "content": [
	    {"type": "text", "text": "Looking."},
	    {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"id": "7"}},
	    {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}}]},
	  {"role": "user", "content": [
	    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "{\"amount\":12}"}]},
	    {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "noon"}]},
	    {"type": "text", "text": "And?"}]}]`)
	assertField(t, body, "tools", `[
	  {"name": "lookup", "description": "Look a transaction up.", "input_schema":
	    {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
	  {"name": "now", "input_schema": {"type": "object", "properties": {}}}]`)
	assertField(t, body, "tool_choice", `null`)

	want := &runner.ChatResponse{
		Message:      runner.Message{Role: "assistant", Content: "Hello there"},
		Usage:        runner.Usage{InputTokens: 15, CachedInputTokens: 100, OutputTokens: 7},
		FinishReason: "end_turn",
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response:\n got %+v\nwant %+v", resp, want)
	}
}

func TestAnthropicToolUseReply(t *testing.T) {
	p, _ := anthropicServe(t, jsonReply(200, `{
	  "id": "msg_02", "type": "message", "role": "assistant", "model": "claude-test",
	  "content": [
	    {"type": "text", "text": "Checking both."},
	    {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {"city": "Paris"}},
	    {"type": "tool_use", "id": "toolu_b", "name": "weather", "input": {"city": "Rome"}}],
	  "stop_reason": "tool_use", "stop_sequence": null,
	  "usage": {"input_tokens": 30, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 40}
	}`))
	resp, err := p.Chat(context.Background(), &runner.ChatRequest{Model: "claude-test", Messages: []runner.Message{{Role: "user", Content: "Weather?"}}})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := runner.Message{Role: "assistant", Content: "Checking both.", ToolCalls: []runner.ToolCallRequest{
		{ID: "toolu_a", Name: "weather", Args: `{"city": "Paris"}`},
		{ID: "toolu_b", Name: "weather", Args: `{"city": "Rome"}`},
	}}
	if !reflect.DeepEqual(resp.Message, want) {
		t.Errorf("message:\n got %+v\nwant %+v", resp.Message, want)
	}
	if resp.FinishReason != "tool_use" {
		t.Errorf("finish reason = %q, want tool_use", resp.FinishReason)
	}
}

func TestAnthropicStructuredOutput(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"fraud": map[string]any{"type": "boolean"}}}
	for _, tc := range []struct {
		name, schemaName, wantTool string
	}{
		{"named schema", "verdict", "verdict"},
		{"unnamed schema", "", "respond"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, api := anthropicServe(t, jsonReply(200, `{
			  "id": "msg_03", "type": "message", "role": "assistant", "model": "claude-test",
			  "content": [{"type": "tool_use", "id": "toolu_s", "name": "`+tc.wantTool+`", "input": {"fraud": true}}],
			  "stop_reason": "tool_use", "stop_sequence": null,
			  "usage": {"input_tokens": 8, "output_tokens": 4}
			}`))
			resp, err := p.Chat(context.Background(), &runner.ChatRequest{
				Model:    "claude-test",
				Messages: []runner.Message{{Role: "user", Content: "Fraud?"}},
				Schema:   &runner.OutputSchema{Name: tc.schemaName, Schema: schema},
			})
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			_, _, body := api.last()
			assertField(t, body, "tool_choice", `{"type": "tool", "name": "`+tc.wantTool+`"}`)
			tools, _ := body["tools"].([]any)
			if len(tools) != 1 {
				t.Fatalf("request tools = %v, want the schema tool", body["tools"])
			}
			tool, _ := tools[0].(map[string]any)
			if tool["name"] != tc.wantTool || !reflect.DeepEqual(tool["input_schema"], decodeJSON(t, `{"type": "object", "properties": {"fraud": {"type": "boolean"}}}`)) {
				t.Errorf("schema tool = %v, want %s with the schema as input_schema", tool, tc.wantTool)
			}
			want := runner.Message{Role: "assistant", Content: `{"fraud": true}`}
			if !reflect.DeepEqual(resp.Message, want) {
				t.Errorf("message:\n got %+v\nwant %+v", resp.Message, want)
			}
		})
	}
}

// anthropicStream is a streamed reply as the API sends it: text in three
// deltas, then a tool_use whose input arrives in three chunks.
const anthropicStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_04","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", world"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_w","name":"weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"ci"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ty\": \"Par"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"is\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":15}}

event: message_stop
data: {"type":"message_stop"}

`

func TestAnthropicStreaming(t *testing.T) {
	p, api := anthropicServe(t, anthropicSSE(anthropicStream))
	var tokens []string
	resp, err := p.Chat(context.Background(), &runner.ChatRequest{
		Model:    "claude-test",
		Messages: []runner.Message{{Role: "user", Content: "Weather in Paris?"}},
		OnToken:  func(s string) { tokens = append(tokens, s) },
	})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	_, _, body := api.last()
	assertField(t, body, "stream", `true`)
	if want := []string{"Hel", "lo", ", world"}; !reflect.DeepEqual(tokens, want) {
		t.Errorf("tokens = %q, want %q", tokens, want)
	}
	want := &runner.ChatResponse{
		Message: runner.Message{Role: "assistant", Content: "Hello, world", ToolCalls: []runner.ToolCallRequest{
			{ID: "toolu_w", Name: "weather", Args: `{"city": "Paris"}`},
		}},
		Usage:        runner.Usage{InputTokens: 22, CachedInputTokens: 3, OutputTokens: 15},
		FinishReason: "tool_use",
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response:\n got %+v\nwant %+v", resp, want)
	}
}

// A call whose max_tokens could outlast an unstreamed call is
// streamed even without OnToken.
func TestAnthropicLongCallIsStreamed(t *testing.T) {
	p, api := anthropicServe(t, anthropicSSE(anthropicStream))
	resp, err := p.Chat(context.Background(), &runner.ChatRequest{
		Model:    "claude-test",
		Messages: []runner.Message{{Role: "user", Content: "Write a book."}},
		Params:   runner.Params{MaxTokens: 64000},
	})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	_, _, body := api.last()
	assertField(t, body, "stream", `true`)
	assertField(t, body, "max_tokens", `64000`)
	if resp.Message.Content != "Hello, world" {
		t.Errorf("content = %q, want %q", resp.Message.Content, "Hello, world")
	}
}

func TestAnthropicErrors(t *testing.T) {
	errorBody := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"}}`
	}
	// echoKey is a 401 whose message quotes the key the client sent.
	echoKey := func(w http.ResponseWriter, r *http.Request) {
		jsonReply(401, errorBody("authentication_error", "invalid x-api-key "+r.Header.Get("X-Api-Key")))(w, r)
	}
	truncated := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "500")
		_, _ = io.WriteString(w, anthropicTextReply[:60])
	}
	streamError := "event: message_start\ndata: " + `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}` +
		"\n\nevent: error\ndata: " + errorBody("overloaded_error", "Overloaded "+anthropicKey) + "\n\n"

	for _, tc := range []struct {
		name           string
		reply          http.HandlerFunc
		stream         bool
		wantStatus     int
		wantRetryAfter time.Duration
		wantPermanent  bool
		wantMsg        string
	}{
		{name: "429 rate limited", reply: jsonReply(429, errorBody("rate_limit_error", "Slow down"), "Retry-After", "3"),
			wantStatus: 429, wantRetryAfter: 3 * time.Second, wantMsg: "HTTP 429: rate_limit_error: Slow down"},
		{name: "429 streamed", reply: jsonReply(429, errorBody("rate_limit_error", "Slow down"), "Retry-After", "3"), stream: true,
			wantStatus: 429, wantRetryAfter: 3 * time.Second, wantMsg: "rate_limit_error: Slow down"},
		{name: "400 bad request", reply: jsonReply(400, errorBody("invalid_request_error", "max_tokens: too large")),
			wantStatus: 400, wantPermanent: true, wantMsg: "anthropic model claude-test: HTTP 400: invalid_request_error: max_tokens: too large"},
		{name: "401 echoing the key", reply: echoKey,
			wantStatus: 401, wantPermanent: true, wantMsg: "authentication_error: invalid x-api-key ***"},
		{name: "500 server error", reply: jsonReply(500, errorBody("api_error", "Internal server error")),
			wantStatus: 500, wantMsg: "api_error: Internal server error"},
		{name: "529 overloaded", reply: jsonReply(529, errorBody("overloaded_error", "Overloaded")),
			wantStatus: 529, wantMsg: "HTTP 529: overloaded_error: Overloaded"},
		{name: "non-JSON error body", reply: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(502)
			_, _ = io.WriteString(w, "<html>bad gateway</html>")
		}, wantStatus: 502, wantMsg: "HTTP 502: <html>bad gateway</html>"},
		{name: "malformed JSON", reply: jsonReply(200, `{"id": "msg", "content": [}`), wantMsg: "invalid character"},
		{name: "truncated body", reply: truncated, wantMsg: "unexpected EOF"},
		{name: "stream closed before message_stop", reply: anthropicSSE(anthropicStream[:strings.Index(anthropicStream, "event: message_delta")]),
			stream: true, wantMsg: "stream ended before message_stop"},
		{name: "stream error event", reply: anthropicSSE(streamError), stream: true, wantMsg: "overloaded_error: Overloaded ***"},
		{name: "malformed stream event", reply: anthropicSSE("event: message_start\ndata: {\"type\":\"message_start\",\n\n"), stream: true,
			wantMsg: "anthropic model claude-test:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := anthropicServe(t, tc.reply)
			req := &runner.ChatRequest{Model: "claude-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}}
			if tc.stream {
				req.OnToken = func(string) {}
			}
			_, err := p.Chat(context.Background(), req)
			if err == nil {
				t.Fatal("Chat succeeded, want an error")
			}
			var pe *runner.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %q is not a *runner.ProviderError", err, err)
			}
			if _, direct := err.(*runner.ProviderError); direct == tc.wantPermanent {
				t.Errorf("error %q: permanent = %v, want %v", err, !direct, tc.wantPermanent)
			}
			if pe.Provider != "anthropic" || pe.Model != "claude-test" {
				t.Errorf("provider, model = %q, %q, want anthropic, claude-test", pe.Provider, pe.Model)
			}
			if pe.Status != tc.wantStatus || pe.RetryAfter != tc.wantRetryAfter {
				t.Errorf("status, retry after = %d, %v, want %d, %v", pe.Status, pe.RetryAfter, tc.wantStatus, tc.wantRetryAfter)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error = %q, want it to contain %q", err, tc.wantMsg)
			}
			if strings.Contains(err.Error(), anthropicKey) {
				t.Errorf("error %q contains the API key", err)
			}
		})
	}
}

func TestAnthropicRetryAfterDate(t *testing.T) {
	at := time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat)
	p, _ := anthropicServe(t, jsonReply(429, `{"type":"error","error":{"type":"rate_limit_error","message":"Slow down"}}`, "Retry-After", at))
	_, err := p.Chat(context.Background(), &runner.ChatRequest{Model: "claude-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}})
	var pe *runner.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *runner.ProviderError", err)
	}
	if pe.RetryAfter < 8*time.Second || pe.RetryAfter > 10*time.Second {
		t.Errorf("retry after = %v, want about 10s", pe.RetryAfter)
	}
}

// Requests the provider cannot build fail permanently without a call.
func TestAnthropicBadRequestMessages(t *testing.T) {
	for _, tc := range []struct {
		name    string
		msg     runner.Message
		wantMsg string
	}{
		{"invalid tool arguments", runner.Message{Role: "assistant", ToolCalls: []runner.ToolCallRequest{{ID: "t1", Name: "lookup", Args: `{"id":`}}},
			`message 1: tool call t1 (lookup): arguments are not a JSON object: "{\"id\":"`},
		{"non-object tool arguments", runner.Message{Role: "assistant", ToolCalls: []runner.ToolCallRequest{{ID: "t1", Name: "lookup", Args: `[1]`}}},
			"arguments are not a JSON object"},
		{"unknown role", runner.Message{Role: "developer", Content: "x"}, `message 1: role "developer" is not system, user, assistant or tool`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, api := anthropicServe(t, jsonReply(200, anthropicTextReply))
			_, err := p.Chat(context.Background(), &runner.ChatRequest{
				Model: "claude-test", Messages: []runner.Message{{Role: "user", Content: "hi"}, tc.msg},
			})
			var pe *runner.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *runner.ProviderError", err)
			}
			if _, direct := err.(*runner.ProviderError); direct {
				t.Errorf("error %q is not permanent", err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error = %q, want it to contain %q", err, tc.wantMsg)
			}
			if n := api.callCount(); n != 0 {
				t.Errorf("server got %d calls, want none", n)
			}
		})
	}
}

func TestAnthropicDeadline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		reply  http.HandlerFunc
	}{
		{"non-streaming", false, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
		{"streaming", true, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, strings.SplitAfter(anthropicStream, "\n\n")[0])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := anthropicServe(t, tc.reply)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			req := &runner.ChatRequest{Model: "claude-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}}
			if tc.stream {
				req.OnToken = func(string) {}
			}
			_, err := p.Chat(ctx, req)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error = %v, want context.DeadlineExceeded", err)
			}
			var pe *runner.ProviderError
			if !errors.As(err, &pe) {
				t.Errorf("error %v is not a *runner.ProviderError", err)
			}
		})
	}
}

func TestAnthropicHeaders(t *testing.T) {
	p, api := anthropicServe(t, jsonReply(200, anthropicTextReply))
	if _, err := p.Chat(context.Background(), &runner.ChatRequest{Model: "claude-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}}); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	_, header, _ := api.last()
	for name, want := range map[string]string{"Anthropic-Version": "2023-06-01", "Content-Type": "application/json", "Authorization": ""} {
		if got := header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

// A call is streamed from the max_tokens whose reply could take more
// than ten minutes at 128,000 tokens an hour.
func TestAnthropicStreamThreshold(t *testing.T) {
	for _, tc := range []struct {
		maxTokens  int
		wantStream string
	}{{21333, ""}, {21334, "true"}} {
		reply := jsonReply(200, anthropicTextReply)
		if tc.wantStream != "" {
			reply = anthropicSSE(anthropicStream)
		}
		p, api := anthropicServe(t, reply)
		_, err := p.Chat(context.Background(), &runner.ChatRequest{
			Model: "claude-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}, Params: runner.Params{MaxTokens: tc.maxTokens},
		})
		if err != nil {
			t.Fatalf("max_tokens %d: Chat: %v", tc.maxTokens, err)
		}
		_, _, body := api.last()
		assertField(t, body, "stream", tc.wantStream)
	}
}

// anthropicDeadlines answers every request from reply and records
// whether its context had a deadline, and how far off.
type anthropicDeadlines struct {
	reply http.HandlerFunc
	left  []time.Duration // 0: no deadline
}

func (d *anthropicDeadlines) RoundTrip(r *http.Request) (*http.Response, error) {
	var left time.Duration
	if at, ok := r.Context().Deadline(); ok {
		left = time.Until(at)
	}
	d.left = append(d.left, left)
	rec := httptest.NewRecorder()
	d.reply(rec, r)
	return rec.Result(), nil
}

// An unstreamed call may take ten minutes; a streamed one is not cut off.
func TestAnthropicUnstreamedTimeout(t *testing.T) {
	d := &anthropicDeadlines{reply: jsonReply(200, anthropicTextReply)}
	p := builtins.NewAnthropic(builtins.Endpoint{APIKey: anthropicKey, Client: &http.Client{Transport: d}})
	req := &runner.ChatRequest{Model: "claude-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}}
	if _, err := p.Chat(context.Background(), req); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	d.reply = anthropicSSE(anthropicStream)
	req.OnToken = func(string) {}
	if _, err := p.Chat(context.Background(), req); err != nil {
		t.Fatalf("streamed Chat: %v", err)
	}
	if len(d.left) != 2 || d.left[0] < 9*time.Minute || d.left[0] > 10*time.Minute || d.left[1] != 0 {
		t.Errorf("deadlines %v, want 10m for the unstreamed call and none for the streamed one", d.left)
	}
}

// anthropicEvents is a stream of the given data events, each named by its
// type, after message_start.
func anthropicEvents(events ...string) string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: " + `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":20,"cache_creation_input_tokens":2,"cache_read_input_tokens":3,"output_tokens":1}}}` + "\n\n")
	for _, e := range events {
		typ := e[strings.Index(e, `"type":"`)+8:]
		b.WriteString("event: " + typ[:strings.Index(typ, `"`)] + "\ndata: " + e + "\n\n")
	}
	return b.String()
}

func TestAnthropicStreamEvents(t *testing.T) {
	start := func(i int, block string) string {
		return fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, block)
	}
	delta := func(i int, d string) string {
		return fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, d)
	}
	const stop = `{"type":"message_stop"}`
	for _, tc := range []struct {
		name    string
		stream  string
		want    *runner.ChatResponse
		wantErr string
	}{{
		name: "message_delta totals replace the counts so far",
		stream: anthropicEvents(start(0, `{"type":"text","text":""}`), delta(0, `{"type":"text_delta","text":"Hi"}`),
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":25,"cache_creation_input_tokens":null,"cache_read_input_tokens":7,"output_tokens":4}}`, stop),
		want: &runner.ChatResponse{Message: runner.Message{Role: "assistant", Content: "Hi"}, FinishReason: "end_turn",
			Usage: runner.Usage{InputTokens: 27, CachedInputTokens: 7, OutputTokens: 4}},
	}, {
		name:   "a tool call without arguments keeps {}",
		stream: anthropicEvents(start(0, `{"type":"tool_use","id":"toolu_n","name":"now","input":{}}`), `{"type":"content_block_stop","index":0}`, stop),
		want: &runner.ChatResponse{Message: runner.Message{Role: "assistant", ToolCalls: []runner.ToolCallRequest{{ID: "toolu_n", Name: "now", Args: "{}"}}},
			Usage: runner.Usage{InputTokens: 22, CachedInputTokens: 3, OutputTokens: 1}},
	}, {
		name:    "a delta for a block not started",
		stream:  anthropicEvents(delta(0, `{"type":"text_delta","text":"Hi"}`), stop),
		wantErr: "anthropic model claude-test: stream: content_block_delta for content block 0, which has not started",
	}, {
		name:    "a block started out of order",
		stream:  anthropicEvents(start(1, `{"type":"text","text":""}`), stop),
		wantErr: "anthropic model claude-test: stream: content block 1 started, expected block 0",
	}, {
		name:    "an error event without JSON",
		stream:  anthropicEvents() + "event: error\ndata: upstream gone\n\n",
		wantErr: "anthropic model claude-test: stream error: upstream gone",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := anthropicServe(t, anthropicSSE(tc.stream))
			resp, err := p.Chat(context.Background(), &runner.ChatRequest{
				Model: "claude-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}, OnToken: func(string) {},
			})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %s", err, tc.wantErr)
				}
				if _, retryable := err.(*runner.ProviderError); !retryable {
					t.Errorf("error %T is permanent, want it retried", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if !reflect.DeepEqual(resp, tc.want) {
				t.Errorf("response:\n got %+v\nwant %+v", resp, tc.want)
			}
		})
	}
}
