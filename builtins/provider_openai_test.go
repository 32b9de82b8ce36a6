package builtins_test

import (
	"context"
	"encoding/json"
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

const openAIKey = "sk-proj-t3st+k3y"

// openAIAPI is a fake Chat Completions endpoint: it answers with a

// openAIServe starts a fake endpoint answering with reply and returns a
// provider pointed at it with key.
func openAIServe(t *testing.T, key string, reply http.HandlerFunc) (runner.Provider, *apiRecord) {
	t.Helper()
	srv, api := serveAPI(t, reply)
	p := builtins.NewOpenAI(builtins.Endpoint{BaseURL: srv.URL + "/v1", APIKey: key, Client: srv.Client()})
	return p, api
}

// openAISSE answers with an event stream of data events, one flushed
// write each; the caller ends it with "[DONE]" or leaves it cut short.
func openAISSE(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			_, _ = fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
	}
}

// openAIChunk is a chat.completion.chunk with the given choices and usage
// JSON, as OpenAI sends it.
func openAIChunk(choices, usage string) string {
	return `{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test",` +
		`"system_fingerprint":"fp_1","choices":[` + choices + `],"usage":` + usage + `}`
}

// openAIDelta is a chunk of one choice with delta and finish_reason JSON.
func openAIDelta(delta, finish string) string {
	return openAIChunk(`{"index":0,"delta":`+delta+`,"logprobs":null,"finish_reason":`+finish+`}`, "null")
}

// openAIUsageChunk is the closing usage chunk include_usage asks for.
const openAIUsageChunk = `{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test",` +
	`"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":9,"total_tokens":49,` +
	`"prompt_tokens_details":{"cached_tokens":32,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`

func openAIFloat(v float64) *float64 { return &v }

const openAITextReply = `{
  "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-test-2024",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris is sunny.", "refusal": null, "annotations": []},
    "logprobs": null, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 120, "completion_tokens": 5, "total_tokens": 125,
    "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
  "service_tier": "default", "system_fingerprint": "fp_1"
}`

func TestOpenAIRequestAndTextReply(t *testing.T) {
	p, api := openAIServe(t, openAIKey, jsonReply(200, openAITextReply))
	seed := int64(7)
	req := &runner.ChatRequest{
		Model: "gpt-test",
		Messages: []runner.Message{
			{Role: "system", Content: "Be brief.", Cache: true},
			{Role: "user", Content: "Weather in Paris?", Name: "ana"},
			{Role: "assistant", ToolCalls: []runner.ToolCallRequest{{ID: "call_1", Name: "weather", Args: `{"city":"Paris"}`}}},
			{Role: "tool", ToolCallID: "call_1", Content: `{"sky":"clear"}`},
		},
		Tools: []runner.ToolSchema{
			{Name: "weather", Description: "Current weather", Parameters: map[string]any{
				"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
			{Name: "now"},
		},
		Schema: &runner.OutputSchema{Name: "answer", Schema: map[string]any{"type": "object"}},
		Params: runner.Params{Temperature: openAIFloat(0.2), TopP: openAIFloat(0.9), MaxTokens: 100, Stop: []string{"END"}, Seed: &seed},
	}
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := &runner.ChatResponse{
		Message:      runner.Message{Role: "assistant", Content: "Paris is sunny."},
		FinishReason: "stop",
		// 120 prompt tokens, of which 64 cached.
		Usage: runner.Usage{InputTokens: 56, OutputTokens: 5, CachedInputTokens: 64},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response:\n got %+v\nwant %+v", resp, want)
	}

	path, header, body := api.last()
	if path != "/v1/chat/completions" {
		t.Errorf("path = %q, want /v1/chat/completions", path)
	}
	if got := header.Get("Authorization"); got != "Bearer "+openAIKey {
		t.Errorf("Authorization = %q, want Bearer <key>", got)
	}
	for field, want := range map[string]string{
		"model": `"gpt-test"`,
		"messages": `[
			{"role": "system", "content": "Be brief."},
			{"role": "user", "content": "Weather in Paris?", "name": "ana"},
			{"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
				"function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
			{"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\":\"clear\"}"}]`,
		"tools": `[
			{"type": "function", "function": {"name": "weather", "description": "Current weather",
				"parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
			{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}]`,
		"response_format": `{"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": false}}`,
		"temperature":     `0.2`,
		"top_p":           `0.9`,
		"max_tokens":      `100`,
		"stop":            `["END"]`,
		"seed":            `7`,
		// Not set: the call is not streamed, and the token limit goes
		// out under the name compatible servers know.
		"stream":                "",
		"stream_options":        "",
		"max_completion_tokens": "",
	} {
		assertField(t, body, field, want)
	}
}

func TestOpenAIMinimalRequest(t *testing.T) {
	p, api := openAIServe(t, openAIKey, jsonReply(200, openAITextReply))
	req := &runner.ChatRequest{Model: "gpt-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}}
	if _, err := p.Chat(context.Background(), req); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	_, _, body := api.last()
	var keys []string
	for k := range body {
		keys = append(keys, k)
	}
	if len(body) != 2 {
		t.Errorf("request has fields %v, want only model and messages (zero params leave the server's defaults)", keys)
	}
}

func TestOpenAIToolCallReply(t *testing.T) {
	p, _ := openAIServe(t, openAIKey, jsonReply(200, `{
	  "id": "chatcmpl-2", "object": "chat.completion", "created": 1700000000, "model": "gpt-test",
	  "choices": [{"index": 0, "logprobs": null, "finish_reason": "tool_calls",
	    "message": {"role": "assistant", "content": null, "refusal": null, "annotations": [], "tool_calls": [
	      {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
	      {"id": "call_b", "type": "function", "function": {"name": "now", "arguments": "{}"}}]}}],
	  "usage": {"prompt_tokens": 50, "completion_tokens": 30, "total_tokens": 80}
	}`))
	resp, err := p.Chat(context.Background(), &runner.ChatRequest{Model: "gpt-test", Messages: []runner.Message{{Role: "user", Content: "go"}}})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := &runner.ChatResponse{
		Message: runner.Message{Role: "assistant", ToolCalls: []runner.ToolCallRequest{
			{ID: "call_a", Name: "weather", Args: `{"city":"Paris"}`},
			{ID: "call_b", Name: "now", Args: `{}`},
		}},
		FinishReason: "tool_calls",
		Usage:        runner.Usage{InputTokens: 50, OutputTokens: 30},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response:\n got %+v\nwant %+v", resp, want)
	}
}

func TestOpenAIStreaming(t *testing.T) {
	usage := runner.Usage{InputTokens: 8, OutputTokens: 9, CachedInputTokens: 32} // 40 prompt tokens, 32 cached
	tests := []struct {
		name       string
		events     []string
		wantTokens []string
		want       *runner.ChatResponse
	}{{
		name: "text over several chunks",
		events: []string{
			openAIDelta(`{"role":"assistant","content":"","refusal":null}`, "null"),
			openAIDelta(`{"content":"Hel"}`, "null"),
			openAIDelta(`{"content":"lo, "}`, "null"),
			openAIDelta(`{"content":"world"}`, "null"),
			openAIDelta(`{}`, `"stop"`),
			openAIUsageChunk,
			"[DONE]",
		},
		wantTokens: []string{"Hel", "lo, ", "world"},
		want: &runner.ChatResponse{
			Message: runner.Message{Role: "assistant", Content: "Hello, world"}, FinishReason: "stop", Usage: usage,
		},
	}, {
		name: "two tool calls interleaved, names and arguments split",
		events: []string{
			openAIDelta(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"wea","arguments":""}}]}`, "null"),
			openAIDelta(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"now","arguments":""}}]}`, "null"),
			openAIDelta(`{"tool_calls":[{"index":0,"function":{"name":"ther","arguments":"{\"ci"}}]}`, "null"),
			openAIDelta(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\":\"UTC\"}"}}]}`, "null"),
			openAIDelta(`{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]}`, "null"),
			openAIDelta(`{}`, `"tool_calls"`),
			openAIUsageChunk,
			"[DONE]",
		},
		want: &runner.ChatResponse{
			Message: runner.Message{Role: "assistant", ToolCalls: []runner.ToolCallRequest{
				{ID: "call_a", Name: "weather", Args: `{"city":"Paris"}`},
				{ID: "call_b", Name: "now", Args: `{"tz":"UTC"}`},
			}},
			FinishReason: "tool_calls", Usage: usage,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, api := openAIServe(t, openAIKey, openAISSE(tt.events...))
			var tokens []string
			req := &runner.ChatRequest{
				Model: "gpt-test", Messages: []runner.Message{{Role: "user", Content: "hi"}},
				OnToken: func(s string) { tokens = append(tokens, s) },
			}
			resp, err := p.Chat(context.Background(), req)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if !reflect.DeepEqual(tokens, tt.wantTokens) {
				t.Errorf("OnToken calls = %q, want %q", tokens, tt.wantTokens)
			}
			if !reflect.DeepEqual(resp, tt.want) {
				t.Errorf("response:\n got %+v\nwant %+v", resp, tt.want)
			}
			_, _, body := api.last()
			assertField(t, body, "stream", `true`)
			assertField(t, body, "stream_options", `{"include_usage": true}`)
		})
	}
}

// openAIAuthEcho answers status with an error whose message quotes the
// Authorization header, as a careless server might.
func openAIAuthEcho(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		msg, _ := json.Marshal("Incorrect API key provided: " + r.Header.Get("Authorization"))
		jsonReply(status, `{"error":{"message":`+string(msg)+`,"type":"invalid_request_error","code":"invalid_api_key"}}`)(w, r)
	}
}

// openAITruncated declares a longer body than it sends.
func openAITruncated(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","choices":[{"index":0,"mess`)
	}
}

// openAIAborted sends the start of a stream, then drops the connection.
func openAIAborted(w http.ResponseWriter, r *http.Request) {
	openAISSE(openAIDelta(`{"role":"assistant","content":"Hel"}`, "null"))(w, r)
	panic(http.ErrAbortHandler)
}

func TestOpenAIErrors(t *testing.T) {
	const prefix = "openai model gpt-test: "
	tests := []struct {
		name           string
		reply          http.HandlerFunc
		stream         bool
		wantErr        string // a substring of the error
		wantStatus     int
		wantRetryAfter time.Duration
		wantPermanent  bool
	}{{
		name:           "429 with Retry-After seconds",
		reply:          jsonReply(429, `{"error":{"message":"Rate limit reached for gpt-test.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "Retry-After", "2"),
		wantErr:        prefix + "HTTP 429: Rate limit reached for gpt-test.",
		wantStatus:     429,
		wantRetryAfter: 2 * time.Second,
	}, {
		name:           "429 with retry-after-ms, streamed",
		reply:          jsonReply(429, `{"error":{"message":"Slow down.","type":"requests"}}`, "Retry-After", "2", "Retry-After-Ms", "1500"),
		stream:         true,
		wantErr:        prefix + "HTTP 429: Slow down.",
		wantStatus:     429,
		wantRetryAfter: 1500 * time.Millisecond,
	}, {
		name:       "500 with the server's message",
		reply:      jsonReply(500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`),
		wantErr:    prefix + "HTTP 500: The server had an error while processing your request.",
		wantStatus: 500,
	}, {
		name: "502 with an HTML body",
		reply: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html>Bad Gateway</html>", http.StatusBadGateway)
		},
		wantErr:    prefix + "HTTP 502: <html>Bad Gateway</html>",
		wantStatus: 502,
	}, {
		name:       "408 is retried",
		reply:      jsonReply(408, `{"error":{"message":"Request timed out."}}`),
		wantErr:    prefix + "HTTP 408: Request timed out.",
		wantStatus: 408,
	}, {
		name:       "409 is retried",
		reply:      jsonReply(409, `{"error":{"message":"Conflict."}}`),
		wantErr:    prefix + "HTTP 409: Conflict.",
		wantStatus: 409,
	}, {
		name:          "400 is permanent",
		reply:         jsonReply(400, `{"error":{"message":"Unsupported parameter: 'max_tokens'.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`),
		wantErr:       prefix + "HTTP 400: Unsupported parameter: 'max_tokens'.",
		wantStatus:    400,
		wantPermanent: true,
	}, {
		name:          "401 echoing the key is permanent and redacted",
		reply:         openAIAuthEcho(401),
		wantErr:       prefix + "HTTP 401: Incorrect API key provided: Bearer ***",
		wantStatus:    401,
		wantPermanent: true,
	}, {
		name:          "403 echoing the key, streamed",
		reply:         openAIAuthEcho(403),
		stream:        true,
		wantErr:       "Bearer ***",
		wantStatus:    403,
		wantPermanent: true,
	}, {
		name:          "404 with a plain string error, as some servers send",
		reply:         jsonReply(404, `{"error":"model \"gpt-test\" not found, try pulling it first"}`),
		wantErr:       prefix + `HTTP 404: model "gpt-test" not found, try pulling it first`,
		wantStatus:    404,
		wantPermanent: true,
	}, {
		name:          "422 with a top-level message",
		reply:         jsonReply(422, `{"object":"error","message":"max_tokens must be at least 1","type":"BadRequestError","code":422}`),
		wantErr:       prefix + "HTTP 422: max_tokens must be at least 1",
		wantStatus:    422,
		wantPermanent: true,
	}, {
		name:       "500 with a truncated body",
		reply:      openAITruncated(500),
		wantErr:    prefix + "HTTP 500: Internal Server Error",
		wantStatus: 500,
	}, {
		name:    "truncated body",
		reply:   openAITruncated(200),
		wantErr: "unexpected EOF",
	}, {
		name:    "malformed JSON",
		reply:   jsonReply(200, `{"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"}}]`),
		wantErr: "error parsing response json",
	}, {
		name:    "no choices",
		reply:   jsonReply(200, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[]}`),
		wantErr: prefix + "response has no choices",
	}, {
		name:    "stream cut short without [DONE]",
		reply:   openAISSE(openAIDelta(`{"role":"assistant","content":"Hel"}`, "null"), openAIDelta(`{"content":"lo"}`, "null")),
		stream:  true,
		wantErr: prefix + "stream ended before [DONE]",
	}, {
		name:    "stream cut short after the finish",
		reply:   openAISSE(openAIDelta(`{"content":"Hello"}`, "null"), openAIDelta(`{}`, `"stop"`)),
		stream:  true,
		wantErr: prefix + "stream ended before [DONE]",
	}, {
		name:    "stream connection dropped",
		reply:   openAIAborted,
		stream:  true,
		wantErr: prefix + "stream: unexpected EOF",
	}, {
		name:    "stream error event",
		reply:   openAISSE(openAIDelta(`{"content":"Hel"}`, "null"), `{"error":{"message":"The model is overloaded.","type":"server_error"}}`),
		stream:  true,
		wantErr: "The model is overloaded.",
	}, {
		name:    "stream with an out-of-order tool call",
		reply:   openAISSE(openAIDelta(`{"tool_calls":[{"index":3,"id":"call_x","function":{"name":"f","arguments":"{}"}}]}`, "null"), "[DONE]"),
		stream:  true,
		wantErr: prefix + "stream: tool call index 3 out of order",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := openAIServe(t, openAIKey, tt.reply)
			req := &runner.ChatRequest{Model: "gpt-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}}
			if tt.stream {
				req.OnToken = func(string) {}
			}
			resp, err := p.Chat(context.Background(), req)
			if err == nil {
				t.Fatalf("Chat = %+v, want an error", resp)
			}
			openAICheckError(t, err, tt.wantErr)
			var pe *runner.ProviderError
			errors.As(err, &pe)
			if pe.Status != tt.wantStatus || pe.RetryAfter != tt.wantRetryAfter {
				t.Errorf("status %d, retry after %v; want %d, %v", pe.Status, pe.RetryAfter, tt.wantStatus, tt.wantRetryAfter)
			}
			// runner.Permanent wraps a permanent error: only a retryable
			// one is a *ProviderError itself.
			if _, retryable := err.(*runner.ProviderError); retryable == tt.wantPermanent {
				t.Errorf("error is %T; want permanent = %v", err, tt.wantPermanent)
			}
		})
	}
}

// openAICheckError checks that err is a ProviderError for gpt-test whose
// message has want and not the API key.
func openAICheckError(t *testing.T, err error, want string) {
	t.Helper()
	var pe *runner.ProviderError
	if !errors.As(err, &pe) || pe.Provider != "openai" || pe.Model != "gpt-test" {
		t.Fatalf("error %T %q is not an openai ProviderError for gpt-test", err, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not have %q", err, want)
	}
	if strings.Contains(err.Error(), "t3st") {
		t.Errorf("error %q shows the API key", err)
	}
}

func TestOpenAIRetryAfterDate(t *testing.T) {
	at := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	p, _ := openAIServe(t, openAIKey, jsonReply(503, `{"error":{"message":"busy"}}`, "Retry-After", at))
	_, err := p.Chat(context.Background(), &runner.ChatRequest{Model: "gpt-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}})
	var pe *runner.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a ProviderError", err)
	}
	if pe.RetryAfter <= time.Second || pe.RetryAfter > 3*time.Second {
		t.Errorf("RetryAfter = %v, want about 3s (for Retry-After: %s)", pe.RetryAfter, at)
	}
}

func TestOpenAIDeadline(t *testing.T) {
	stall := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	tests := []struct {
		name   string
		reply  http.HandlerFunc
		stream bool
	}{
		{name: "no response", reply: stall},
		{name: "no response, streamed", reply: stall, stream: true},
		{name: "stream stalls", stream: true, reply: func(w http.ResponseWriter, r *http.Request) {
			openAISSE(openAIDelta(`{"content":"Hel"}`, "null"))(w, r)
			stall(w, r)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := openAIServe(t, openAIKey, tt.reply)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			req := &runner.ChatRequest{Model: "gpt-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}}
			if tt.stream {
				req.OnToken = func(string) {}
			}
			_, err := p.Chat(ctx, req)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error %v is not context.DeadlineExceeded", err)
			}
			openAICheckError(t, err, "context deadline exceeded")
		})
	}
}

func TestOpenAIBadRole(t *testing.T) {
	p, _ := openAIServe(t, openAIKey, jsonReply(200, openAITextReply))
	req := &runner.ChatRequest{Model: "gpt-test", Messages: []runner.Message{{Role: "user", Content: "hi"}, {Role: "robot"}}}
	_, err := p.Chat(context.Background(), req)
	if err == nil {
		t.Fatal("Chat accepted a message with role robot")
	}
	openAICheckError(t, err, `message 1: role "robot" is not system, user, assistant or tool`)
	if _, retryable := err.(*runner.ProviderError); retryable {
		t.Errorf("error is %T, want it permanent", err)
	}
}

// openAIRoundTrip is a transport answering from a handler, for calls
// to hosts the test cannot reach.
type openAIRoundTrip http.HandlerFunc

func (f openAIRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	f(rec, r)
	return rec.Result(), nil
}

// An endpoint without a base URL calls OpenAI, and one without a key
// sends none: the OPENAI_* environment variables, meant for OpenAI and
// not for whatever server an endpoint names, are not read.
func TestOpenAIDefaultsIgnoreEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	var url, auth, org string
	client := &http.Client{Transport: openAIRoundTrip(func(w http.ResponseWriter, r *http.Request) {
		url, auth, org = r.URL.String(), r.Header.Get("Authorization"), r.Header.Get("OpenAI-Organization")
		jsonReply(200, openAITextReply)(w, r)
	})}
	p := builtins.NewOpenAI(builtins.Endpoint{Client: client})
	if _, err := p.Chat(context.Background(), &runner.ChatRequest{Model: "m", Messages: []runner.Message{{Role: "user", Content: "hi"}}}); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if want := "https://api.openai.com/v1/chat/completions"; url != want {
		t.Errorf("URL = %q, want %q", url, want)
	}
	if auth != "" || org != "" {
		t.Errorf("Authorization = %q, OpenAI-Organization = %q; want neither", auth, org)
	}
}

func TestOpenAIHeaders(t *testing.T) {
	p, api := openAIServe(t, openAIKey, jsonReply(200, openAITextReply))
	if _, err := p.Chat(context.Background(), &runner.ChatRequest{Model: "gpt-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}}); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	_, header, _ := api.last()
	if got := header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
}

// openAITrickle answers with stream, one byte a flushed write, so that
// every line and event arrives split across reads.
func openAITrickle(stream string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range len(stream) {
			_, _ = io.WriteString(w, stream[i:i+1])
			w.(http.Flusher).Flush()
		}
	}
}

func TestOpenAIStreamEvents(t *testing.T) {
	// Comments, CRLF line ends, a chunk over two data lines and an event
	// field the provider ignores.
	stream := ": keep-alive\r\n\r\n" +
		"data: " + openAIDelta(`{"role":"assistant","content":"Hel"}`, "null") + "\r\n\r\n" +
		"event: chunk\r\ndata: {\"choices\":[{\"index\":0,\r\ndata: \"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\r\n\r\n" +
		": done soon\r\n" +
		"data: " + openAIUsageChunk + "\r\n\r\n" +
		"data: [DONE]\r\n\r\n"
	p, _ := openAIServe(t, openAIKey, openAITrickle(stream))
	var tokens []string
	resp, err := p.Chat(context.Background(), &runner.ChatRequest{
		Model: "gpt-test", Messages: []runner.Message{{Role: "user", Content: "hi"}},
		OnToken: func(s string) { tokens = append(tokens, s) },
	})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := &runner.ChatResponse{
		Message: runner.Message{Role: "assistant", Content: "Hello"}, FinishReason: "stop",
		Usage: runner.Usage{InputTokens: 8, OutputTokens: 9, CachedInputTokens: 32},
	}
	if !reflect.DeepEqual(resp, want) || !reflect.DeepEqual(tokens, []string{"Hel", "lo"}) {
		t.Errorf("response %+v, tokens %q; want %+v, [Hel lo]", resp, tokens, want)
	}
}

func TestOpenAIStreamErrorEvents(t *testing.T) {
	for _, tc := range []struct {
		name, stream, want string
	}{
		{"an error event", "data: " + openAIDelta(`{"content":"Hel"}`, "null") + "\n\nevent: error\ndata: {\"message\":\"Server overloaded " + openAIKey + "\"}\n\n",
			"openai model gpt-test: stream error: Server overloaded ***"},
		{"an error chunk with a string", "data: {\"error\":\"upstream failed\"}\n\n",
			"openai model gpt-test: stream error: upstream failed"},
		{"an error chunk without a message", "data: {\"error\":{\"code\":500}}\n\n",
			`openai model gpt-test: stream error: {"error":{"code":500}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := openAIServe(t, openAIKey, openAITrickle(tc.stream))
			_, err := p.Chat(context.Background(), &runner.ChatRequest{
				Model: "gpt-test", Messages: []runner.Message{{Role: "user", Content: "hi"}}, OnToken: func(string) {},
			})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error = %v, want %s", err, tc.want)
			}
			if pe, retryable := err.(*runner.ProviderError); !retryable || pe.Status != 0 {
				t.Errorf("error %T %+v: want a retryable ProviderError without status", err, err)
			}
		})
	}
}
