package builtins

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/runner-dev/runner/runner"
)

const (
	// anthropicMaxTokens is max_tokens when Params.MaxTokens is zero: the
	// Messages API requires one.
	anthropicMaxTokens = 4096
	// anthropicRespondTool names the structured-output tool when the
	// schema has no name.
	anthropicRespondTool = "respond"
	// anthropicErrorBodyMax bounds a non-JSON error body quoted in an error.
	anthropicErrorBodyMax = 200
)

// NewAnthropic returns a Provider for Anthropic's Messages API. e.BaseURL
// is the API root without /v1 (default https://api.anthropic.com). The
// SDK does not retry (the calling node's retry policy does) and reads no
// ANTHROPIC_* environment variables: e is all it uses.
func NewAnthropic(e Endpoint) runner.Provider {
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(e.APIKey),
		option.WithMaxRetries(0),
	}
	if e.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(e.BaseURL))
	}
	if e.Client != nil {
		opts = append(opts, option.WithHTTPClient(e.Client))
	}
	return &anthropicProvider{client: anthropic.NewClient(opts...), key: e.APIKey, redact: runner.NewRedactor(e.APIKey)}
}

// anthropicProvider is a runner.Provider over the Anthropic SDK.
type anthropicProvider struct {
	client anthropic.Client
	key    string
	redact *runner.Redactor // hides the API key in errors
}

// Secrets returns the API key, for the graph's Redactor.
func (p *anthropicProvider) Secrets() []string { return []string{p.key} }

// Chat sends req as one Messages API call, streamed when req.OnToken is
// set or when the SDK refuses a long call without streaming.
func (p *anthropicProvider) Chat(ctx context.Context, req *runner.ChatRequest) (*runner.ChatResponse, error) {
	params, err := anthropicParams(req)
	if err != nil {
		return nil, runner.Permanent(&runner.ProviderError{Provider: "anthropic", Model: req.Model, Err: err})
	}
	var msg *anthropic.Message
	if req.OnToken != nil || anthropicMustStream(params) {
		msg, err = p.stream(ctx, params, req.OnToken)
	} else {
		msg, err = p.client.Messages.New(ctx, params)
	}
	if err != nil {
		return nil, p.fail(req.Model, err)
	}
	return anthropicResponse(msg, anthropicSchemaTool(req.Schema)), nil
}

// anthropicMustStream reports whether the SDK refuses params without
// streaming, as it does when max_tokens suggests a call longer than ten
// minutes.
func anthropicMustStream(params anthropic.MessageNewParams) bool {
	_, err := anthropic.CalculateNonStreamingTimeout(int(params.MaxTokens), params.Model, nil)
	return err != nil
}

// stream makes a streamed call, passing each text chunk to onToken (when
// set), and assembles the whole message. A stream that ends before
// message_stop is an error, not a short reply.
func (p *anthropicProvider) stream(ctx context.Context, params anthropic.MessageNewParams, onToken func(string)) (*anthropic.Message, error) {
	s := p.client.Messages.NewStreaming(ctx, params)
	defer s.Close()
	var msg anthropic.Message
	stopped := false
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, err
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && onToken != nil {
			onToken(ev.Delta.Text)
		}
		stopped = stopped || ev.Type == "message_stop"
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if !stopped {
		return nil, errors.New("stream ended before message_stop")
	}
	return &msg, nil
}

// anthropicParams builds the Messages API request for req.
func anthropicParams(req *runner.ChatRequest) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{
		Model:         anthropic.Model(req.Model),
		MaxTokens:     int64(cmp.Or(req.Params.MaxTokens, anthropicMaxTokens)),
		StopSequences: req.Params.Stop,
	}
	if t := req.Params.Temperature; t != nil {
		params.Temperature = anthropic.Float(*t)
	}
	if t := req.Params.TopP; t != nil {
		params.TopP = anthropic.Float(*t)
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, anthropicTool(t.Name, t.Description, t.Parameters))
	}
	// Structured output uses a forced tool: the schema becomes the input
	// schema of one more tool that tool_choice makes the model call, and
	// that call's input is the reply (see anthropicResponse).
	if name := anthropicSchemaTool(req.Schema); name != "" {
		desc := "Give your answer as this tool's input."
		params.Tools = append(params.Tools, anthropicTool(name, desc, req.Schema.Schema))
		params.ToolChoice = anthropic.ToolChoiceParamOfTool(name)
	}
	var err error
	params.System, params.Messages, err = anthropicMessages(req.Messages)
	return params, err
}

// anthropicSchemaTool is the name of the structured-output tool for
// schema, or "" when there is no schema.
func anthropicSchemaTool(schema *runner.OutputSchema) string {
	if schema == nil {
		return ""
	}
	return cmp.Or(schema.Name, anthropicRespondTool)
}

// anthropicTool is a tool definition; a nil schema takes no arguments.
func anthropicTool(name, desc string, schema map[string]any) anthropic.ToolUnionParam {
	if schema == nil {
		schema = map[string]any{"properties": map[string]any{}}
	}
	tool := &anthropic.ToolParam{Name: name, InputSchema: anthropic.ToolInputSchemaParam{ExtraFields: schema}}
	if desc != "" {
		tool.Description = anthropic.String(desc)
	}
	return anthropic.ToolUnionParam{OfTool: tool}
}

// anthropicMessages splits OpenAI-format messages into Anthropic's system
// blocks and alternating user and assistant turns. The Messages API has no
// system role inside the conversation, so every system message, also one
// appearing later (such as injected skill context), becomes a system
// block, in order.
func anthropicMessages(msgs []runner.Message) ([]anthropic.TextBlockParam, []anthropic.MessageParam, error) {
	var system []anthropic.TextBlockParam
	var turns []anthropic.MessageParam
	for i, m := range msgs {
		if m.Role == "system" {
			system = anthropicSystem(system, m)
			continue
		}
		role, blocks, err := anthropicBlocks(m)
		if err != nil {
			return nil, nil, fmt.Errorf("message %d: %w", i, err)
		}
		turns = anthropicAppendTurn(turns, role, blocks)
	}
	return system, turns, nil
}

// anthropicSystem appends system message m as a text block (the API
// refuses empty ones). A Cache-marked message ends the stable prefix: its
// block carries the cache breakpoint.
func anthropicSystem(system []anthropic.TextBlockParam, m runner.Message) []anthropic.TextBlockParam {
	if m.Content == "" {
		return system
	}
	block := anthropic.TextBlockParam{Text: m.Content}
	if m.Cache {
		block.CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	return append(system, block)
}

// anthropicBlocks is the role and content blocks of a non-system message:
// a tool message is a tool_result in a user turn.
func anthropicBlocks(m runner.Message) (anthropic.MessageParamRole, []anthropic.ContentBlockParamUnion, error) {
	switch m.Role {
	case "user":
		return anthropic.MessageParamRoleUser, anthropicText(m.Content), nil
	case "assistant":
		blocks, err := anthropicAssistant(m)
		return anthropic.MessageParamRoleAssistant, blocks, err
	case "tool":
		result := &anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
		if m.Content != "" {
			result.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
		}
		return anthropic.MessageParamRoleUser, []anthropic.ContentBlockParamUnion{{OfToolResult: result}}, nil
	}
	return "", nil, fmt.Errorf("role %q is not system, user, assistant or tool", m.Role)
}

// anthropicText is a text block, or none for empty text (the API refuses
// empty text blocks).
func anthropicText(text string) []anthropic.ContentBlockParamUnion {
	if text == "" {
		return nil
	}
	return []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(text)}
}

// anthropicAssistant is an assistant message's text and tool_use blocks.
// Empty arguments mean none; other arguments must be a JSON object.
func anthropicAssistant(m runner.Message) ([]anthropic.ContentBlockParamUnion, error) {
	blocks := anthropicText(m.Content)
	for _, c := range m.ToolCalls {
		args := json.RawMessage(cmp.Or(c.Args, "{}"))
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("tool call %s (%s): arguments are not a JSON object: %.80q", c.ID, c.Name, c.Args)
		}
		blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, args, c.Name))
	}
	return blocks, nil
}

// anthropicAppendTurn appends blocks as a turn of role, merged into the
// last turn when that has the same role, as the API wants alternating
// roles. An empty turn is left out.
func anthropicAppendTurn(turns []anthropic.MessageParam, role anthropic.MessageParamRole, blocks []anthropic.ContentBlockParamUnion) []anthropic.MessageParam {
	if len(blocks) == 0 {
		return turns
	}
	if n := len(turns); n > 0 && turns[n-1].Role == role {
		turns[n-1].Content = append(turns[n-1].Content, blocks...)
		return turns
	}
	return append(turns, anthropic.MessageParam{Role: role, Content: blocks})
}

// anthropicResponse converts a reply. The input of a call to schemaTool
// (the structured-output tool, when not "") is the reply's content and
// not a tool call.
//
// Usage: InputTokens counts uncached input plus cache writes (billed at
// about the input rate), CachedInputTokens the cache reads.
func anthropicResponse(msg *anthropic.Message, schemaTool string) *runner.ChatResponse {
	out := runner.Message{Role: "assistant"}
	var text strings.Builder
	structured, isStructured := "", false
	for _, b := range msg.Content {
		switch {
		case b.Type == "text":
			text.WriteString(b.Text)
		case b.Type == "tool_use" && schemaTool != "" && b.Name == schemaTool:
			structured, isStructured = string(b.Input), true
		case b.Type == "tool_use":
			out.ToolCalls = append(out.ToolCalls, runner.ToolCallRequest{ID: b.ID, Name: b.Name, Args: string(b.Input)})
		}
	}
	out.Content = text.String()
	if isStructured {
		out.Content = structured
	}
	u := msg.Usage
	return &runner.ChatResponse{
		Message:      out,
		FinishReason: string(msg.StopReason),
		Usage: runner.Usage{
			InputTokens:       u.InputTokens + u.CacheCreationInputTokens,
			CachedInputTokens: u.CacheReadInputTokens,
			OutputTokens:      u.OutputTokens,
		},
	}
}

// fail wraps err in a ProviderError with the API key redacted. An API
// error keeps its status, Retry-After and the server's message; a 4xx
// other than 408, 409 and 429 is permanent. An error event inside a
// stream (status 200) has no status and is retried.
func (p *anthropicProvider) fail(model string, err error) error {
	pe := &runner.ProviderError{Provider: "anthropic", Model: model}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		err = errors.New(anthropicErrorMessage(apiErr))
		if apiErr.StatusCode >= 400 {
			pe.Status = apiErr.StatusCode
			pe.RetryAfter = retryAfter(apiErr.Response.Header)
		}
	}
	pe.Err = p.redact.Wrap(err.Error(), err)
	return classify(pe)
}

// anthropicErrorMessage is the server's "type: message" from an error
// body, else the start of the body, else the status text.
func anthropicErrorMessage(apiErr *anthropic.Error) string {
	var body struct {
		Error struct{ Type, Message string }
	}
	raw := strings.TrimSpace(apiErr.RawJSON())
	if json.Unmarshal([]byte(raw), &body) == nil && body.Error.Message != "" {
		return strings.TrimPrefix(body.Error.Type+": "+body.Error.Message, ": ")
	}
	if raw != "" {
		return fmt.Sprintf("%.*s", anthropicErrorBodyMax, raw)
	}
	return http.StatusText(apiErr.StatusCode)
}
