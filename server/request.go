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
		RecursionLimit int            `json:"recursion_limit"`
		Configurable   map[string]any `json:"configurable"`
	} `json:"config"`
	Context map[string]any `json:"context"`

	input  map[string]any // decoded, in runner's message form
	resume any            // command.resume, decoded
	update map[string]any // command.update, decoded, in runner's message form
	goTo   string         // command.goto: the node the thread continues at
	modes  []string
	opts   runner.RunOptions
}

// Stream modes runner produces.
var streamModes = []string{"values", "updates", "messages", "messages-tuple", "debug", "custom", "tasks", "checkpoints", "events"}

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
	case q.Webhook != "":
		return nil, unsupported("webhook")
	case q.AfterSeconds > 0:
		return nil, unsupported("after_seconds (delayed runs)")
	case !slices.Contains([]string{"", "reject", "enqueue", "interrupt", "rollback"}, q.MultitaskStrategy):
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
	if q.Command == nil {
		return nil
	}
	if hasJSON(q.Command.Resume) {
		v, err := runner.DecodeJSON(q.Command.Resume)
		if err != nil {
			return problemf(http.StatusUnprocessableEntity, "command.resume: %v", err)
		}
		q.resume = v
	}
	if hasJSON(q.Command.Update) {
		v, err := runner.DecodeJSON(q.Command.Update)
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return problemf(http.StatusUnprocessableEntity, "command.update must be a JSON object of state fields")
		}
		q.update = inValues(obj)
	}
	return q.decodeGoto()
}

// decodeGoto reads command.goto: a node name, or a list of one (runner
// runs one node at a time, so it continues at one node).
func (q *runRequest) decodeGoto() error {
	if !hasJSON(q.Command.Goto) {
		return nil
	}
	var list []string
	if err := json.Unmarshal(q.Command.Goto, &q.goTo); err == nil && q.goTo != "" {
		list = []string{q.goTo}
	} else if err := json.Unmarshal(q.Command.Goto, &list); err != nil {
		return problemf(http.StatusUnprocessableEntity, "command.goto must be a node name or a list of node names (runner takes no Send objects)")
	}
	if len(list) != 1 {
		return problemf(http.StatusUnprocessableEntity, "command.goto names %d nodes: runner runs one node at a time, so it continues at exactly one", len(list))
	}
	if q.resuming() {
		return problemf(http.StatusUnprocessableEntity, "command.goto with command.resume: goto leaves the interrupted step, so the resume value would go nowhere; send one of them")
	}
	q.goTo = list[0]
	if q.goTo == "__end__" { // LangGraph's END: the run ends the thread where it stands
		q.goTo = runner.End
	}
	return nil
}

// forGraph checks the nodes the request names against g (a 422 naming
// the one it does not have) and sets the run's interrupt_before and
// interrupt_after ("*": every node).
func (q *runRequest) forGraph(g *runner.Graph) error {
	if q.goTo != "" && q.goTo != runner.End && g.Nodes[q.goTo] == nil {
		return problemf(http.StatusUnprocessableEntity, "command.goto names node %q, which %s does not have; its nodes are: %v", q.goTo, g.Name, nodesOf(g))
	}
	var err error
	if q.opts.InterruptBefore, err = nodeList("interrupt_before", q.InterruptBefore, g); err != nil {
		return err
	}
	q.opts.InterruptAfter, err = nodeList("interrupt_after", q.InterruptAfter, g)
	return err
}

// nodeList reads interrupt_before or interrupt_after: nil when absent, a
// list of g's nodes, or "*" for all of them.
func nodeList(field string, v any, g *runner.Graph) ([]string, error) {
	var names []string
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		if x != "*" {
			return nil, problemf(http.StatusUnprocessableEntity, "%s must be a list of node names or \"*\", not %q", field, x)
		}
		return nodesOf(g), nil
	case []any:
		names = make([]string, 0, len(x))
		for _, n := range x {
			s, ok := n.(string)
			if !ok {
				return nil, problemf(http.StatusUnprocessableEntity, "%s must list node names, not %v", field, n)
			}
			names = append(names, s)
		}
	default:
		return nil, problemf(http.StatusUnprocessableEntity, "%s must be a list of node names or \"*\"", field)
	}
	for _, n := range names {
		if g.Nodes[n] == nil {
			return nil, problemf(http.StatusUnprocessableEntity, "%s names node %q, which %s does not have; its nodes are: %v", field, n, g.Name, nodesOf(g))
		}
	}
	return names, nil
}

// nodesOf lists g's nodes by name.
func nodesOf(g *runner.Graph) []string {
	names := make([]string, 0, len(g.Nodes))
	for n := range g.Nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
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

func hasJSON(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
