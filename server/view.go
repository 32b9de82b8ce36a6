package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// Thread statuses of the API.
const (
	threadIdle        = "idle"
	threadBusy        = "busy"
	threadInterrupted = "interrupted"
	threadError       = "error"
)

// metadata decodes a record's metadata (never nil).
func metadata(raw json.RawMessage) map[string]any {
	m := map[string]any{}
	if len(raw) > 0 {
		if v, err := runner.DecodeJSON(raw); err == nil {
			if obj, ok := v.(map[string]any); ok {
				m = obj
			}
		}
	}
	return m
}

// threadGraph is the graph a thread runs: the one its first run named,
// else the pipeline its checkpoints name; nil for a thread never run.
func (s *Server) threadGraph(ctx context.Context, rec *store.ThreadRecord) *runner.Graph {
	if name, ok := metadata(rec.Metadata)["graph_id"].(string); ok && s.cfg.Graphs[name] != nil {
		return s.cfg.Graphs[name]
	}
	if h, err := s.cfg.Store.History(ctx, rec.ID); err == nil {
		return s.cfg.Graphs[h[len(h)-1].Pipeline]
	}
	return nil
}

// state is a thread's state at checkpoint cp (0: the newest); nil for a
// thread without checkpoints.
func (s *Server) state(ctx context.Context, rec *store.ThreadRecord, cp int64) (*runner.ThreadState, error) {
	g := s.threadGraph(ctx, rec)
	if g == nil {
		if cp != 0 {
			return nil, problemf(http.StatusNotFound, "thread %s has no checkpoint %d", access.ThreadID(rec.ID), cp)
		}
		return nil, nil
	}
	e := &runner.Engine{Store: s.cfg.Store}
	ts, err := e.State(ctx, g, rec.ID, cp)
	if errors.Is(err, store.ErrNotFound) && cp == 0 {
		return nil, nil
	}
	return ts, err
}

// status is the API status of a thread: busy while a run of it runs here,
// else what its newest checkpoint says.
func (s *Server) status(thread string, ts *runner.ThreadState) string {
	s.mu.Lock()
	busy := s.active[thread] != nil
	s.mu.Unlock()
	switch {
	case busy:
		return threadBusy
	case ts == nil:
		return threadIdle
	case ts.Status == runner.StatusInterrupted:
		return threadInterrupted
	case ts.Status == runner.StatusFailed:
		return threadError
	}
	return threadIdle
}

// threadJSON is a thread as the API shows it.
func (s *Server) threadJSON(ctx context.Context, rec *store.ThreadRecord) (map[string]any, error) {
	ts, err := s.state(ctx, rec, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"thread_id": access.ThreadID(rec.ID), "created_at": stamp(rec.CreatedAt), "updated_at": stamp(rec.UpdatedAt),
		"metadata": metadata(rec.Metadata), "status": s.status(rec.ID, ts), "values": map[string]any{}, "interrupts": map[string]any{}}
	if ts != nil {
		out["values"] = outValues(ts.State)
		if ts.Interrupt != nil {
			out["interrupts"] = map[string]any{taskID(ts): interruptsOf(ts)}
		}
		if ts.CreatedAt.After(rec.UpdatedAt) {
			out["updated_at"] = stamp(ts.CreatedAt)
		}
	}
	return out, nil
}

// stateJSON is a thread's state at one checkpoint as LangGraph's
// StateSnapshot shows it; thread is the thread's store id.
func stateJSON(ts *runner.ThreadState, thread string) map[string]any {
	if ts == nil {
		return map[string]any{"values": map[string]any{}, "next": []string{}, "tasks": []any{}, "metadata": map[string]any{},
			"created_at": nil, "checkpoint": nil, "parent_checkpoint": nil, "interrupts": []any{}}
	}
	next, tasks := []string{}, []any{}
	if ts.Next != "" && ts.Next != runner.End && ts.Status != runner.StatusCompleted {
		next = []string{ts.Next}
		tasks = []any{map[string]any{"id": taskID(ts), "name": ts.Next, "interrupts": interruptsOf(ts), "state": nil, "error": nil}}
	}
	var parent any
	if ts.Parent > 0 {
		parent = checkpointRef(thread, ts.Parent)
	}
	return map[string]any{"values": outValues(ts.State), "next": next, "tasks": tasks,
		"checkpoint": checkpointRef(thread, ts.Checkpoint), "parent_checkpoint": parent,
		"metadata":   checkpointMeta(ts.Checkpoint, ts.Node, ts.Status),
		"created_at": stamp(ts.CreatedAt), "interrupts": interruptsOf(ts)}
}

// checkpointMeta is a checkpoint's metadata as LangGraph writes it: its
// source (input: the thread's first checkpoint, which holds the input
// before any node ran; update: an edit; loop: a step), and its step,
// which runner numbers by checkpoint: -1 for the input checkpoint, then
// the checkpoint's id - 1, so each checkpoint of a history has a step of
// its own, newer ones higher (runner's own step count, which a pause or an
// edit repeats, is in the checkpoint's status and node).
func checkpointMeta(id int64, node, status string) map[string]any {
	source, step := "loop", id-1
	switch {
	case id == 1:
		source, step = "input", -1
	case status == runner.StatusUpdated:
		source = "update"
	}
	return map[string]any{"source": source, "step": step, "status": status, "node": node}
}

// checkpointRef is how the API names a checkpoint of the thread stored as
// thread: its id as a string.
func checkpointRef(thread string, id int64) map[string]any {
	return map[string]any{"thread_id": access.ThreadID(thread), "checkpoint_ns": "", "checkpoint_id": strconv.FormatInt(id, 10)}
}

// parseCheckpoint reads a checkpoint id of the API ("" : the newest).
func parseCheckpoint(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, problemf(http.StatusNotFound, "no checkpoint %q: runner's checkpoint ids are positive integers", s)
	}
	return id, nil
}

var interruptNS = uuid.MustParse("6ba7b812-9dad-11d1-80b4-00c04fd430c8")

// taskID names the step a thread stands at, stable while it stands
// there: the task of its next node at its step.
func taskID(ts *runner.ThreadState) string { return taskUUID(ts.Thread, ts.Step, ts.Next) }

// taskUUID is the id of the task of node at step of thread, the same in
// a thread's state and in the run's tasks, checkpoints and events modes.
func taskUUID(thread string, step int, node string) string {
	return uuid.NewSHA1(interruptNS, fmt.Appendf(nil, "task/%s/%d/%s", thread, step, node)).String()
}

// interruptsOf lists the interrupts a thread waits on (interruptList).
func interruptsOf(ts *runner.ThreadState) []any {
	if ts == nil {
		return []any{}
	}
	return interruptList(ts.Interrupt)
}

// interruptList lists intr's interrupts as [{value, id}] with the
// runtime's interrupt IDs: several when parallel branches paused, each
// answered by command.resume {id: value}; empty for none.
func interruptList(intr *runner.Interrupt) []any {
	out := []any{}
	if intr != nil {
		for _, it := range intr.Leaves() {
			out = append(out, interruptJSON(it))
		}
	}
	return out
}

// interruptJSON is an interrupt as LangGraph's {value, id}. An approval
// gate's value is LangChain's HITL request — action_requests ({name,
// args, description}) and review_configs ({action_name,
// allowed_decisions}) — and nothing else at its top; another interrupt's
// value is its payload. What runner adds (the interrupt's kind, node,
// message, resume_schema, and the gate's rule, call ids and the rest of
// its payload) is under the one key "runner".
func interruptJSON(intr *runner.Interrupt) map[string]any {
	extra := map[string]any{"kind": intr.Kind, "node": intr.Node}
	if intr.Message != "" {
		extra["message"] = intr.Message
	}
	if intr.ResumeSchema != nil {
		extra["resume_schema"] = intr.ResumeSchema
	}
	value := map[string]any{"runner": extra}
	actions, hitl := intr.Payload["action_requests"].([]any)
	for k, v := range intr.Payload {
		switch {
		case !hitl:
			value[k] = v
		case k == "action_requests":
			value[k] = hitlActions(actions)
		case k == "review_configs":
			value[k] = v
		default:
			extra[k] = v
		}
	}
	return map[string]any{"value": value, "id": intr.ID}
}

// hitlActions is a gate's action requests as LangChain's ActionRequest
// defines them ({name, args, description}): their call ids are in the
// interrupt's runner.calls.
func hitlActions(actions []any) []any {
	out := make([]any, len(actions))
	for i, a := range actions {
		m, _ := a.(map[string]any)
		req := map[string]any{"name": m["name"], "args": m["args"]}
		if d, ok := m["description"]; ok {
			req["description"] = d
		}
		out[i] = req
	}
	return out
}

// stamp formats a time as the API does.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
