package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
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
	Durability        string `json:"durability"`
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
		Tags           []string       `json:"tags"`
	} `json:"config"`
	Context map[string]any `json:"context"`
	// What LangGraph's clients send that runner takes as it comes: typed,
	// so a value of the wrong type is refused.
	StreamSubgraphs  bool     `json:"stream_subgraphs"`
	StreamResumable  bool     `json:"stream_resumable"`
	CheckpointDuring *bool    `json:"checkpoint_during"`
	FeedbackKeys     []string `json:"feedback_keys"`

	input  map[string]any // decoded, in runner's message form
	resume any            // command.resume, decoded
	expire bool           // resume without a verdict, to expire gates (expiry.go)
	update map[string]any // command.update, decoded, in runner's message form
	goTo   string         // command.goto: the node the thread continues at
	modes  []string
	opts   runner.RunOptions
}

// keptRequest is a run's request as its record keeps it (Kwargs): the
// body, and the principal who made it, which no body sets — a run taken
// over from a stopped server (reclaim.go) acts as it.
type keptRequest struct {
	*runRequest
	As access.Principal `json:"as"`
	// Expire marks a run the approval sweep started (expiry.go).
	Expire bool `json:"expire,omitempty"`
}

// Stream modes runner produces.
var streamModes = []string{"values", "updates", "messages", "messages-tuple", "debug", "custom", "tasks", "checkpoints", "events"}

// parseRunRequest decodes and checks a run's body: what runner cannot
// honour is refused with a 422 saying so, not ignored, and every value
// outside its field's type or enum with a 422 naming the field.
func parseRunRequest(r *http.Request) (*runRequest, error) {
	q := &runRequest{opts: runner.RunOptions{As: principal(r.Context())}} // who starts or decides: never the body
	if err := decodeBody(r, q); err != nil {
		return nil, err
	}
	return q, q.read()
}

// read checks the fields of q, as decoded from JSON, decodes its values
// and fills in its defaults.
func (q *runRequest) read() error {
	if err := q.check(); err != nil {
		return err
	}
	if err := q.decodeValues(); err != nil {
		return err
	}
	if q.MultitaskStrategy == "" {
		q.MultitaskStrategy = "reject"
	}
	if q.Checkpoint != nil && q.CheckpointID == "" {
		q.CheckpointID = q.Checkpoint.CheckpointID
	}
	return nil
}

// check refuses the fields of q that do not fit: a missing assistant,
// unknown enum values, what runner does not support, a negative limit.
func (q *runRequest) check() error {
	var rs refusals
	if q.AssistantID == "" {
		rs.add("assistant_id", "is required: the assistant (or graph) to run")
	}
	rs.enum("multitask_strategy", q.MultitaskStrategy, "reject", "enqueue", "interrupt", "rollback")
	rs.enum("if_not_exists", q.IfNotExists, "create", "reject")
	rs.enum("on_disconnect", q.OnDisconnect, "cancel", "continue")
	rs.enum("on_completion", q.OnCompletion, "delete", "keep")
	rs.enum("durability", q.Durability, runner.DurabilitySync, runner.DurabilityAsync, runner.DurabilityExit)
	if u, err := url.Parse(q.Webhook); q.Webhook != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		rs.add("webhook", "must be an http or https URL, not %q", q.Webhook)
	}
	if q.AfterSeconds < 0 {
		rs.add("after_seconds", "must not be negative")
	} else if q.AfterSeconds > 0 {
		rs.add("after_seconds", "is not supported by runner's runtime (delayed runs)")
	}
	if q.Config != nil && q.Config.RecursionLimit < 0 {
		rs.add("config.recursion_limit", "must be a positive number of steps, not %d", q.Config.RecursionLimit)
	}
	q.parseModes(&rs)
	return rs.err()
}

// decodeValues decodes input and command.resume into runner's values.
func (q *runRequest) decodeValues() error {
	if hasJSON(q.Input) {
		v, err := runner.DecodeJSON(q.Input)
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return fieldProblem("input", "must be a JSON object of the run's input fields")
		}
		q.input = inValues(obj)
	}
	if q.Command == nil {
		return nil
	}
	if hasJSON(q.Command.Resume) {
		v, err := runner.DecodeJSON(q.Command.Resume)
		if err != nil {
			return fieldProblem("command.resume", "%v", err)
		}
		q.resume = v
	}
	if hasJSON(q.Command.Update) {
		v, err := runner.DecodeJSON(q.Command.Update)
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return fieldProblem("command.update", "must be a JSON object of state fields")
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
		return fieldProblem("command.goto", "must be a node name or a list of node names (runner takes no Send objects)")
	}
	if len(list) != 1 {
		return fieldProblem("command.goto", "names %d nodes: runner runs one node at a time, so it continues at exactly one", len(list))
	}
	if q.resuming() {
		return fieldProblem("command.goto", "cannot come with command.resume: goto leaves the interrupted step, so the resume value would go nowhere; send one of them")
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
		return fieldProblem("command.goto", "names node %q, which %s does not have; its nodes are: %v", q.goTo, g.Name, nodesOf(g))
	}
	var err error
	if q.opts.InterruptBefore, err = nodeList("interrupt_before", q.InterruptBefore, g); err != nil {
		return err
	}
	q.opts.InterruptAfter, err = nodeList("interrupt_after", q.InterruptAfter, g)
	return err
}

// checkUpdate checks command.update against the state's declared types,
// as POST /threads/{id}/state is checked: a value that does not fit is a
// 422 naming its field, before any run is made.
func (q *runRequest) checkUpdate(g *runner.Graph) error {
	if q.update == nil {
		return nil
	}
	_, err := g.CheckValues(q.update)
	return inputProblem(err, "command.update")
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
			return nil, fieldProblem(field, "must be a list of node names or \"*\", not %q", x)
		}
		return nodesOf(g), nil
	case []any:
		names = make([]string, 0, len(x))
		for _, n := range x {
			s, ok := n.(string)
			if !ok {
				return nil, fieldProblem(fmt.Sprintf("%s[%d]", field, len(names)), "must be a node name, not %s", jsonValue(n))
			}
			names = append(names, s)
		}
	default:
		return nil, fieldProblem(field, "must be a list of node names or \"*\", not %s", jsonValue(v))
	}
	for _, n := range names {
		if g.Nodes[n] == nil {
			return nil, fieldProblem(field, "names node %q, which %s does not have; its nodes are: %v", n, g.Name, nodesOf(g))
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
func (q *runRequest) parseModes(rs *refusals) {
	mode := func(path string, v any) {
		if m, ok := v.(string); ok && slices.Contains(streamModes, m) {
			q.modes = append(q.modes, m)
			return
		}
		rs.add(path, "must be a stream mode runner produces (%s), not %s", strings.Join(streamModes, ", "), jsonValue(v))
	}
	switch m := q.StreamMode.(type) {
	case nil:
		q.modes = []string{"values"}
	case []any:
		for i, x := range m {
			mode(fmt.Sprintf("stream_mode[%d]", i), x)
		}
	default:
		mode("stream_mode", m)
	}
}

func (q *runRequest) wants(mode string) bool { return slices.Contains(q.modes, mode) }

// resuming reports whether the run resumes a pending interrupt.
func (q *runRequest) resuming() bool { return q.Command != nil && hasJSON(q.Command.Resume) }

func hasJSON(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// refusals collects the fields of a request that do not fit, each with
// its JSON path and what is wrong.
type refusals []fieldError

func (rs *refusals) add(path, format string, args ...any) {
	*rs = append(*rs, fieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// enum refuses got, unless it is empty (left out) or one of allowed.
func (rs *refusals) enum(path, got string, allowed ...string) {
	if got != "" && !slices.Contains(allowed, got) {
		rs.add(path, "must be one of %s, not %q", strings.Join(allowed, ", "), got)
	}
}

// count refuses a negative n (a limit, an offset).
func (rs *refusals) count(path string, n int) {
	if n < 0 {
		rs.add(path, "must not be negative, not %d", n)
	}
}

// checkPage refuses a negative limit or offset of a search or a list.
func checkPage(limit, offset int) error {
	var rs refusals
	rs.count("limit", limit)
	rs.count("offset", offset)
	return rs.err()
}

// err is the 422 of the fields refused; nil when there are none.
func (rs refusals) err() error {
	if len(rs) == 0 {
		return nil
	}
	detail := rs[0].Path + ": " + rs[0].Message
	if len(rs) > 1 {
		detail += fmt.Sprintf(" (and %d more: see errors)", len(rs)-1)
	}
	return invalid(detail, rs...)
}

// jsonValue renders a value a client sent for a message, cut to 40
// bytes.
func jsonValue(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}
