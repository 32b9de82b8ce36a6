package server

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/runner-dev/runner/runner"
)

// runRequest is the body that creates a run.
type runRequest struct {
	AssistantID string          `json:"assistant_id"`
	Input       json.RawMessage `json:"input"`
	Command     *struct {
		Resume json.RawMessage `json:"resume"`
		Update json.RawMessage `json:"update"`
		Goto   json.RawMessage `json:"goto"`
	} `json:"command"`
	StreamMode        any    `json:"stream_mode"`
	InterruptBefore   any    `json:"interrupt_before"`
	InterruptAfter    any    `json:"interrupt_after"`
	MultitaskStrategy string `json:"multitask_strategy"`
	IfNotExists       string `json:"if_not_exists"`
	OnDisconnect      string `json:"on_disconnect"`
	OnCompletion      string `json:"on_completion"`
	CheckpointID      string `json:"checkpoint_id"`
	Checkpoint        *struct {
		CheckpointID string `json:"checkpoint_id"`
	} `json:"checkpoint"`
	Webhook      string         `json:"webhook"`
	AfterSeconds float64        `json:"after_seconds"`
	Metadata     map[string]any `json:"metadata"`
	Config       *struct {
		RecursionLimit int `json:"recursion_limit"`
	} `json:"config"`

	input  map[string]any // decoded, in runner's message form
	resume any            // command.resume, decoded
	modes  []string
}

// Stream modes runner produces.
var streamModes = []string{"values", "updates", "messages", "messages-tuple", "debug", "custom"}

// parseRunRequest decodes and checks a run's body: what runner cannot
// honour is refused with a 422 saying so, not ignored.
func parseRunRequest(r *http.Request) (*runRequest, error) {
	q := &runRequest{}
	if err := decodeBody(r, q); err != nil {
		return nil, err
	}
	if q.AssistantID == "" {
		return nil, problemf(http.StatusUnprocessableEntity, "assistant_id is required")
	}
	if err := q.decodeValues(); err != nil {
		return nil, err
	}
	if err := q.parseModes(); err != nil {
		return nil, err
	}
	unsupported := func(what string) error {
		return problemf(http.StatusUnprocessableEntity, "%s is not supported by runner's runtime", what)
	}
	switch {
	case present(q.InterruptBefore) || present(q.InterruptAfter):
		return nil, unsupported("interrupt_before/interrupt_after (pause with a require_hitl rule or an interrupt node instead)")
	case q.Command != nil && (hasJSON(q.Command.Update) || hasJSON(q.Command.Goto)):
		return nil, unsupported("command.update/command.goto (edit the state with POST /threads/{id}/state)")
	case q.Webhook != "":
		return nil, unsupported("webhook")
	case q.AfterSeconds > 0:
		return nil, unsupported("after_seconds (delayed runs)")
	case q.MultitaskStrategy == "rollback":
		return nil, unsupported("multitask_strategy rollback (checkpoints are never rolled back; use interrupt)")
	case !slices.Contains([]string{"", "reject", "enqueue", "interrupt"}, q.MultitaskStrategy):
		return nil, problemf(http.StatusUnprocessableEntity, "unknown multitask_strategy %q", q.MultitaskStrategy)
	case !slices.Contains([]string{"", "cancel", "continue"}, q.OnDisconnect):
		return nil, problemf(http.StatusUnprocessableEntity, "unknown on_disconnect %q", q.OnDisconnect)
	}
	if q.MultitaskStrategy == "" {
		q.MultitaskStrategy = "reject"
	}
	if q.Checkpoint != nil && q.CheckpointID == "" {
		q.CheckpointID = q.Checkpoint.CheckpointID
	}
	return q, nil
}

// decodeValues decodes input and command.resume into runner's values.
func (q *runRequest) decodeValues() error {
	if hasJSON(q.Input) {
		v, err := runner.DecodeJSON(q.Input)
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return problemf(http.StatusUnprocessableEntity, "input must be a JSON object")
		}
		q.input = inValues(obj)
	}
	if q.Command != nil && hasJSON(q.Command.Resume) {
		v, err := runner.DecodeJSON(q.Command.Resume)
		if err != nil {
			return problemf(http.StatusUnprocessableEntity, "command.resume: %v", err)
		}
		q.resume = v
	}
	return nil
}

// parseModes reads stream_mode: one mode or a list (default values).
func (q *runRequest) parseModes() error {
	switch m := q.StreamMode.(type) {
	case nil:
		q.modes = []string{"values"}
	case string:
		q.modes = []string{m}
	case []any:
		for _, x := range m {
			s, _ := x.(string)
			q.modes = append(q.modes, s)
		}
	}
	for _, m := range q.modes {
		if !slices.Contains(streamModes, m) {
			return problemf(http.StatusUnprocessableEntity, "stream_mode %q is not supported; runner streams %v", m, streamModes)
		}
	}
	return nil
}

func (q *runRequest) wants(mode string) bool { return slices.Contains(q.modes, mode) }

// resuming reports whether the run resumes a pending interrupt.
func (q *runRequest) resuming() bool { return q.Command != nil && hasJSON(q.Command.Resume) }

// present reports whether interrupt_before/after names any node.
func present(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case []any:
		return len(x) > 0
	case string:
		return x != ""
	}
	return true
}

func hasJSON(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
