package server_test

import (
	"context"
	"slices"
	"testing"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/server"
)

// TestStreamModesTasksCheckpointsEvents streams the approval graph to its
// interrupt in the tasks, checkpoints and events modes.
func TestStreamModesTasksCheckpointsEvents(t *testing.T) {
	e := newEnv(t)
	evs, _ := readSSE(t, e.request("POST", "/threads/modes/runs/stream", map[string]any{"assistant_id": "approval",
		"if_not_exists": "create", "stream_mode": []string{"tasks", "checkpoints", "events"}}))
	by := map[string][]map[string]any{}
	for _, ev := range evs {
		if d, ok := ev.Data.(map[string]any); ok {
			by[ev.Event] = append(by[ev.Event], d)
		}
	}

	tasks := by["tasks"]
	if len(tasks) != 4 {
		t.Fatalf("tasks events = %v, want answer's start and result, gate's start and result", tasks)
	}
	answerStart, answerEnd, gateEnd := tasks[0], tasks[1], tasks[3]
	if answerStart["name"] != "answer" || answerStart["id"] != answerEnd["id"] || answerEnd["error"] != nil {
		t.Errorf("answer's task events = %v, %v: want a start and a result with one id", answerStart, answerEnd)
	}
	if result, _ := answerEnd["result"].(map[string]any); result["messages"] == nil {
		t.Errorf("answer's result = %v, want its messages", answerEnd["result"])
	}
	if intrs, _ := gateEnd["interrupts"].([]any); gateEnd["name"] != "gate" || len(intrs) != 1 || gateEnd["id"] != tasks[2]["id"] {
		t.Errorf("gate's result = %v, want its interrupt", gateEnd)
	}
	st := e.call("GET", "/threads/modes/state", nil, 200)
	if stTasks, _ := st["tasks"].([]any); len(stTasks) != 1 || stTasks[0].(map[string]any)["id"] != gateEnd["id"] {
		t.Errorf("the thread's task = %v, want the tasks mode's id of gate, %v", st["tasks"], gateEnd["id"])
	}

	cps := by["checkpoints"]
	if len(cps) == 0 {
		t.Fatal("no checkpoints events")
	}
	first := cps[0]
	conf, _ := first["config"].(map[string]any)
	if c, _ := conf["configurable"].(map[string]any); c["thread_id"] != "modes" || c["checkpoint_id"] == "" {
		t.Errorf("checkpoint config = %v, want the thread and a checkpoint id", conf)
	}
	if next, _ := first["next"].([]any); !slices.Equal(next, []any{"answer"}) {
		t.Errorf("the run's first checkpoint: next = %v, want [answer]", first["next"])
	}
	afterAnswer := cps[1]
	if next, _ := afterAnswer["next"].([]any); !slices.Equal(next, []any{"gate"}) || afterAnswer["parent_config"] == nil {
		t.Errorf("the checkpoint after answer = %v, want next [gate] and a parent", afterAnswer)
	}
	if vals, _ := afterAnswer["values"].(map[string]any); vals["messages"] == nil {
		t.Errorf("checkpoint values = %v, want the messages", afterAnswer["values"])
	}

	var kinds []string
	for _, ev := range by["events"] {
		kinds = append(kinds, ev["event"].(string)+":"+ev["name"].(string))
	}
	want := []string{"on_chain_start:approval", "on_chain_start:answer", "on_chain_end:answer", "on_chain_start:gate"}
	if !slices.Equal(kinds, want) {
		t.Errorf("events = %v, want %v", kinds, want)
	}
}

// TestEventsModeStreamsTokens: a model's streamed tokens arrive as
// on_chat_model_stream chunks, between the call's start and its end, and
// a node's own event as on_custom_event.
func TestEventsModeStreamsTokens(t *testing.T) {
	talk := &runner.Step{Name: "talk", Node: fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
		in.Run.Emit(runner.EventLLMCall, in.Node, map[string]any{"model": "m1", "phase": "answer"})
		for _, tok := range []string{"Hel", "lo"} {
			in.Run.Emit(runner.EventLLMToken, in.Node, map[string]any{"text": tok})
		}
		in.Run.Emit(runner.EventLLMResult, in.Node, map[string]any{"model": "m1"})
		in.Run.Emit("progress", in.Node, map[string]any{"pct": 100})
		return runner.Update{"path": "talk"}, nil
	}), Routes: []runner.Route{{To: runner.End}}}
	e := newEnv(t, func(c *server.Config) {
		c.Graphs["talk"] = &runner.Graph{Name: "talk", Start: "talk", MaxSteps: 5,
			Fields: map[string]runner.Field{"path": {Reducer: runner.Append, Default: []any{}}},
			Nodes:  map[string]*runner.Step{"talk": talk}}
	})
	evs, _ := readSSE(t, e.request("POST", "/threads/talk/runs/stream", map[string]any{"assistant_id": "talk",
		"if_not_exists": "create", "stream_mode": "events"}))
	var got []string
	for _, ev := range evs {
		d, _ := ev.Data.(map[string]any)
		if ev.Event != "events" {
			continue
		}
		item := d["event"].(string) + ":" + d["name"].(string)
		if chunk, _ := d["data"].(map[string]any)["chunk"].(map[string]any); chunk != nil {
			item += ":" + chunk["content"].(string)
		}
		got = append(got, item)
	}
	want := []string{"on_chain_start:talk", "on_chain_start:talk", "on_chat_model_start:m1", "on_chat_model_stream:m1:Hel",
		"on_chat_model_stream:m1:lo", "on_chat_model_end:m1", "on_custom_event:progress", "on_chain_end:talk", "on_chain_end:talk"}
	if !slices.Equal(got, want) {
		t.Errorf("events =\n%v\nwant\n%v", got, want)
	}
}
