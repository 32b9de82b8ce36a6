package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// A2A serves each assistant over Google's Agent2Agent protocol (JSON-RPC,
// protocol version 0.3), as LangGraph does: POST /a2a/{assistant_id}
// takes message/send, message/stream and tasks/get; GET
// /.well-known/agent-card.json?assistant_id= is its agent card. A
// message's contextId is a thread; a task is the run a message starts on
// it (the task's id is that run's), and the runs that answer it: a paused
// run is an input-required task, and a message naming the task resumes
// the thread with its data (or text) as the resume value.

// a2aVersion is the A2A protocol version served.
const a2aVersion = "0.3.0"

// JSON-RPC and A2A error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcNoMethod       = -32601
	rpcInvalidParams  = -32602
	rpcInternal       = -32603
	rpcTaskNotFound   = -32001
)

// rpcError is a JSON-RPC error.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

// rpcRequest is a JSON-RPC request.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// rpcAnswer is a JSON-RPC response: its result, or its error.
func rpcAnswer(id any, result any, err error) map[string]any {
	out := map[string]any{"jsonrpc": "2.0", "id": id}
	if err == nil {
		out["result"] = result
		return out
	}
	re, ok := errors.AsType[*rpcError](err)
	if !ok {
		re = rpcErrorOf(err)
	}
	out["error"] = re
	return out
}

// rpcErrorOf maps a server error to JSON-RPC: a 404 is an unknown task,
// a 4xx bad params, anything else internal.
func rpcErrorOf(err error) *rpcError {
	p := asProblem(err)
	switch {
	case p.Status == http.StatusNotFound:
		return &rpcError{rpcTaskNotFound, p.Detail}
	case p.Status < 500:
		return &rpcError{rpcInvalidParams, p.Detail}
	}
	return &rpcError{rpcInternal, p.Detail}
}

// agentCard serves an assistant's A2A agent card.
func (s *Server) agentCard(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("assistant_id")
	if id == "" {
		return problemf(http.StatusUnprocessableEntity, "the assistant_id query parameter names the assistant whose card this is")
	}
	a, err := s.resolve(r.Context(), id)
	if err != nil {
		return err
	}
	desc := fmt.Sprintf("runner assistant %s (graph %s)", a.view.Name, a.name)
	if a.view.Description != nil {
		desc = *a.view.Description
	}
	modes := []string{"text/plain", "application/json"}
	writeJSON(w, http.StatusOK, a2a.AgentCard{Name: a.view.Name, Description: desc, URL: baseURL(r) + "/a2a/" + a.view.AssistantID,
		PreferredTransport: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2aVersion, Version: cmp.Or(s.cfg.Version, "dev"),
		Capabilities: a2a.AgentCapabilities{Streaming: true}, DefaultInputModes: modes, DefaultOutputModes: modes,
		Skills: []a2a.AgentSkill{{ID: a.name, Name: a.name, Description: desc, Tags: []string{"runner"}}}})
	return nil
}

// baseURL is the URL the request reached the server at.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// a2aRPC serves an assistant's A2A JSON-RPC methods.
func (s *Server) a2aRPC(w http.ResponseWriter, r *http.Request) error {
	a, err := s.resolve(r.Context(), r.PathValue("assistant_id"))
	if err != nil {
		return err
	}
	var q rpcRequest
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		writeJSON(w, http.StatusOK, rpcAnswer(nil, nil, &rpcError{rpcParseError, "the body is not JSON: " + err.Error()}))
		return nil
	}
	if q.JSONRPC != "2.0" || q.Method == "" {
		writeJSON(w, http.StatusOK, rpcAnswer(q.ID, nil, &rpcError{rpcInvalidRequest, `a JSON-RPC 2.0 request has "jsonrpc": "2.0" and a method`}))
		return nil
	}
	var result any
	switch q.Method {
	case "message/send":
		result, err = s.a2aSend(r, a, q.Params, nil)
	case "message/stream":
		s.a2aStream(w, r, a, q)
		return nil
	case "tasks/get":
		var p a2a.TaskQueryParams
		if err = json.Unmarshal(q.Params, &p); err != nil {
			err = &rpcError{rpcInvalidParams, "tasks/get takes {id}: " + err.Error()}
		} else {
			result, err = s.a2aTask(r.Context(), string(p.ID))
		}
	default:
		err = &rpcError{rpcNoMethod, fmt.Sprintf("method %q is not served; runner serves message/send, message/stream and tasks/get", q.Method)}
	}
	writeJSON(w, http.StatusOK, rpcAnswer(q.ID, result, err))
	return nil
}

// a2aSend runs the message's turn on its thread — a new turn, or the
// answer to an input-required task — to its end or its next pause, and
// returns the task. started, when set, is told the task as the run
// starts.
func (s *Server) a2aSend(r *http.Request, a *resolved, params json.RawMessage, started func(*a2a.Task)) (*a2a.Task, error) {
	var p a2a.MessageSendParams
	if err := json.Unmarshal(params, &p); err != nil || p.Message == nil {
		return nil, &rpcError{rpcInvalidParams, fmt.Sprintf("message/send takes {message}: %v", err)}
	}
	msg := p.Message
	thread, taskID := cmp.Or(msg.ContextID, uuid.Must(uuid.NewV7()).String()), string(msg.TaskID)
	body := map[string]any{"assistant_id": a.view.AssistantID, "if_not_exists": "create"}
	if taskID != "" {
		task, err := s.a2aTask(r.Context(), taskID)
		if err != nil {
			return nil, err
		}
		if task.Status.State != a2a.TaskStateInputRequired {
			return nil, &rpcError{rpcInvalidParams, fmt.Sprintf("task %s is %s: only an input-required task takes an answer", taskID, task.Status.State)}
		}
		thread = task.ContextID
		body["command"] = map[string]any{"resume": resumeValue(msg)}
		body["metadata"] = map[string]any{"a2a_task_id": taskID}
	} else {
		text := messageText(msg)
		if text == "" {
			return nil, &rpcError{rpcInvalidParams, "the message has no text part"}
		}
		body["input"] = map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}}
	}
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, "/threads/"+thread+"/runs/wait", bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.SetPathValue("thread", thread)
	rec, l, err := s.createRun(req, awaited)
	if err != nil {
		return nil, err
	}
	taskID = cmp.Or(taskID, rec.ID)
	if started != nil {
		started(&a2a.Task{ID: a2a.TaskID(taskID), ContextID: thread, Status: a2a.TaskStatus{State: a2a.TaskStateWorking}})
	}
	if l != nil {
		defer l.streams.Done()
	} else { // an earlier request with its Idempotency-Key created it
		l = s.liveRun(rec.ID)
	}
	final, err := s.wait(r.Context(), rec, l)
	if err != nil {
		return nil, err
	}
	values, _ := final.(map[string]any)
	return taskFrom(taskID, thread, values), nil
}

// messageText is the text of a message's text parts.
func messageText(m *a2a.Message) string {
	var texts []string
	for _, p := range m.Parts {
		if t, ok := p.(a2a.TextPart); ok {
			texts = append(texts, t.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// resumeValue is what an answer to an input-required task resumes the
// thread with: its first data part's data, else its text (decoded when it
// is JSON).
func resumeValue(m *a2a.Message) any {
	for _, p := range m.Parts {
		if d, ok := p.(a2a.DataPart); ok {
			return d.Data
		}
	}
	text := messageText(m)
	if v, err := runner.DecodeJSON([]byte(text)); err == nil {
		return v
	}
	return text
}

// taskFrom is the task a run's final values leave: input-required with
// the interrupts when it paused, failed with its error, else completed
// with the answer as an artifact.
func taskFrom(id, thread string, values map[string]any) *a2a.Task {
	t := &a2a.Task{ID: a2a.TaskID(id), ContextID: thread}
	agent := func(parts ...a2a.Part) *a2a.Message {
		m := a2a.NewMessage(a2a.MessageRoleAgent, parts...)
		m.TaskID, m.ContextID = t.ID, thread
		return m
	}
	switch {
	case values["__interrupt__"] != nil:
		intr, _ := values["__interrupt__"].([]any)
		t.Status = a2a.TaskStatus{State: a2a.TaskStateInputRequired,
			Message: agent(a2a.TextPart{Text: interruptText(intr)}, a2a.DataPart{Data: map[string]any{"interrupts": intr}})}
	case values["__error__"] != nil:
		e, _ := values["__error__"].(map[string]any)
		t.Status = a2a.TaskStatus{State: a2a.TaskStateFailed, Message: agent(a2a.TextPart{Text: fmt.Sprint(e["message"])})}
	default:
		t.Status = a2a.TaskStatus{State: a2a.TaskStateCompleted}
		part := a2a.Part(a2a.DataPart{Data: values})
		if text := lastAIText(values); text != "" {
			part = a2a.TextPart{Text: text}
		}
		t.Artifacts = []*a2a.Artifact{{ID: a2a.ArtifactID(id + "-answer"), Name: "answer", Parts: a2a.ContentParts{part}}}
	}
	return t
}

// interruptText is what a paused run asks, in words: its interrupts'
// messages.
func interruptText(list []any) string {
	var texts []string
	for _, it := range list {
		v, _ := it.(map[string]any)["value"].(map[string]any)
		if extra, _ := v["runner"].(map[string]any); extra["message"] != nil {
			texts = append(texts, fmt.Sprint(extra["message"]))
		}
	}
	if len(texts) == 0 {
		return "The agent waits for input."
	}
	return strings.Join(texts, "\n")
}

// lastAIText is the text of the newest AI message of values, "" for none.
func lastAIText(values map[string]any) string {
	msgs, _ := values["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if text, _ := m["content"].(string); m["type"] == "ai" && text != "" {
			return text
		}
	}
	return ""
}

// a2aTask is task id as it stands: its thread's state if its newest run is
// the thread's newest, else how that run ended.
func (s *Server) a2aTask(ctx context.Context, id string) (*a2a.Task, error) {
	first, err := s.runs.Run(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && access.Authorize(principal(ctx), first.Thread, first.Tenant) != nil {
		return nil, &rpcError{rpcTaskNotFound, fmt.Sprintf("no task %q", id)}
	} else if err != nil {
		return nil, err
	}
	runs, err := s.runs.Runs(ctx, first.Thread)
	if err != nil {
		return nil, err
	}
	last := runs[len(runs)-1]
	var mine *store.RunRecord
	for i := range runs {
		if runs[i].ID == id || metadata(runs[i].Metadata)["a2a_task_id"] == id {
			mine = &runs[i]
		}
	}
	thread := access.ThreadID(first.Thread)
	t := &a2a.Task{ID: a2a.TaskID(id), ContextID: thread}
	switch {
	case mine.Status == store.RunPending || mine.Status == store.RunRunning:
		t.Status.State = a2a.TaskStateWorking
	case mine.ID == last.ID && mine.Status != store.RunError && mine.Status != store.RunTimeout:
		values, err := s.pastValues(ctx, mine)
		if err != nil {
			return nil, err
		}
		v, _ := values.(map[string]any)
		return taskFrom(id, thread, v), nil
	case mine.Status == store.RunSuccess:
		t.Status.State = a2a.TaskStateCompleted
	case mine.Status == store.RunInterrupted:
		t.Status.State = a2a.TaskStateCanceled
	default:
		t.Status.State = a2a.TaskStateFailed
	}
	return t, nil
}

// a2aStream serves message/stream: the task as its run starts, then, at
// its end, the answer as an artifact and the task's final status.
func (s *Server) a2aStream(w http.ResponseWriter, r *http.Request, a *resolved, q rpcRequest) {
	sw := s.openStream(w)
	defer sw.close()
	send := func(result any, err error) {
		data, _ := json.Marshal(rpcAnswer(q.ID, result, err))
		fmt.Fprintf(sw.w, "data: %s\n\n", data)
		sw.flush()
	}
	task, err := s.a2aSend(r, a, q.Params, func(t *a2a.Task) { send(t, nil) })
	if err != nil {
		send(nil, err)
		return
	}
	for _, art := range task.Artifacts {
		send(&a2a.TaskArtifactUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Artifact: art, LastChunk: true}, nil)
	}
	send(&a2a.TaskStatusUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Status: task.Status, Final: true}, nil)
}
