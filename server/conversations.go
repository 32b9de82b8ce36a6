package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
)

// Seed 000's own endpoints, beside the LangGraph API: POST /execute runs
// an agent on a conversation (a thread) and answers with its final state;
// GET /conversations/{id}/stream streams a conversation's execution node
// by node (node_end events, then done).

// convEvent is one event of a conversation stream, node_end or done: its
// data is built and encoded when a stream writes it, so a run nobody
// follows builds nothing.
type convEvent struct {
	name    string
	node    string         // node_end: the node
	status  string         // node_end: the state's status
	tokens  int64          // node_end: the tokens used so far
	message map[string]any // node_end: the step's last message, if any
	done    map[string]any // done: its data
}

// data is the event's data as the stream writes it.
func (e convEvent) data() map[string]any {
	if e.name == "done" {
		return map[string]any{"event": "done", "data": e.done}
	}
	d := map[string]any{"status": e.status, "tokens_used": e.tokens}
	if e.message != nil {
		d["message"] = e.message
	}
	return map[string]any{"event": "node_end", "node": e.node, "data": d}
}

// convRun is one execution of a conversation as its stream shows it; it
// is also the observer that builds it.
type convRun struct {
	hub    *convHub
	thread string
	run    string

	mu     sync.Mutex
	events []convEvent
	wake   chan struct{} // closed when an event is added; made when a stream waits
	ended  bool
	tokens int64
	cost   float64
	output any
}

// convHub knows each conversation's execution under way, and the streams
// waiting for a conversation's next one.
type convHub struct {
	mu      sync.Mutex
	running map[string]*convRun      // thread → its execution under way
	waiting map[string]chan struct{} // thread → closed when an execution begins
}

func newConvHub() *convHub {
	return &convHub{running: map[string]*convRun{}, waiting: map[string]chan struct{}{}}
}

// begin records that l's execution of its conversation begins.
func (h *convHub) begin(l *liveRun) *convRun {
	c := &convRun{hub: h, thread: l.rec.Thread, run: l.rec.ID}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running[c.thread] = c
	h.wakeLocked(c.thread)
	return c
}

// next returns the conversation's execution under way, or a channel
// closed when its next one begins.
func (h *convHub) next(thread string) (*convRun, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.running[thread]; c != nil {
		return c, nil
	}
	ch, ok := h.waiting[thread]
	if !ok {
		ch = make(chan struct{})
		h.waiting[thread] = ch
	}
	return nil, ch
}

// wake wakes the streams waiting for thread's next execution, which look
// again whether the conversation is still there.
func (h *convHub) wake(thread string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.wakeLocked(thread)
}

// wakeLocked is wake with h.mu held.
func (h *convHub) wakeLocked(thread string) {
	if ch, ok := h.waiting[thread]; ok {
		close(ch)
		delete(h.waiting, thread)
	}
}

func (c *convRun) event(ev runner.Event) {
	d, _ := ev.Data.(map[string]any)
	switch {
	case ev.Type == runner.EventLLMResult:
		in, _ := d["input_tokens"].(int64)
		out, _ := d["output_tokens"].(int64)
		cost, _ := d["cost_usd"].(float64)
		c.mu.Lock()
		c.tokens, c.cost = c.tokens+in+out, c.cost+cost
		c.mu.Unlock()
	case ev.Thread != c.thread: // a child thread's steps are its node's
	case ev.Type == runner.EventNodeEnd:
		upd, _ := d["update"].(runner.Update)
		e := convEvent{name: "node_end", node: ev.Node, status: "running", message: lastMessage(upd[messagesField])}
		if st, ok := upd["status"].(string); ok {
			e.status = st
		}
		c.mu.Lock()
		e.tokens = c.tokens
		c.mu.Unlock()
		c.add(e)
	case ev.Type == runner.EventDone:
		if res, ok := ev.Data.(*runner.Result); ok {
			c.mu.Lock()
			c.output = res.Output
			c.mu.Unlock()
		}
	}
}

// end adds the execution's done event and ends its stream.
func (c *convRun) end(e runEnd) {
	c.hub.mu.Lock()
	if c.hub.running[c.thread] == c {
		delete(c.hub.running, c.thread)
	}
	c.hub.mu.Unlock()
	c.mu.Lock()
	data := map[string]any{"execution_id": c.run, "status": convStatus(e.status), "tokens_used": c.tokens, "cost_usd": c.cost}
	c.mu.Unlock()
	if e.err != "" {
		data["error"] = e.err
	}
	c.add(convEvent{name: "done", done: data})
}

// add adds e (done ends the execution) and wakes the streams waiting.
func (c *convRun) add(e convEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
	c.ended = e.name == "done"
	if c.wake != nil {
		close(c.wake)
		c.wake = nil
	}
}

// since returns the events after the first n, whether the execution has
// ended (done is the last event), and a channel closed at the next event.
func (c *convRun) since(n int) ([]convEvent, bool, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wake == nil && !c.ended {
		c.wake = make(chan struct{})
	}
	return c.events[n:], c.ended, c.wake
}

// convStatus is the seed's status of an execution that ended with the
// API's run status.
func convStatus(status string) string {
	switch status {
	case "success":
		return "completed"
	case "interrupted":
		return "awaiting_hitl"
	}
	return "failed"
}

// lastMessage is the last message of a step's messages update.
func lastMessage(v any) map[string]any {
	ms := records(v)
	if len(ms) == 0 {
		return nil
	}
	return ms[len(ms)-1]
}

// executeRequest is the body of POST /execute.
type executeRequest struct {
	// AgentType (or AgentID) names the agent: an assistant's name or id.
	AgentType      string `json:"agent_type"`
	AgentID        string `json:"agent_id"`
	ConversationID string `json:"conversation_id"`
	// Message is the user's message; Messages, instead, the whole turn.
	Message  string         `json:"message"`
	Messages []any          `json:"messages"`
	User     map[string]any `json:"user"`
	Metadata map[string]any `json:"metadata"`
	// Resume is a reviewer's decision for a conversation paused at an
	// approval gate (what command.resume takes).
	Resume any `json:"resume"`
}

// executeAgent runs an agent on a conversation to its end or its next pause
// and answers with the execution's final state.
func (s *Server) executeAgent(w http.ResponseWriter, r *http.Request) error {
	var q executeRequest
	if err := decodeBody(r, &q); err != nil {
		return err
	}
	name := q.AgentType
	if name == "" {
		name = q.AgentID
	}
	if name == "" {
		return problemf(http.StatusUnprocessableEntity, "agent_type (or agent_id) is required")
	}
	name, g, err := s.graph(name)
	if err != nil {
		return err
	}
	if q.ConversationID == "" {
		q.ConversationID = uuid.Must(uuid.NewV7()).String()
	}
	body, err := q.runBody(name, g, principal(r.Context()).Tenant)
	if err != nil {
		return err
	}
	out, err := s.runAndWait(r.Context(), q.ConversationID, name, body, r.Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// runAndWait runs body on thread as POST /threads/{thread}/runs/wait would,
// for the caller ctx names, waits for it and returns executeResult: its
// status, output and state, its pending interrupt or its error.
func (s *Server) runAndWait(ctx context.Context, thread, name string, body []byte, idempotencyKey string) (map[string]any, error) {
	run, err := http.NewRequestWithContext(ctx, http.MethodPost, "/threads/"+thread+"/runs/wait", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	run.SetPathValue("thread", thread)
	run.Header.Set("Idempotency-Key", idempotencyKey)
	rec, l, err := s.createRun(run, awaited)
	if err != nil {
		return nil, err
	}
	if l != nil {
		defer l.streams.Done()
	} else { // an earlier request with its Idempotency-Key created it
		l = s.liveRun(rec.ID)
	}
	final, err := s.wait(ctx, rec, l)
	if err != nil {
		return nil, err
	}
	return s.executeResult(rec.ID, thread, name, l, final), nil
}

// runBody is the run that executes q: its input (the message, and the
// conversation and tenant ids where the graph keeps them), or its resume.
func (q *executeRequest) runBody(name string, g *runner.Graph, tenant string) ([]byte, error) {
	body := map[string]any{"assistant_id": name, "if_not_exists": "create"}
	if q.Resume != nil {
		body["command"] = map[string]any{"resume": q.Resume}
		return json.Marshal(body)
	}
	msgs := q.Messages
	if q.Message != "" {
		msgs = append(msgs, map[string]any{"role": "user", "content": q.Message})
	}
	if len(msgs) == 0 {
		return nil, problemf(http.StatusUnprocessableEntity, "message (or messages, or resume) is required")
	}
	input := map[string]any{"messages": msgs}
	fields := map[string]any{"conversation_id": q.ConversationID, "tenant_id": tenant}
	if q.User != nil {
		fields["user"] = q.User
	}
	if q.Metadata != nil {
		fields["metadata"] = q.Metadata
	}
	for field, v := range fields {
		if _, ok := g.Fields[field]; ok {
			input[field] = v
		}
	}
	body["input"] = input
	return json.Marshal(body)
}

// executeResult is POST /execute's answer: the execution's id and status,
// its final state, the pipeline's output (the answer), what it spent, and
// the pending approval or the error.
func (s *Server) executeResult(run, thread, name string, l *liveRun, final any) map[string]any {
	values, _ := final.(map[string]any)
	out := map[string]any{"execution_id": run, "conversation_id": thread, "agent_type": name, "status": "completed"}
	if l != nil && l.watch != nil {
		c := l.watch.conv
		c.mu.Lock()
		out["tokens_used"], out["cost_usd"], out["output"] = c.tokens, c.cost, c.output
		c.mu.Unlock()
	}
	state := clone(values)
	if e, ok := state["__error__"]; ok {
		out["status"], out["error"] = "failed", e
		delete(state, "__error__")
	}
	if intr, ok := state["__interrupt__"]; ok {
		out["status"], out["interrupt"] = "awaiting_hitl", intr
		delete(state, "__interrupt__")
	}
	out["state"] = state
	return out
}

// conversationStream streams the conversation's execution under way, or
// its next one: node_end per step, then done. It ends when the
// conversation is deleted.
func (s *Server) conversationStream(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.thread(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	c, begun := s.convs.next(rec.ID) // before the headers: a client that has them is following
	sw := s.openStream(w)
	defer sw.close()
	sw.flush() // the client has the headers while the stream waits
	for {
		if s.gone(r.Context(), rec) { // checked after c was found: it is the conversation's, not a new one's
			sw.deleted(r.PathValue("id"))
			return nil
		}
		if c != nil {
			break
		}
		select {
		case <-begun:
			c, begun = s.convs.next(rec.ID)
		case <-sw.beat.C:
			if !sw.heartbeat() {
				return nil
			}
		case <-sw.expired:
			sw.expire(fmt.Sprintf("the stream reached its maximum duration of %s before an execution of conversation %s began; open it again",
				s.cfg.MaxStream, r.PathValue("id")))
			return nil
		case <-r.Context().Done():
			return nil
		}
	}
	s.followConversation(r, sw, c)
	return nil
}

// followConversation writes c's events until its done.
func (s *Server) followConversation(r *http.Request, sw *streamWriter, c *convRun) {
	n := 0
	for {
		evs, ended, wake := c.since(n)
		for _, ev := range evs {
			n++
			data, _ := runner.MarshalJSON(ev.data())
			writeEvent(sw.w, strconv.Itoa(n), ev.name, data)
		}
		if !sw.flush() || ended {
			return
		}
		select {
		case <-wake:
		case <-sw.beat.C:
			if !sw.heartbeat() {
				return
			}
		case <-sw.expired:
			sw.expire(fmt.Sprintf("the stream reached its maximum duration of %s; the execution %s goes on", s.cfg.MaxStream, c.run))
			return
		case <-r.Context().Done():
			return
		}
	}
}
