package builtins

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// a2aTool calls a remote agent over A2A (JSON-RPC, with the a2a-go
// client): it sends args.message as text and args.data as data, in the
// conversation args.context_id and answering the task args.task_id when
// they are given, waits for the agent's answer and returns its text with
// the task's state, so an input-required task can be answered by a next
// call.
type a2aTool struct {
	name string
	def  *dsl.A2ADef
}

// Call sends the message and maps the agent's answer.
func (t *a2aTool) Call(ctx context.Context, call *runner.ToolCall) (any, error) {
	var parts a2a.ContentParts
	if text, _ := call.Args["message"].(string); text != "" {
		parts = append(parts, a2a.TextPart{Text: text})
	}
	if data, ok := call.Args["data"].(map[string]any); ok {
		parts = append(parts, a2a.DataPart{Data: data})
	}
	if len(parts) == 0 {
		return nil, runner.Permanent(fmt.Errorf("a2a tool %s: args.message is empty; give the text to send", t.name))
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, parts...)
	msg.ContextID, _ = call.Args["context_id"].(string)
	if id, _ := call.Args["task_id"].(string); id != "" {
		msg.TaskID = a2a.TaskID(id)
	}
	hc := &http.Client{Transport: http.DefaultTransport}
	if t.def.APIKeyEnv != "" {
		key := os.Getenv(t.def.APIKeyEnv)
		if key == "" {
			return nil, runner.Permanent(fmt.Errorf("a2a tool %s: %s is not set; export the remote agent's API key in it", t.name, t.def.APIKeyEnv))
		}
		hc.Transport = bearer{key: key, next: http.DefaultTransport}
	}
	client, err := a2aclient.NewFromEndpoints(ctx, []a2a.AgentInterface{{URL: t.def.URL, Transport: a2a.TransportProtocolJSONRPC}},
		a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		return nil, fmt.Errorf("a2a tool %s: %w", t.name, err)
	}
	defer client.Destroy()
	blocking := true
	res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg, Config: &a2a.MessageSendConfig{Blocking: &blocking}})
	if err != nil {
		return nil, fmt.Errorf("a2a tool %s: %s: %w", t.name, t.def.URL, err)
	}
	return a2aAnswer(res)
}

// a2aAnswer is the tool's output for an agent's answer: a message, or a
// task with its state, status message and artifacts.
func a2aAnswer(res a2a.SendMessageResult) (map[string]any, error) {
	switch r := res.(type) {
	case *a2a.Message:
		return map[string]any{"text": partsText(r.Parts), "state": string(a2a.TaskStateCompleted), "task_id": string(r.TaskID),
			"context_id": r.ContextID}, nil
	case *a2a.Task:
		var texts []string
		if r.Status.Message != nil {
			texts = append(texts, partsText(r.Status.Message.Parts))
		}
		for _, a := range r.Artifacts {
			texts = append(texts, partsText(a.Parts))
		}
		return map[string]any{"text": strings.Join(texts, "\n"), "state": string(r.Status.State), "task_id": string(r.ID),
			"context_id": r.ContextID}, nil
	}
	return nil, errors.New("a2a: the agent answered neither a message nor a task")
}

// partsText joins the text parts of a message or an artifact.
func partsText(parts a2a.ContentParts) string {
	var texts []string
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.TextPart:
			texts = append(texts, p.Text)
		case *a2a.TextPart:
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// bearer sends its key as a bearer token with every request.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}
