package builtins

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/runner-dev/runner/runner"
)

const (
	// openAISchemaName names a structured-output schema that has no name;
	// the API requires one.
	openAISchemaName = "response"
	// openAIErrorBodyMax bounds an error body quoted in an error.
	openAIErrorBodyMax = 200
)

// NewOpenAI returns a Provider for the Chat Completions API of OpenAI or
// any compatible server (Ollama, vLLM, LiteLLM, llama.cpp): e.BaseURL is
// the API root including /v1 (default https://api.openai.com/v1). The SDK
// does not retry (the calling node's retry policy does) and reads no
// OPENAI_* environment variables: e is all it uses.
func NewOpenAI(e Endpoint) runner.Provider {
	// A bare service, unlike openai.NewClient, reads no OPENAI_*
	// variables: no base URL, key, organization or extra headers meant
	// for OpenAI go to whatever server e.BaseURL names.
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithAPIKey(e.APIKey),
		option.WithMaxRetries(0),
	}
	if e.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(e.BaseURL))
	}
	if e.Client != nil {
		opts = append(opts, option.WithHTTPClient(e.Client))
	}
	return &openAIProvider{chat: openai.NewChatCompletionService(opts...), key: e.APIKey, redact: runner.NewRedactor(e.APIKey)}
}

// openAIProvider is a runner.Provider over the OpenAI SDK.
type openAIProvider struct {
	chat   openai.ChatCompletionService
	key    string
	redact *runner.Redactor // hides the API key in errors
}

// Secrets returns the API key, for the graph's Redactor.
func (p *openAIProvider) Secrets() []string { return []string{p.key} }

// Chat sends req as one chat completion, streamed when req.OnToken is set.
func (p *openAIProvider) Chat(ctx context.Context, req *runner.ChatRequest) (*runner.ChatResponse, error) {
	params, err := openAIParams(req)
	if err != nil {
		return nil, runner.Permanent(&runner.ProviderError{Provider: "openai", Model: req.Model, Err: err})
	}
	var res *http.Response // the HTTP response, for an error's status and body
	var resp *runner.ChatResponse
	if req.OnToken != nil {
		resp, err = p.stream(ctx, params, req.OnToken, &res)
	} else {
		resp, err = p.complete(ctx, params, &res)
	}
	if err != nil {
		return nil, p.fail(req.Model, res, err)
	}
	return resp, nil
}

// complete makes an unstreamed call. A refusal, when there is no
// content, stands in for it.
func (p *openAIProvider) complete(ctx context.Context, params openai.ChatCompletionNewParams, res **http.Response) (*runner.ChatResponse, error) {
	c, err := p.chat.New(ctx, params, option.WithResponseInto(res))
	if err != nil {
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
	return &runner.ChatResponse{Message: msg, FinishReason: ch.FinishReason, Usage: openAIUsage(c.Usage)}, nil
}

// stream makes a streamed call, passing each text chunk to onToken, and
// assembles the whole reply. It is what Completions.NewStreaming does,
// but over a decoder that sees the closing [DONE]: a stream that ends
// without it was cut short, and is an error rather than a short reply.
func (p *openAIProvider) stream(ctx context.Context, params openai.ChatCompletionNewParams, onToken func(string), res **http.Response) (*runner.ChatResponse, error) {
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	_, err := p.chat.New(ctx, params, option.WithJSONSet("stream", true), option.WithResponseBodyInto(res))
	if err != nil {
		return nil, err
	}
	dec := &openAIDoneDecoder{Decoder: ssestream.NewDecoder(*res)}
	s := ssestream.NewStream[openai.ChatCompletionChunk](dec, nil)
	defer s.Close()
	var acc openAIStream
	for s.Next() {
		if err := acc.add(s.Current(), onToken); err != nil {
			return nil, err
		}
	}
	if err := s.Err(); err != nil {
		var serverErr *ssestream.StreamError // an error event, which says so
		if errors.As(err, &serverErr) {
			return nil, err
		}
		return nil, fmt.Errorf("stream: %w", err)
	}
	if !dec.done {
		return nil, errors.New("stream ended before [DONE]")
	}
	return acc.response(), nil
}

// openAIDoneDecoder is an SSE decoder that notes the [DONE] event.
type openAIDoneDecoder struct {
	ssestream.Decoder
	done bool
}

// Next reads the next event, noting whether it is [DONE].
func (d *openAIDoneDecoder) Next() bool {
	ok := d.Decoder.Next()
	if ok && bytes.HasPrefix(d.Event().Data, []byte("[DONE]")) {
		d.done = true
	}
	return ok
}

// openAIStream assembles a streamed reply from its chunks. The SDK's
// ChatCompletionAccumulator is not used: it rejects a stream whose chunks
// carry different ids and sums usage over chunks, where some compatible
// servers repeat the running total in every chunk.
type openAIStream struct {
	text, refusal strings.Builder
	calls         []runner.ToolCallRequest // by index
	finish        string
	usage         openai.CompletionUsage
}

// add takes in one chunk; tool calls come in pieces keyed by index, the
// first piece with the id and each with more of the name and arguments.
func (s *openAIStream) add(c openai.ChatCompletionChunk, onToken func(string)) error {
	if c.JSON.Usage.Valid() {
		s.usage = c.Usage
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
		i := int(tc.Index)
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
	return &runner.ChatResponse{Message: msg, FinishReason: s.finish, Usage: openAIUsage(s.usage)}
}

// openAIUsage converts token counts. OpenAI counts cached tokens in the
// prompt tokens; runner.Usage keeps them apart.
func openAIUsage(u openai.CompletionUsage) runner.Usage {
	return runner.Usage{
		InputTokens:       u.PromptTokens - u.PromptTokensDetails.CachedTokens,
		OutputTokens:      u.CompletionTokens,
		CachedInputTokens: u.PromptTokensDetails.CachedTokens,
	}
}

// openAIParams builds the request for req. Message.Cache is not used:
// OpenAI caches prompt prefixes without breakpoints.
func openAIParams(req *runner.ChatRequest) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: req.Model}
	for i, m := range req.Messages {
		msg, err := openAIMessage(m)
		if err != nil {
			return params, fmt.Errorf("message %d: %w", i, err)
		}
		params.Messages = append(params.Messages, msg)
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, openAITool(t))
	}
	if s := req.Schema; s != nil {
		params.ResponseFormat.OfJSONSchema = &openai.ResponseFormatJSONSchemaParam{
			JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{
				Name: cmp.Or(s.Name, openAISchemaName), Schema: s.Schema, Strict: openai.Bool(false),
			},
		}
	}
	openAIApplyParams(&params, req.Params)
	return params, nil
}

// openAIApplyParams sets the sampling parameters that pr sets.
//
// The limit goes out as max_tokens, not max_completion_tokens: Ollama,
// vLLM and llama.cpp honour max_tokens (some ignore the newer name),
// though OpenAI's reasoning models (o-series, gpt-5) refuse it.
func openAIApplyParams(params *openai.ChatCompletionNewParams, pr runner.Params) {
	if pr.Temperature != nil {
		params.Temperature = openai.Float(*pr.Temperature)
	}
	if pr.TopP != nil {
		params.TopP = openai.Float(*pr.TopP)
	}
	if pr.MaxTokens > 0 {
		params.MaxTokens = openai.Int(int64(pr.MaxTokens))
	}
	if len(pr.Stop) > 0 {
		params.Stop.OfStringArray = pr.Stop
	}
	if pr.Seed != nil {
		params.Seed = openai.Int(*pr.Seed)
	}
}

// openAIMessage converts one message; Name, when set, is kept where the
// API has it (system, user and assistant messages).
func openAIMessage(m runner.Message) (openai.ChatCompletionMessageParamUnion, error) {
	var u openai.ChatCompletionMessageParamUnion
	var name param.Opt[string]
	if m.Name != "" {
		name = openai.String(m.Name)
	}
	switch m.Role {
	case "system":
		u = openai.SystemMessage(m.Content)
		u.OfSystem.Name = name
	case "user":
		u = openai.UserMessage(m.Content)
		u.OfUser.Name = name
	case "assistant":
		u = openAIAssistant(m)
		u.OfAssistant.Name = name
	case "tool":
		u = openai.ToolMessage(m.Content, m.ToolCallID)
	default:
		return u, fmt.Errorf("role %q is not system, user, assistant or tool", m.Role)
	}
	return u, nil
}

// openAIAssistant is an assistant message with its tool calls; its
// content is left out when empty and there are tool calls.
func openAIAssistant(m runner.Message) openai.ChatCompletionMessageParamUnion {
	a := &openai.ChatCompletionAssistantMessageParam{}
	if m.Content != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = openai.String(m.Content)
	}
	for _, c := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       c.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Args},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: a}
}

// openAITool is a function tool; nil parameters take no arguments.
func openAITool(t runner.ToolSchema) openai.ChatCompletionToolUnionParam {
	schema := t.Parameters
	if schema == nil {
		schema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	fn := openai.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
	if t.Description != "" {
		fn.Description = openai.String(t.Description)
	}
	return openai.ChatCompletionFunctionTool(fn)
}

// fail wraps err in a ProviderError with the API key redacted. An HTTP
// error keeps its status, Retry-After and the server's message; a 4xx
// other than 408, 409 and 429 is permanent. An error inside a stream
// (status 200) has no status and is retried.
func (p *openAIProvider) fail(model string, res *http.Response, err error) error {
	pe := &runner.ProviderError{Provider: "openai", Model: model}
	msg := err.Error()
	if res != nil && res.StatusCode >= 400 {
		pe.Status = res.StatusCode
		pe.RetryAfter = retryAfter(res.Header)
		msg = openAIErrorMessage(res)
	}
	pe.Err = p.redact.Wrap(msg, err)
	return classify(pe)
}

// openAIErrorMessage is the server's message from an error body
// ({"error":{"message":…}}, {"error":"…"} or {"message":…}), else the
// start of the body, else the status text. The SDK has read the body and
// left a copy in res.
func openAIErrorMessage(res *http.Response) string {
	raw, _ := io.ReadAll(res.Body)
	raw = bytes.TrimSpace(raw)
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
	if msg = cmp.Or(msg, body.Message); msg != "" {
		return msg
	}
	if len(raw) > 0 {
		return fmt.Sprintf("%.*s", openAIErrorBodyMax, raw)
	}
	return http.StatusText(res.StatusCode)
}
