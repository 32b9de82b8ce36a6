package builtins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// Scripted returns a provider that answers from a script: the run's n-th
// LLM call (ChatRequest.Call) gets the n-th reply, so a resumed run gets
// the replies an uninterrupted one would. A reply can name the node that
// must be calling, carry text, tool calls, a structured output, usage, a
// provider error and a delay. Without scripted usage, tokens are counted
// as a quarter of the characters sent and received.
func Scripted(replies []dsl.Reply) runner.Provider { return scripted(replies) }

type scripted []dsl.Reply

// Chat returns the reply for the request's call number.
func (s scripted) Chat(ctx context.Context, req *runner.ChatRequest) (*runner.ChatResponse, error) {
	fail := func(status int, err error) error {
		return &runner.ProviderError{Provider: "scripted", Model: req.Model, Status: status, Err: err}
	}
	if req.Call >= len(s) {
		return nil, runner.Permanent(fail(0, fmt.Errorf("no reply left for LLM call %d (node %s): the script has %d replies", req.Call+1, req.Node, len(s))))
	}
	r := s[req.Call]
	if r.Node != "" && r.Node != req.Node {
		return nil, runner.Permanent(fail(0, fmt.Errorf("reply %d of the script is for node %s, but node %s is calling", req.Call+1, r.Node, req.Node)))
	}
	if err := runner.Sleep(ctx, r.Delay); err != nil {
		return nil, fail(0, err)
	}
	if e := r.Error; e != nil {
		pe := &runner.ProviderError{Provider: "scripted", Model: req.Model, Status: e.Status, RetryAfter: e.RetryAfter, Err: errors.New(e.Message)}
		return nil, classify(pe)
	}
	msg, err := scriptedMessage(r, req.Call)
	if err != nil {
		return nil, runner.Permanent(fail(0, err))
	}
	stream(req.OnToken, msg.Content)
	return &runner.ChatResponse{Message: msg, Usage: scriptedUsage(r, req, msg), FinishReason: finish(msg)}, nil
}

// scriptedMessage builds the assistant message of reply r.
func scriptedMessage(r dsl.Reply, call int) (runner.Message, error) {
	msg := runner.Message{Role: "assistant", Content: r.Text}
	if r.Output != nil {
		b, err := json.Marshal(runner.NormalizeJSON(r.Output))
		if err != nil {
			return msg, fmt.Errorf("reply %d: output: %v", call+1, err)
		}
		msg.Content = string(b)
	}
	for i, tc := range r.ToolCalls {
		args, ok := tc.Args.(string)
		if !ok {
			if tc.Args == nil {
				tc.Args = map[string]any{}
			}
			b, err := json.Marshal(runner.NormalizeJSON(tc.Args))
			if err != nil {
				return msg, fmt.Errorf("reply %d: tool call %s: %v", call+1, tc.Name, err)
			}
			args = string(b)
		}
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", call+1, i+1)
		}
		msg.ToolCalls = append(msg.ToolCalls, runner.ToolCallRequest{ID: id, Name: tc.Name, Args: args})
	}
	return msg, nil
}

func scriptedUsage(r dsl.Reply, req *runner.ChatRequest, msg runner.Message) runner.Usage {
	if u := r.Usage; u != nil {
		return runner.Usage{InputTokens: u.Input, OutputTokens: u.Output, CachedInputTokens: u.Cached}
	}
	in := 0
	for _, m := range req.Messages {
		in += len(m.Content)
	}
	out := len(msg.Content)
	for _, tc := range msg.ToolCalls {
		out += len(tc.Name) + len(tc.Args)
	}
	return runner.Usage{InputTokens: int64(in+3) / 4, OutputTokens: int64(out+3) / 4}
}

func finish(msg runner.Message) string {
	if len(msg.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// stream sends text to onToken word by word, as a streaming server would.
func stream(onToken func(string), text string) {
	if onToken == nil {
		return
	}
	for text != "" {
		i := strings.IndexByte(text[1:], ' ') + 1
		if i == 0 {
			i = len(text)
		}
		onToken(text[:i])
		text = text[i:]
	}
}
