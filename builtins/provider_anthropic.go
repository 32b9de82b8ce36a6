package builtins

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/runner-dev/runner/runner"
)

const (
	// anthropicBaseURL is the API root when the endpoint names none.
	anthropicBaseURL = "https://api.anthropic.com"
	// anthropicVersion is the API version the requests are written for.
	anthropicVersion = "2023-06-01"
	// anthropicMaxTokens is max_tokens when Params.MaxTokens is zero: the
	// Messages API requires one.
	anthropicMaxTokens = 4096
	// anthropicRespondTool names the structured-output tool when the
	// schema has no name.
	anthropicRespondTool = "respond"
	// anthropicUnstreamedTimeout is how long an unstreamed call may take,
	// as long as Anthropic's own clients allow one.
	anthropicUnstreamedTimeout = 10 * time.Minute
	// anthropicStreamAbove is the max_tokens above which a call is
	// streamed even without OnToken: at the 128,000 tokens an hour that
	// Anthropic's own clients assume, a longer reply could take more than
	// anthropicUnstreamedTimeout (10 min × 128,000 / 60 min = 21,333
	// tokens), and a long unstreamed call, its connection silent until
	// the whole reply is ready, meets idle-connection timeouts on the way.
	anthropicStreamAbove = 21333
)

// NewAnthropic returns a Provider for Anthropic's Messages API. e.BaseURL
// is the API root without /v1 (default https://api.anthropic.com). It
// reads no ANTHROPIC_* environment variables: e is all it uses.
func NewAnthropic(e Endpoint) runner.Provider {
	header := http.Header{}
	header.Set("X-Api-Key", e.APIKey)
	header.Set("Anthropic-Version", anthropicVersion)
	return &anthropicProvider{newAPIClient("anthropic", e, anthropicBaseURL, "/v1/messages", header, anthropicErrorMessage)}
}

// anthropicProvider is a runner.Provider for the Messages API.
type anthropicProvider struct{ *apiClient }

// Chat sends req as one Messages API call, streamed when req.OnToken is
// set or when max_tokens is above anthropicStreamAbove.
func (p *anthropicProvider) Chat(ctx context.Context, req *runner.ChatRequest) (*runner.ChatResponse, error) {
	params, err := anthropicParams(req)
	if err != nil {
		return nil, p.invalid(req.Model, err)
	}
	params.Stream = req.OnToken != nil || params.MaxTokens > anthropicStreamAbove
	body, err := encodeJSON(params)
	if err != nil {
		return nil, p.invalid(req.Model, err)
	}
	var msg *anthropicMessage
	if params.Stream {
		msg, err = p.stream(ctx, body, req.OnToken)
	} else {
		msg, err = p.complete(ctx, body)
	}
	if err != nil {
		return nil, p.fail(req.Model, err)
	}
	return anthropicResponse(msg, anthropicSchemaTool(req.Schema)), nil
}

// complete makes an unstreamed call, of at most anthropicUnstreamedTimeout.
func (p *anthropicProvider) complete(ctx context.Context, body []byte) (*anthropicMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, anthropicUnstreamedTimeout)
	defer cancel()
	var msg anthropicMessage
	if err := p.call(ctx, body, &msg); err != nil {
		return nil, err
	}
	return &msg, nil
}

// stream makes a streamed call, passing each text chunk to onToken (when
// set), and assembles the whole message. Events without a name and pings
// are skipped. A stream that ends before message_stop is an error, not a
// short reply.
func (p *anthropicProvider) stream(ctx context.Context, body []byte, onToken func(string)) (*anthropicMessage, error) {
	var acc anthropicStream
	for ev, err := range p.events(ctx, body) {
		switch {
		case err != nil:
			return nil, err
		case ev.name == "" || ev.name == "ping" || len(ev.data) == 0:
			continue
		}
		var e anthropicEvent
		if err := json.Unmarshal(ev.data, &e); err != nil {
			return nil, fmt.Errorf("stream: %w", err)
		}
		if err := acc.add(&e, onToken); err != nil {
			return nil, err
		}
		if e.Type == "message_stop" {
			return acc.message(), nil
		}
	}
	return nil, errors.New("stream ended before message_stop")
}

// anthropicMessage is what the provider reads of a reply.
type anthropicMessage struct {
	Content    []anthropicContent `json:"content"`
	StopReason string             `json:"stop_reason"`
	Usage      anthropicUsage     `json:"usage"`
}

// anthropicContent is a content block of a reply: text or tool_use (other
// types are ignored).
type anthropicContent struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// anthropicUsage is a reply's token counts.
type anthropicUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// anthropicEvent is one event of a streamed reply; which fields are set
// depends on its type.
type anthropicEvent struct {
	Type         string           `json:"type"`
	Message      anthropicMessage `json:"message"`       // message_start
	Index        int              `json:"index"`         // content_block_*
	ContentBlock anthropicContent `json:"content_block"` // content_block_start
	Delta        struct {
		Type        string `json:"type"`         // content_block_delta
		Text        string `json:"text"`         // text_delta
		PartialJSON string `json:"partial_json"` // input_json_delta
		StopReason  string `json:"stop_reason"`  // message_delta
	} `json:"delta"`
	// Usage, in message_delta, holds running totals; the input counts
	// are nil when absent or null.
	Usage struct {
		OutputTokens             int64  `json:"output_tokens"`
		InputTokens              *int64 `json:"input_tokens"`
		CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// anthropicStream assembles a streamed message from its events.
type anthropicStream struct {
	blocks     []anthropicStreamBlock
	stopReason string
	usage      anthropicUsage
}

// anthropicStreamBlock is a content block being streamed.
type anthropicStreamBlock struct {
	typ, id, name string
	text, input   []byte
}

// add takes in one event, passing a text delta to onToken (when set).
// Blocks start in index order; deltas and stops name a started block.
// message_delta's counts are totals: they replace, not add to, the
// counts so far, the input counts only when present.
func (s *anthropicStream) add(e *anthropicEvent, onToken func(string)) error {
	switch e.Type {
	case "message_start":
		*s = anthropicStream{stopReason: e.Message.StopReason, usage: e.Message.Usage}
		for _, c := range e.Message.Content {
			s.start(c)
		}
	case "message_delta":
		s.stopReason = e.Delta.StopReason
		u := &e.Usage
		s.usage.OutputTokens = u.OutputTokens
		s.usage.InputTokens = valueOr(u.InputTokens, s.usage.InputTokens)
		s.usage.CacheCreationInputTokens = valueOr(u.CacheCreationInputTokens, s.usage.CacheCreationInputTokens)
		s.usage.CacheReadInputTokens = valueOr(u.CacheReadInputTokens, s.usage.CacheReadInputTokens)
	case "content_block_start":
		if e.Index != len(s.blocks) {
			return fmt.Errorf("stream: content block %d started, expected block %d", e.Index, len(s.blocks))
		}
		s.start(e.ContentBlock)
	case "content_block_delta", "content_block_stop":
		if e.Index < 0 || e.Index >= len(s.blocks) {
			return fmt.Errorf("stream: %s for content block %d, which has not started", e.Type, e.Index)
		}
		if e.Type == "content_block_delta" {
			s.blocks[e.Index].add(e, onToken)
		}
	}
	return nil
}

// start begins content block c.
func (s *anthropicStream) start(c anthropicContent) {
	s.blocks = append(s.blocks, anthropicStreamBlock{typ: c.Type, id: c.ID, name: c.Name, text: []byte(c.Text), input: c.Input})
}

// add takes in a content_block_delta. A tool_use block starts with input
// {}, which its first piece of JSON replaces.
func (b *anthropicStreamBlock) add(e *anthropicEvent, onToken func(string)) {
	switch e.Delta.Type {
	case "text_delta":
		b.text = append(b.text, e.Delta.Text...)
		if onToken != nil {
			onToken(e.Delta.Text)
		}
	case "input_json_delta":
		if e.Delta.PartialJSON == "" {
			return
		}
		if string(b.input) == "{}" {
			b.input = b.input[:0]
		}
		b.input = append(b.input, e.Delta.PartialJSON...)
	}
}

// message is the assembled message.
func (s *anthropicStream) message() *anthropicMessage {
	msg := &anthropicMessage{StopReason: s.stopReason, Usage: s.usage}
	for _, b := range s.blocks {
		msg.Content = append(msg.Content, anthropicContent{Type: b.typ, Text: string(b.text), ID: b.id, Name: b.name, Input: b.input})
	}
	return msg
}

// valueOr is *p, or def when p is nil.
func valueOr(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

// anthropicRequest is the body of a Messages API request.
type anthropicRequest struct {
	Model         string               `json:"model"`
	MaxTokens     int                  `json:"max_tokens"`
	System        []anthropicTextBlock `json:"system,omitzero"`
	Messages      []anthropicTurn      `json:"messages,omitzero"`
	Tools         []anthropicToolParam `json:"tools,omitzero"`
	ToolChoice    *anthropicToolChoice `json:"tool_choice,omitempty"`
	Temperature   *float64             `json:"temperature,omitempty"`
	TopP          *float64             `json:"top_p,omitempty"`
	StopSequences []string             `json:"stop_sequences,omitzero"`
	Stream        bool                 `json:"stream,omitzero"`
}

// anthropicTurn is a user or assistant turn: its blocks are
// anthropicTextBlock, anthropicToolUse and anthropicToolResult values.
type anthropicTurn struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

// anthropicTextBlock is a text block; CacheControl, on a system block, makes
// it a cache breakpoint.
type anthropicTextBlock struct {
	Type         string                 `json:"type"`
	Text         string                 `json:"text"`
	CacheControl *anthropicCacheControl `json:"cache_control,omitempty"`
}

// anthropicCacheControl marks a prompt-cache breakpoint.
type anthropicCacheControl struct {
	Type string `json:"type"`
}

// anthropicToolUse is a tool call of an assistant turn.
type anthropicToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// anthropicToolResult is a tool's result, in a user turn; it has no
// content when the result is empty.
type anthropicToolResult struct {
	Type      string               `json:"type"`
	ToolUseID string               `json:"tool_use_id"`
	Content   []anthropicTextBlock `json:"content,omitzero"`
}

// anthropicToolParam is a tool offered to the model.
type anthropicToolParam struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitzero"`
	InputSchema map[string]any `json:"input_schema"`
}

// anthropicToolChoice makes the model call the tool named.
type anthropicToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// anthropicParams builds the Messages API request for req, unstreamed.
func anthropicParams(req *runner.ChatRequest) (*anthropicRequest, error) {
	params := &anthropicRequest{
		Model:         req.Model,
		MaxTokens:     cmp.Or(req.Params.MaxTokens, anthropicMaxTokens),
		StopSequences: req.Params.Stop,
		Temperature:   req.Params.Temperature,
		TopP:          req.Params.TopP,
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
		params.ToolChoice = &anthropicToolChoice{Type: "tool", Name: name}
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
// The input schema is an object's unless the schema says otherwise.
func anthropicTool(name, desc string, schema map[string]any) anthropicToolParam {
	if schema == nil {
		schema = map[string]any{"properties": map[string]any{}}
	}
	input := map[string]any{"type": "object"}
	maps.Copy(input, schema)
	return anthropicToolParam{Name: name, Description: desc, InputSchema: input}
}

// anthropicMessages splits OpenAI-format messages into Anthropic's system
// blocks and alternating user and assistant turns. The Messages API has no
// system role inside the conversation, so every system message, also one
// appearing later (such as injected skill context), becomes a system
// block, in order.
func anthropicMessages(msgs []runner.Message) ([]anthropicTextBlock, []anthropicTurn, error) {
	var system []anthropicTextBlock
	var turns []anthropicTurn
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
func anthropicSystem(system []anthropicTextBlock, m runner.Message) []anthropicTextBlock {
	if m.Content == "" {
		return system
	}
	block := anthropicTextBlock{Type: "text", Text: m.Content}
	if m.Cache {
		block.CacheControl = &anthropicCacheControl{Type: "ephemeral"}
	}
	return append(system, block)
}

// anthropicBlocks is the role and content blocks of a non-system message:
// a tool message is a tool_result in a user turn.
func anthropicBlocks(m runner.Message) (string, []any, error) {
	switch m.Role {
	case "user":
		return "user", anthropicText(m.Content), nil
	case "assistant":
		blocks, err := anthropicAssistant(m)
		return "assistant", blocks, err
	case "tool":
		result := anthropicToolResult{Type: "tool_result", ToolUseID: m.ToolCallID}
		if m.Content != "" {
			result.Content = []anthropicTextBlock{{Type: "text", Text: m.Content}}
		}
		return "user", []any{result}, nil
	}
	return "", nil, fmt.Errorf("role %q is not system, user, assistant or tool", m.Role)
}

// anthropicText is a text block, or none for empty text (the API
// refuses empty text blocks).
func anthropicText(text string) []any {
	if text == "" {
		return nil
	}
	return []any{anthropicTextBlock{Type: "text", Text: text}}
}

// anthropicAssistant is an assistant message's text and tool_use blocks.
// Empty arguments mean none; other arguments must be a JSON object.
func anthropicAssistant(m runner.Message) ([]any, error) {
	blocks := anthropicText(m.Content)
	for _, c := range m.ToolCalls {
		args := json.RawMessage(cmp.Or(c.Args, "{}"))
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("tool call %s (%s): arguments are not a JSON object: %.80q", c.ID, c.Name, c.Args)
		}
		blocks = append(blocks, anthropicToolUse{Type: "tool_use", ID: c.ID, Name: c.Name, Input: args})
	}
	return blocks, nil
}

// anthropicAppendTurn appends blocks as a turn of role, merged into the
// last turn when that has the same role, as the API wants alternating
// roles. An empty turn is left out.
func anthropicAppendTurn(turns []anthropicTurn, role string, blocks []any) []anthropicTurn {
	if len(blocks) == 0 {
		return turns
	}
	if n := len(turns); n > 0 && turns[n-1].Role == role {
		turns[n-1].Content = append(turns[n-1].Content, blocks...)
		return turns
	}
	return append(turns, anthropicTurn{Role: role, Content: blocks})
}

// anthropicResponse converts a reply. The input of a call to schemaTool
// (the structured-output tool, when not "") is the reply's content and
// not a tool call.
//
// Usage: InputTokens counts uncached input plus cache writes (billed at
// about the input rate), CachedInputTokens the cache reads.
func anthropicResponse(msg *anthropicMessage, schemaTool string) *runner.ChatResponse {
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
		FinishReason: msg.StopReason,
		Usage: runner.Usage{
			InputTokens:       u.InputTokens + u.CacheCreationInputTokens,
			CachedInputTokens: u.CacheReadInputTokens,
			OutputTokens:      u.OutputTokens,
		},
	}
}

// anthropicErrorMessage is the server's "type: message" in an error body
// or error event, or "" when it has none.
func anthropicErrorMessage(raw []byte) string {
	var body struct {
		Error struct{ Type, Message string }
	}
	if json.Unmarshal(raw, &body) == nil && body.Error.Message != "" {
		return strings.TrimPrefix(body.Error.Type+": "+body.Error.Message, ": ")
	}
	return ""
}
