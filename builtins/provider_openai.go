package builtins

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/runner-dev/runner/runner"
)

const (
	// openAIBaseURL is the API root when the endpoint names none.
	openAIBaseURL = "https://api.openai.com/v1"
	// openAISchemaName names a structured-output schema that has no name;
	// the API requires one.
	openAISchemaName = "response"
)

// NewOpenAI returns a Provider for the Chat Completions API of OpenAI or
// any compatible server (Ollama, vLLM, LiteLLM, llama.cpp): e.BaseURL is
// the API root including /v1 (default https://api.openai.com/v1). The key,
// when there is one, goes out as a bearer token. It reads no OPENAI_*
// environment variables: no base URL, key, organization or extra headers
// meant for OpenAI go to whatever server e.BaseURL names.
func NewOpenAI(e Endpoint) runner.Provider {
	header := http.Header{}
	if e.APIKey != "" {
		header.Set("Authorization", "Bearer "+e.APIKey)
	}
	return &openAIProvider{newAPIClient("openai", e, openAIBaseURL, "/chat/completions", header, openAIErrorMessage)}
}

// openAIProvider is a runner.Provider for the Chat Completions API.
type openAIProvider struct{ *apiClient }

// Chat sends req as one chat completion, streamed when req.OnToken is set.
func (p *openAIProvider) Chat(ctx context.Context, req *runner.ChatRequest) (*runner.ChatResponse, error) {
	params, err := openAIParams(req)
	if err != nil {
		return nil, p.invalid(req.Model, err)
	}
	body, err := encodeJSON(params)
	if err != nil {
		return nil, p.invalid(req.Model, err)
	}
	var resp *runner.ChatResponse
	if params.Stream {
		resp, err = p.stream(ctx, body, req.OnToken)
	} else {
		resp, err = p.complete(ctx, body)
	}
	if err != nil {
		return nil, p.fail(req.Model, err)
	}
	return resp, nil
}

// complete makes an unstreamed call. A refusal, when there is no
// content, stands in for it.
func (p *openAIProvider) complete(ctx context.Context, body []byte) (*runner.ChatResponse, error) {
	var c openAICompletion
	if err := p.call(ctx, body, &c); err != nil {
		return nil, err
	}
	if len(c.Choices) == 0 {
		return nil, errors.New("response has no choices")
	}
	ch := c.Choices[0]
	msg := runner.Message{Role: "assistant", Content: cmp.Or(ch.Message.Content, ch.Message.Refusal)}
	for _, tc := range ch.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, runner.ToolCallRequest{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
	}
	return &runner.ChatResponse{Message: msg, FinishReason: ch.FinishReason, Usage: c.Usage.usage()}, nil
}

// stream makes a streamed call, passing each text chunk to onToken, and
// assembles the whole reply. A stream that ends without [DONE] was cut
// short, and is an error rather than a short reply.
func (p *openAIProvider) stream(ctx context.Context, body []byte, onToken func(string)) (*runner.ChatResponse, error) {
	var acc openAIStream
	for ev, err := range p.events(ctx, body) {
		switch {
		case err != nil:
			return nil, err
		case bytes.HasPrefix(ev.data, []byte("[DONE]")):
			return acc.response(), nil
		}
		var c openAIChunk
		if err := json.Unmarshal(ev.data, &c); err != nil {
			return nil, fmt.Errorf("stream: %w", err)
		}
		if c.Error != nil {
			return nil, p.streamError(ev.data)
		}
		if err := acc.add(&c, onToken); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("stream ended before [DONE]")
}

// openAICompletion is what the provider reads of a chat completion.
type openAICompletion struct {
	Choices []struct {
		Message struct {
			Content   string           `json:"content"`
			Refusal   string           `json:"refusal"`
			ToolCalls []openAIToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage openAIUsage `json:"usage"`
}

// openAIChunk is what the provider reads of a chunk of a streamed chat
// completion, or of an error sent in its place.
type openAIChunk struct {
	Choices []struct {
		Delta struct {
			Content   string `json:"content"`
			Refusal   string `json:"refusal"`
			ToolCalls []struct {
				Index    int                `json:"index"`
				ID       string             `json:"id"`
				Function openAIFunctionCall `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openAIUsage `json:"usage"` // nil when absent or null
	// Error is set, even to null, on an error chunk.
	Error json.RawMessage `json:"error"`
}

// openAIUsage is a reply's token counts.
type openAIUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// usage converts token counts. OpenAI counts cached tokens in the prompt
// tokens; runner.Usage keeps them apart.
func (u openAIUsage) usage() runner.Usage {
	return runner.Usage{
		InputTokens:       u.PromptTokens - u.PromptTokensDetails.CachedTokens,
		OutputTokens:      u.CompletionTokens,
		CachedInputTokens: u.PromptTokensDetails.CachedTokens,
	}
}

// openAIStream assembles a streamed reply from its chunks. Chunk ids are
// not compared, and usage is the last chunk's rather than a sum: some
// compatible servers repeat the running total in every chunk.
type openAIStream struct {
	text, refusal strings.Builder
	calls         []runner.ToolCallRequest // by index
	finish        string
	usage         openAIUsage
}

// add takes in one chunk; tool calls come in pieces keyed by index, the
// first piece with the id and each with more of the name and arguments.
func (s *openAIStream) add(c *openAIChunk, onToken func(string)) error {
	if c.Usage != nil {
		s.usage = *c.Usage
	}
	if len(c.Choices) == 0 {
		return nil
	}
	ch := c.Choices[0]
	if d := ch.Delta.Content; d != "" {
		s.text.WriteString(d)
		onToken(d)
	}
	s.refusal.WriteString(ch.Delta.Refusal)
	for _, tc := range ch.Delta.ToolCalls {
		i := tc.Index
		if i < 0 || i > len(s.calls) {
			return fmt.Errorf("stream: tool call index %d out of order", tc.Index)
		}
		if i == len(s.calls) {
			s.calls = append(s.calls, runner.ToolCallRequest{})
		}
		s.calls[i].ID = cmp.Or(s.calls[i].ID, tc.ID)
		s.calls[i].Name += tc.Function.Name
		s.calls[i].Args += tc.Function.Arguments
	}
	s.finish = cmp.Or(ch.FinishReason, s.finish)
	return nil
}

// response is the assembled reply; a refusal stands in for missing
// content, as in complete.
func (s *openAIStream) response() *runner.ChatResponse {
	msg := runner.Message{Role: "assistant", Content: cmp.Or(s.text.String(), s.refusal.String()), ToolCalls: s.calls}
	return &runner.ChatResponse{Message: msg, FinishReason: s.finish, Usage: s.usage.usage()}
}

// openAIChatParams is the body of a Chat Completions request. Unset
// parameters are left out, leaving the server's defaults.
//
// The limit goes out as max_tokens, not max_completion_tokens: Ollama,
// vLLM and llama.cpp honour max_tokens (some ignore the newer name),
// though OpenAI's reasoning models (o-series, gpt-5) refuse it.
type openAIChatParams struct {
	Model          string                `json:"model"`
	Messages       []openAIMessageParam  `json:"messages,omitzero"`
	Tools          []openAIToolParam     `json:"tools,omitzero"`
	ResponseFormat *openAIResponseFormat `json:"response_format,omitempty"`
	Temperature    *float64              `json:"temperature,omitempty"`
	TopP           *float64              `json:"top_p,omitempty"`
	MaxTokens      int                   `json:"max_tokens,omitzero"`
	Stop           []string              `json:"stop,omitzero"`
	Seed           *int64                `json:"seed,omitempty"`
	Stream         bool                  `json:"stream,omitzero"`
	StreamOptions  *openAIStreamOptions  `json:"stream_options,omitempty"`
}

// openAIMessageParam is one message of a request. Content is left out
// only of an assistant message with tool calls and no text; ToolCallID is
// set on tool messages.
type openAIMessageParam struct {
	Role       string           `json:"role"`
	Content    *string          `json:"content,omitempty"`
	Name       string           `json:"name,omitzero"`
	ToolCalls  []openAIToolCall `json:"tool_calls,omitzero"`
	ToolCallID *string          `json:"tool_call_id,omitempty"`
}

// openAIToolCall is a function call of an assistant message, in a
// request or a reply.
type openAIToolCall struct {
	ID       string             `json:"id"`
	Type     string             `json:"type"`
	Function openAIFunctionCall `json:"function"`
}

// openAIFunctionCall is the function a tool call calls and its arguments,
// the JSON text the model produced.
type openAIFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// openAIToolParam is a function tool offered to the model.
type openAIToolParam struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitzero"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

// openAIResponseFormat asks for a reply matching a JSON schema, not
// enforced strictly (strict mode refuses many ordinary schemas).
type openAIResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema struct {
		Name   string         `json:"name"`
		Schema map[string]any `json:"schema"`
		Strict bool           `json:"strict"`
	} `json:"json_schema"`
}

// openAIStreamOptions asks a stream to end with a usage chunk.
type openAIStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// openAIParams builds the request for req, streamed when req.OnToken is
// set. Message.Cache is not used: OpenAI caches prompt prefixes without
// breakpoints.
func openAIParams(req *runner.ChatRequest) (*openAIChatParams, error) {
	params := &openAIChatParams{Model: req.Model}
	for i, m := range req.Messages {
		msg, err := openAIMessage(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		params.Messages = append(params.Messages, msg)
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, openAITool(t))
	}
	if s := req.Schema; s != nil {
		params.ResponseFormat = &openAIResponseFormat{Type: "json_schema"}
		params.ResponseFormat.JSONSchema.Name = cmp.Or(s.Name, openAISchemaName)
		params.ResponseFormat.JSONSchema.Schema = s.Schema
	}
	openAIApplyParams(params, req.Params)
	if req.OnToken != nil {
		params.Stream = true
		params.StreamOptions = &openAIStreamOptions{IncludeUsage: true}
	}
	return params, nil
}

// openAIApplyParams sets the sampling parameters that pr sets.
func openAIApplyParams(params *openAIChatParams, pr runner.Params) {
	params.Temperature, params.TopP, params.Seed = pr.Temperature, pr.TopP, pr.Seed
	if pr.MaxTokens > 0 {
		params.MaxTokens = pr.MaxTokens
	}
	if len(pr.Stop) > 0 {
		params.Stop = pr.Stop
	}
}

// openAIMessage converts one message; Name, when set, is kept where the
// API has it (system, user and assistant messages).
func openAIMessage(m runner.Message) (openAIMessageParam, error) {
	msg := openAIMessageParam{Role: m.Role, Content: &m.Content}
	switch m.Role {
	case "system", "user":
		msg.Name = m.Name
	case "assistant":
		msg.Name = m.Name
		if m.Content == "" && len(m.ToolCalls) > 0 {
			msg.Content = nil
		}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, openAIToolCall{ID: c.ID, Type: "function", Function: openAIFunctionCall{Name: c.Name, Arguments: c.Args}})
		}
	case "tool":
		msg.ToolCallID = &m.ToolCallID
	default:
		return msg, fmt.Errorf("role %q is not system, user, assistant or tool", m.Role)
	}
	return msg, nil
}

// openAITool is a function tool; nil parameters take no arguments.
func openAITool(t runner.ToolSchema) openAIToolParam {
	tool := openAIToolParam{Type: "function"}
	tool.Function.Name, tool.Function.Description, tool.Function.Parameters = t.Name, t.Description, t.Parameters
	if t.Parameters == nil {
		tool.Function.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return tool
}

// openAIErrorMessage is the server's message in an error body or error
// chunk: {"error":{"message":…}}, {"error":"…"} or {"message":…}; "" when
// it has none.
func openAIErrorMessage(raw []byte) string {
	var body struct {
		Error   any
		Message string
	}
	var msg string
	if json.Unmarshal(raw, &body) == nil {
		switch e := body.Error.(type) {
		case string:
			msg = e
		case map[string]any:
			msg, _ = e["message"].(string)
		}
	}
	return cmp.Or(msg, body.Message)
}
