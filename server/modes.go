package server

import (
	"fmt"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
)

// The stream modes LangGraph added beside debug, made from the runtime's
// events of the run's own thread:
//
//   - tasks: a node's start {id, name, input, triggers} and its result
//     {id, name, error, result, interrupts};
//   - checkpoints: each checkpoint as a state snapshot {config,
//     parent_config, values, metadata, next, tasks};
//   - events: LangChain's stream events (astream_events v2): on_chain_*
//     for the run and its nodes, on_chat_model_* for model calls,
//     on_tool_* for tool calls, on_custom_event for a node's own events.

// modeEvents queues the tasks, checkpoints and events mode events of ev;
// the caller holds l.emitMu.
func (s *Server) modeEvents(l *liveRun, ev runner.Event) {
	if !l.q.wants("tasks") && !l.q.wants("checkpoints") && !l.q.wants("events") {
		return
	}
	d, _ := ev.Data.(map[string]any)
	switch ev.Type {
	case runner.EventNodeStart:
		l.modes.task = taskUUID(l.rec.Thread, ev.Step, ev.Node)
	case runner.EventLLMCall:
		l.modes.model = fmt.Sprint(d["model"])
	}
	if l.q.wants("tasks") {
		if t := taskEvent(l.modes.task, ev); t != nil {
			s.emitLocked(l, "tasks", t)
		}
	}
	if l.q.wants("checkpoints") && ev.Type == runner.EventCheckpoint {
		s.emitLocked(l, "checkpoints", checkpointEvent(l.rec.Thread, ev))
	}
	if l.q.wants("events") {
		if e := langchainEvent(l, ev); e != nil {
			s.emitLocked(l, "events", e)
		}
	}
}

// modeState is what the modes keep of a run's events so far: the id of
// the node's task under way and the model called last.
type modeState struct {
	task, model string
}

// taskEvent is the tasks mode event of ev, nil for none: task is the id
// of the node's task under way.
func taskEvent(task string, ev runner.Event) map[string]any {
	d, _ := ev.Data.(map[string]any)
	result := func(out any, errText any, intrs []any) map[string]any {
		return map[string]any{"id": task, "name": ev.Node, "result": out, "error": errText, "interrupts": intrs}
	}
	switch ev.Type {
	case runner.EventNodeStart:
		return map[string]any{"id": task, "name": ev.Node, "input": nil, "triggers": []string{"branch:to:" + ev.Node}}
	case runner.EventNodeEnd:
		upd, _ := d["update"].(runner.Update)
		return result(outValues(upd), nil, []any{})
	case runner.EventInterrupt:
		intr, _ := ev.Data.(*runner.Interrupt)
		if intr == nil {
			return nil
		}
		return result(map[string]any{}, nil, interruptList(intr))
	case runner.EventError:
		if ev.Node == "" {
			return nil
		}
		return result(map[string]any{}, fmt.Sprint(errorText(ev.Data)), []any{})
	}
	return nil
}

// checkpointEvent is ev, a checkpoint, as the checkpoints mode shows it.
func checkpointEvent(thread string, ev runner.Event) map[string]any {
	d, _ := ev.Data.(map[string]any)
	id, _ := d["id"].(int64)
	parent, _ := d["parent"].(int64)
	var parentConfig any
	if parent > 0 {
		parentConfig = map[string]any{"configurable": checkpointRef(thread, parent)}
	}
	next, tasks := []string{}, []any{}
	if n, _ := d["next"].(string); n != "" && n != runner.End {
		next = []string{n}
		tasks = []any{map[string]any{"id": taskUUID(thread, ev.Step, n), "name": n, "interrupts": []any{}}}
	}
	status, _ := d["status"].(string)
	meta := checkpointMeta(id, ev.Node, status)
	meta["parents"] = map[string]any{}
	return map[string]any{"config": map[string]any{"configurable": checkpointRef(thread, id)},
		"parent_config": parentConfig, "values": outValues(ev.State), "next": next, "tasks": tasks,
		"metadata": meta}
}

// langchainEvent is ev as a LangChain stream event, nil for none.
func langchainEvent(l *liveRun, ev runner.Event) map[string]any {
	d, _ := ev.Data.(map[string]any)
	name, runID, kind, data := ev.Node, l.modes.task, "", map[string]any{}
	switch ev.Type {
	case runner.EventRunStart:
		kind, name, runID, data["input"] = "on_chain_start", l.g.Name, l.rec.ID, d["input"]
	case runner.EventDone:
		kind, name, runID = "on_chain_end", l.g.Name, l.rec.ID
		if res, ok := ev.Data.(*runner.Result); ok {
			data["output"] = outValues(res.State)
		}
	case runner.EventNodeStart:
		kind = "on_chain_start"
	case runner.EventNodeEnd:
		upd, _ := d["update"].(runner.Update)
		kind, data["output"] = "on_chain_end", outValues(upd)
	case runner.EventLLMCall:
		kind, name, data["input"] = "on_chat_model_start", l.modes.model, map[string]any{"phase": d["phase"]}
	case runner.EventLLMToken:
		kind, name, data["chunk"] = "on_chat_model_stream", l.modes.model, map[string]any{"type": "AIMessageChunk", "content": d["text"]}
	case runner.EventLLMResult:
		kind, name, data["output"] = "on_chat_model_end", l.modes.model, d
	case runner.EventToolCall:
		kind, name, data["input"] = "on_tool_start", fmt.Sprint(d["tool"]), d["args"]
	case runner.EventToolResult:
		kind, name, data["output"] = "on_tool_end", fmt.Sprint(d["tool"]), d["output"]
	default:
		if known[ev.Type] {
			return nil
		}
		kind, name, data = "on_custom_event", ev.Type, map[string]any{"data": ev.Data}
	}
	parents := []string{}
	if runID != l.rec.ID {
		parents = []string{l.rec.ID}
	}
	return map[string]any{"event": kind, "name": name, "run_id": runID, "parent_ids": parents,
		"tags": []string{fmt.Sprintf("graph:step:%d", ev.Step)}, "data": data,
		"metadata": map[string]any{"langgraph_node": ev.Node, "langgraph_step": ev.Step, "thread_id": access.ThreadID(l.rec.Thread), "run_id": l.rec.ID}}
}

// errorText is the message of an error event's data.
func errorText(data any) any {
	if d, ok := data.(map[string]any); ok {
		return d["error"]
	}
	if e, ok := data.(error); ok {
		return e.Error()
	}
	return data
}
