package server_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/server"
)

// storedEvents are the names of a run's events as the store holds them.
func (e *env) storedEvents(run string) []string {
	e.t.Helper()
	evs, err := e.store.(store.RunStore).Events(context.Background(), run, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, ev := range evs {
		names = append(names, ev.Event)
	}
	return names
}

// valuesOf are the data of a stream's values events.
func valuesOf(evs []sse) []any {
	var out []any
	for _, ev := range evs {
		if ev.Event == "values" {
			out = append(out, ev.Data)
		}
	}
	return out
}

// TestValuesByReference: a run nobody streams stores its values events
// as references to its checkpoints; a stream that reads it later, from
// the start or after a Last-Event-ID, gets the values a live stream got.
func TestValuesByReference(t *testing.T) {
	e := newEnv(t)
	body := map[string]any{"assistant_id": "steps", "stream_mode": []string{"values", "updates"}, "if_not_exists": "create"}
	live, _ := readSSE(t, e.request("POST", "/threads/live/runs/stream", body))
	run := e.call("POST", "/threads/later/runs", body, 200)["run_id"].(string)
	e.waitStatus("later", run, "success")
	stored := e.storedEvents(run)
	if !contains(stored, "values@checkpoint") || contains(stored, "values") {
		t.Errorf("stored events of a run nobody read = %v, want values by reference", stored)
	}
	replayed, _ := readSSE(t, e.request("GET", "/threads/later/runs/"+run+"/stream", nil))
	if got, want := valuesOf(replayed), valuesOf(live); len(want) != 4 || !reflect.DeepEqual(got, want) {
		t.Errorf("replayed values = %v, want the live stream's %v", got, want)
	}
	if got, want := names(replayed), names(live); !reflect.DeepEqual(got, want) {
		t.Errorf("replayed events = %v, want %v", got, want)
	}
	rest, _ := readSSE(t, e.request("GET", "/threads/later/runs/"+run+"/stream", nil, "Last-Event-ID", "3"))
	if !reflect.DeepEqual(rest, replayed[3:]) {
		t.Errorf("replay after 3 = %v, want %v", rest, replayed[3:])
	}
	modes, _ := readSSE(t, e.request("GET", "/threads/later/runs/"+run+"/stream?stream_mode=values", nil))
	if got := valuesOf(modes); !reflect.DeepEqual(got, valuesOf(live)) || contains(names(modes), "updates") {
		t.Errorf("replay of values alone = %v", modes)
	}
}

// TestValuesWholeUnderRetention: with a retention, which may prune the
// checkpoints a reference names, values events are stored whole.
func TestValuesWholeUnderRetention(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Retention = runner.Retention{Keep: 1} })
	e.call("POST", "/threads", map[string]any{"thread_id": "t"}, 200)
	id := e.call("POST", "/threads/t/runs", map[string]any{"assistant_id": "steps", "stream_mode": "values"}, 200)["run_id"].(string)
	e.waitStatus("t", id, "success")
	if stored := e.storedEvents(id); contains(stored, "values@checkpoint") || !contains(stored, "values") {
		t.Errorf("stored events under retention = %v, want whole values", stored)
	}
	evs, _ := readSSE(t, e.request("GET", "/threads/t/runs/"+id+"/stream", nil))
	if v := valuesOf(evs); len(v) != 4 {
		t.Errorf("values replayed = %v, want 4", v)
	}
}

// TestValuesWholeUnlessSync: a run whose checkpoints may reach the store
// after their events (durability async) stores its values whole.
func TestValuesWholeUnlessSync(t *testing.T) {
	async := stepsGraph()
	async.Durability = runner.DurabilityAsync
	e := newEnv(t, func(c *server.Config) { c.Graphs["async"] = async })
	e.call("POST", "/threads", map[string]any{"thread_id": "t"}, 200)
	id := e.call("POST", "/threads/t/runs", map[string]any{"assistant_id": "async", "stream_mode": "values"}, 200)["run_id"].(string)
	e.waitStatus("t", id, "success")
	if stored := e.storedEvents(id); contains(stored, "values@checkpoint") || !contains(stored, "values") {
		t.Errorf("stored events of an async run = %v, want whole values", stored)
	}
}

// TestHeldEventsWritten: a run nobody reads holds its steps' events for
// at most a moment: those of a step before a node that blocks are in the
// store while the run goes on.
func TestHeldEventsWritten(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", map[string]any{"thread_id": "t"}, 200)["thread_id"].(string)
	run := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "hold", "input": map[string]any{"block": true},
		"stream_mode": "values"}, 200)["run_id"].(string)
	deadline := time.Now().Add(5 * time.Second)
	for !contains(e.storedEvents(run), "values@checkpoint") {
		if time.Now().After(deadline) {
			t.Fatalf("the first step's events never written while the run blocks: %v", e.storedEvents(run))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := e.call("GET", "/threads/"+id+"/runs/"+run, nil, 200); r["status"] != "running" {
		t.Errorf("run status = %v, want running", r["status"])
	}
	close(e.release)
	e.waitStatus(id, run, "success")
	evs, _ := readSSE(t, e.request("GET", "/threads/"+id+"/runs/"+run+"/stream", nil))
	if got := names(evs); got[0] != "metadata" || got[len(got)-1] != "end" {
		t.Errorf("events = %v", got)
	}
}

func names(evs []sse) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Event)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
