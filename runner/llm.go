package runner

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Provider is an LLM endpoint: it answers one chat request. Providers do
// not retry; the calling node's retry policy does, honouring
// ProviderError.RetryAfter.
type Provider interface {
	Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error)
}

// ChatRequest is one LLM call.
type ChatRequest struct {
	// Model is the provider's model id.
	Model    string
	Messages []Message
	Tools    []ToolSchema
	// Schema, when set, asks for a structured reply: the reply's Content
	// is a JSON document meant to satisfy it.
	Schema *OutputSchema
	Params Params
	// OnToken, when set, asks for a streamed reply and receives each text
	// chunk as it arrives; the response is the assembled whole.
	OnToken func(text string)
	// Node is the calling node and Call the run's LLM call number (from
	// 0, counting every attempt); a scripted provider picks its reply by
	// them, so a resumed run gets the replies an uninterrupted one would.
	Node string
	Call int
}

// Message is one chat message in the OpenAI format the state keeps.
type Message struct {
	Role       string            `json:"role"` // system, user, assistant, tool
	Content    string            `json:"content"`
	ToolCalls  []ToolCallRequest `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
	Name       string            `json:"name,omitempty"`
	// Cache marks the end of the stable prompt prefix: a provider with
	// prompt caching puts a cache breakpoint after this message.
	Cache bool `json:"cache,omitempty"`
}

// ToolCallRequest is a tool call an assistant message asks for; Args is
// the raw JSON text the model produced.
type ToolCallRequest struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"arguments"`
}

// ToolSchema is a tool as the model sees it.
type ToolSchema struct {
	Name        string
	Description string
	Parameters  map[string]any // JSON Schema of the arguments
}

// OutputSchema is the JSON Schema a structured reply must satisfy.
type OutputSchema struct {
	Name   string
	Schema map[string]any
}

// Params are request parameters; zero values leave the provider's
// defaults.
type Params struct {
	Temperature *float64 `yaml:"temperature" json:"temperature,omitempty"`
	TopP        *float64 `yaml:"top_p" json:"top_p,omitempty"`
	MaxTokens   int      `yaml:"max_tokens" json:"max_tokens,omitempty"`
	Stop        []string `yaml:"stop" json:"stop,omitempty"`
	Seed        *int64   `yaml:"seed" json:"seed,omitempty"`
}

// ChatResponse is an LLM's reply.
type ChatResponse struct {
	Message      Message
	Usage        Usage
	FinishReason string
}

// Usage is the token count a provider reports for one call. The three
// counts are disjoint: InputTokens excludes the cached input tokens, so
// the total input is InputTokens + CachedInputTokens.
type Usage struct {
	InputTokens       int64 `json:"input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
}

// ProviderError is a failed LLM call: which provider and model, the HTTP
// status when there was one, and how long the server asked us to wait.
type ProviderError struct {
	Provider   string
	Model      string
	Status     int           // 0 when no HTTP response was read
	RetryAfter time.Duration // from a Retry-After header
	Err        error
}

func (e *ProviderError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s model %s: HTTP %d: %v", e.Provider, e.Model, e.Status, e.Err)
	}
	return fmt.Sprintf("%s model %s: %v", e.Provider, e.Model, e.Err)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// retryAfter is the wait a provider asked for, if err carries one.
func retryAfter(err error) time.Duration {
	if pe, ok := errors.AsType[*ProviderError](err); ok {
		return pe.RetryAfter
	}
	return 0
}
