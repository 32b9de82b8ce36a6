package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/server"
)

// TestStreamInterruptResume streams a run to its approval interrupt,
// resumes it with command.resume, and refuses a second resume.
func TestStreamInterruptResume(t *testing.T) {
	e := newEnv(t)
	before := effects.Load()
	th := e.call("POST", "/threads", map[string]any{"metadata": map[string]any{"user": "ann"}}, 200)
	id := th["thread_id"].(string)
	if th["status"] != "idle" {
		t.Errorf("new thread status = %v", th["status"])
	}
	resp := e.request("POST", "/threads/"+id+"/runs/stream", map[string]any{"assistant_id": "approval",
		"input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "act please"}}}, "stream_mode": []string{"values", "updates"}})
	loc, cloc := resp.Header.Get("Location"), resp.Header.Get("Content-Location")
	evs, _ := readSSE(t, resp)
	if evs[0].Event != "metadata" || evs[len(evs)-1].Event != "end" {
		t.Fatalf("events %v: want metadata first, end last", evs)
	}
	runID := evs[0].Data.(map[string]any)["run_id"].(string)
	if cloc != "/threads/"+id+"/runs/"+runID || loc != cloc+"/stream" {
		t.Errorf("Content-Location %q, Location %q", cloc, loc)
	}
	var intrID string
	for i, ev := range evs {
		if ev.ID != fmt.Sprint(i+1) {
			t.Errorf("event %d (%s) has id %q", i, ev.Event, ev.ID)
		}
		if d, ok := ev.Data.(map[string]any); ok && ev.Event == "updates" && d["__interrupt__"] != nil {
			intr := d["__interrupt__"].([]any)[0].(map[string]any)
			intrID = intr["id"].(string)
			if v := intr["value"].(map[string]any); v["runner"].(map[string]any)["message"] != "approve act?" || v["action_requests"] == nil || v["message"] != nil {
				t.Errorf("interrupt value %v", v)
			}
		}
	}
	if intrID == "" {
		t.Fatalf("no __interrupt__ update in %v", evs)
	}
	if got := e.call("GET", "/threads/"+id+"/runs/"+runID, nil, 200)["status"]; got != "interrupted" {
		t.Errorf("paused run status %v", got)
	}
	th = e.call("GET", "/threads/"+id, nil, 200)
	if th["status"] != "interrupted" || th["metadata"].(map[string]any)["graph_id"] != "approval" || th["metadata"].(map[string]any)["user"] != "ann" {
		t.Errorf("paused thread %v", th)
	}
	msgs := th["values"].(map[string]any)["messages"].([]any)
	if m := msgs[0].(map[string]any); m["type"] != "human" || m["content"] != "act please" {
		t.Errorf("first message %v, want the human one", m)
	}
	if m := msgs[1].(map[string]any); m["type"] != "ai" || m["tool_calls"].([]any)[0].(map[string]any)["args"].(map[string]any)["x"] != 1.0 {
		t.Errorf("second message %v, want the ai one with its call", m)
	}
	st := e.call("GET", "/threads/"+id+"/state", nil, 200)
	task := st["tasks"].([]any)[0].(map[string]any)
	if fmt.Sprint(st["next"]) != "[gate]" || task["interrupts"].([]any)[0].(map[string]any)["id"] != intrID {
		t.Errorf("state next %v tasks %v, want gate with interrupt %s", st["next"], st["tasks"], intrID)
	}

	resume := map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": map[string]any{"approved": true}}}
	out := e.call("POST", "/threads/"+id+"/runs/wait", resume, 200)
	if out["approved"] != true || len(out["messages"].([]any)) != 3 {
		t.Errorf("values after resume %v", out)
	}
	if got := e.call("GET", "/threads/"+id, nil, 200)["status"]; got != "idle" {
		t.Errorf("thread status after resume %v", got)
	}
	p := e.call("POST", "/threads/"+id+"/runs/wait", resume, 409)
	if !strings.Contains(p["detail"].(string), "nothing to resume") {
		t.Errorf("second resume problem %v", p)
	}
	if n := effects.Load() - before; n != 1 {
		t.Errorf("the approved action ran %d times, want 1", n)
	}
}

// TestJoinStreamReplay rejoins a finished run's stream after an event id:
// each later event comes once, in order, to the end.
func TestJoinStreamReplay(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	run := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "approval", "stream_mode": "updates"}, 200)
	runID := run["run_id"].(string)
	joined := e.call("GET", "/threads/"+id+"/runs/"+runID+"/join", nil, 200)
	if joined["__interrupt__"] == nil {
		t.Errorf("join of a paused run = %v, want its __interrupt__", joined)
	}
	all, _ := readSSE(t, e.request("GET", "/threads/"+id+"/runs/"+runID+"/stream", nil))
	rest, _ := readSSE(t, e.request("GET", "/threads/"+id+"/runs/"+runID+"/stream", nil, "Last-Event-ID", "2"))
	if len(all) < 4 || len(rest) != len(all)-2 {
		t.Fatalf("replay after 2: %d events of %d", len(rest), len(all))
	}
	for i, ev := range rest {
		if ev.ID != all[i+2].ID || ev.Event != all[i+2].Event {
			t.Errorf("replayed event %d = %v, want %v", i, ev, all[i+2])
		}
	}
}

// TestMultitask: a busy thread refuses a run (409), queues one (enqueue)
// and runs it after the cancelled one; a cancelled run is interrupted
// and its thread idle.
func TestMultitask(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	first := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "slow"}, 200)["run_id"].(string)
	e.waitStatus(id, first, "running")
	if got := e.call("GET", "/threads/"+id, nil, 200)["status"]; got != "busy" {
		t.Errorf("thread status while running = %v", got)
	}
	e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "slow"}, 409)
	queued := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "slow", "multitask_strategy": "enqueue"}, 200)["run_id"].(string)
	if got := e.call("GET", "/threads/"+id+"/runs/"+queued, nil, 200)["status"]; got != "pending" {
		t.Errorf("queued run status %v", got)
	}
	e.call("POST", "/threads/"+id+"/runs/"+first+"/cancel?wait=1", nil, 204)
	if got := e.call("GET", "/threads/"+id+"/runs/"+first, nil, 200)["status"]; got != "interrupted" {
		t.Errorf("cancelled run status %v", got)
	}
	e.waitStatus(id, queued, "running")
	close(e.release)
	e.waitStatus(id, queued, "success")
	th := e.call("GET", "/threads/"+id, nil, 200)
	if th["status"] != "idle" || th["values"].(map[string]any)["n"] != 1.0 {
		t.Errorf("thread after the queued run %v", th)
	}
	if runs := e.list("GET", "/threads/"+id+"/runs", nil); len(runs) != 2 || runs[0].(map[string]any)["run_id"] != queued {
		t.Errorf("runs %v, want the queued one first of 2", runs)
	}
}

// TestQueuedRunStream streams a run queued behind another: the stream
// opens at once, and the queued run's events come once it starts,
// metadata first, numbered from 1, to its end.
func TestQueuedRunStream(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	first := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "slow"}, 200)["run_id"].(string)
	e.waitStatus(id, first, "running")
	resp := e.request("POST", "/threads/"+id+"/runs/stream", map[string]any{"assistant_id": "slow", "multitask_strategy": "enqueue", "stream_mode": "updates"})
	queued := strings.TrimPrefix(resp.Header.Get("Content-Location"), "/threads/"+id+"/runs/")
	if got := e.call("GET", "/threads/"+id+"/runs/"+queued, nil, 200)["status"]; got != "pending" {
		t.Errorf("queued run status %v", got)
	}
	close(e.release)
	evs, _ := readSSE(t, resp)
	if len(evs) < 3 || evs[0].Event != "metadata" || evs[0].Data.(map[string]any)["run_id"] != queued || evs[len(evs)-1].Event != "end" {
		t.Fatalf("queued run's stream %v: want its metadata first, end last", evs)
	}
	for i, ev := range evs {
		if ev.ID != fmt.Sprint(i+1) {
			t.Errorf("event %d (%s) has id %q", i, ev.Event, ev.ID)
		}
	}
	e.waitStatus(id, queued, "success")
}

// TestInterruptStrategy cancels the running run for the new one.
func TestInterruptStrategy(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	first := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "slow"}, 200)["run_id"].(string)
	e.waitStatus(id, first, "running")
	second := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "slow", "multitask_strategy": "interrupt"}, 200)["run_id"].(string)
	e.waitStatus(id, first, "interrupted")
	e.waitStatus(id, second, "running")
	close(e.release)
	e.waitStatus(id, second, "success")
}

// TestWait: runs/wait answers with the values; a failed run is 200 with
// __error__; a stateless run's messages come back in LangChain form.
func TestWait(t *testing.T) {
	e := newEnv(t)
	out := e.call("POST", "/runs/wait", map[string]any{"assistant_id": "fail"}, 200)
	if errBody, _ := out["__error__"].(map[string]any); errBody["error"] != "node_error" || !strings.Contains(fmt.Sprint(errBody["message"]), "boom") {
		t.Errorf("failed run = %v", out)
	}
	out = e.call("POST", "/runs/wait", map[string]any{"assistant_id": "approval",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}}, 200)
	intr, _ := out["__interrupt__"].([]any)
	if len(intr) != 1 || out["messages"].([]any)[0].(map[string]any)["type"] != "human" {
		t.Errorf("paused stateless run = %v", out)
	}
}

// TestWaitAnswerSized: an answer ready at once goes out with its length,
// not chunked (one write where it fits, no closing chunk). Ready at once
// means within a heartbeat: the env's 50 ms is less than a run takes under
// -race on a busy machine, when the answer is rightly begun early and
// chunked; the heartbeat here is an hour.
func TestWaitAnswerSized(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Heartbeat = time.Hour })
	long := strings.Repeat("a long message ", 400) // 6 KB: past net/http's own sizing of small bodies
	resp := e.request("POST", "/runs/wait", map[string]any{"assistant_id": "approval",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": long}}}})
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) > 0 || len(body) < len(long) {
		t.Errorf("answer %d, Content-Length %d for %d bytes, Transfer-Encoding %v", resp.StatusCode, resp.ContentLength, len(body), resp.TransferEncoding)
	}
}

// TestIdempotency: a POST retried with its Idempotency-Key gives back the
// run it created.
func TestIdempotency(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	var ids []string
	for range 2 {
		resp := e.request("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "approval"}, "Idempotency-Key", "k1")
		var run map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&run)
		resp.Body.Close()
		ids = append(ids, fmt.Sprint(run["run_id"]))
	}
	if ids[0] != ids[1] {
		t.Errorf("retried POST created runs %v", ids)
	}
	if runs := e.list("GET", "/threads/"+id+"/runs", nil); len(runs) != 1 {
		t.Errorf("%d runs, want 1", len(runs))
	}
}

// TestRefusals: what runner cannot honour is a 422, an unknown thread a
// 404, a large body a 413, all as problem+json.
func TestRefusals(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.MaxBody = 1000 })
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	for _, tc := range []struct {
		path   string
		body   any
		status int
	}{
		{"/threads/" + id + "/runs", map[string]any{"assistant_id": "approval", "webhook": "http://127.0.0.1:1/hook"}, 422},
		{"/threads/" + id + "/runs/stream", map[string]any{"assistant_id": "approval", "stream_mode": "lifecycle"}, 422},
		{"/threads/" + id + "/runs", map[string]any{"assistant_id": "nope"}, 404},
		{"/threads/missing/runs", map[string]any{"assistant_id": "approval"}, 404},
		{"/threads/" + id + "/runs", map[string]any{"assistant_id": "approval", "input": map[string]any{"pad": strings.Repeat("x", 2000)}}, 413},
	} {
		resp := e.request("POST", tc.path, tc.body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("POST %s %v = %d %s, want %d problem", tc.path, tc.body, resp.StatusCode, resp.Header.Get("Content-Type"), tc.status)
		}
	}
	created := e.call("POST", "/threads/fresh/runs/wait", map[string]any{"assistant_id": "approval", "if_not_exists": "create"}, 200)
	if created["__interrupt__"] == nil {
		t.Errorf("run on a thread created with if_not_exists = %v", created)
	}
}

// TestRejoinLive rejoins a running run's stream after its first event:
// the rest comes once, then the live events, to the end.
func TestRejoinLive(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	run := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "slow", "stream_mode": []string{"values", "updates", "debug"}}, 200)["run_id"].(string)
	e.waitStatus(id, run, "running")
	done := make(chan []sse)
	go func() {
		evs, _ := readSSE(t, e.request("GET", "/threads/"+id+"/runs/"+run+"/stream", nil, "Last-Event-ID", "1"))
		done <- evs
	}()
	time.Sleep(50 * time.Millisecond)
	close(e.release)
	evs := <-done
	for i, ev := range evs {
		if ev.ID != fmt.Sprint(i+2) {
			t.Fatalf("event %d of the rejoined stream has id %s, want %d: %v", i, ev.ID, i+2, evs)
		}
	}
	last := evs[len(evs)-1]
	var values map[string]any
	for _, ev := range evs {
		if ev.Event == "values" {
			values = ev.Data.(map[string]any)
		}
	}
	if last.Event != "end" || values["n"] != 1.0 {
		t.Errorf("rejoined stream ends with %v, last values %v", last, values)
	}
}

// TestStatelessStream: a stateless run streams to its end, then its
// thread is gone.
func TestStatelessStream(t *testing.T) {
	e := newEnv(t)
	evs, _ := readSSE(t, e.request("POST", "/runs/stream", map[string]any{"assistant_id": "approval", "stream_mode": "messages-tuple"}))
	if len(evs) < 3 || evs[0].Event != "metadata" || evs[len(evs)-1].Event != "end" {
		t.Fatalf("stateless stream %v", evs)
	}
	msg := evs[1].Data.([]any)
	if evs[1].Event != "messages" || msg[0].(map[string]any)["type"] != "ai" || msg[1].(map[string]any)["langgraph_node"] != "answer" {
		t.Errorf("messages-tuple event %v", evs[1])
	}
	thread := evs[0].Data.(map[string]any)["thread_id"].(string)
	for range 100 {
		if resp := e.request("GET", "/threads/"+thread, nil); resp.StatusCode == 404 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("the stateless run's thread is left")
}

// TestShutdown cancels a run still running when the grace period ends:
// it ends interrupted, its thread resumable where it stopped.
func TestShutdown(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	run := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "slow"}, 200)["run_id"].(string)
	e.waitStatus(id, run, "running")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	e.srv.Shutdown(ctx)
	e.call("GET", "/threads/"+id+"/runs/"+run, nil, 200)
	if got := e.call("GET", "/threads/"+id+"/runs/"+run, nil, 200)["status"]; got != "interrupted" {
		t.Errorf("run cancelled by shutdown: %v", got)
	}
	if got := e.call("GET", "/readyz", nil, 503); got["status"] != 503.0 {
		t.Errorf("readyz while shut down: %v", got)
	}
	e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "slow"}, 503)
	st := e.call("GET", "/threads/"+id+"/state", nil, 200)
	if fmt.Sprint(st["next"]) != "[wait]" || st["metadata"].(map[string]any)["status"] != "cancelled" {
		t.Errorf("state after shutdown %v", st)
	}
}

// readCounter is a store that counts the reads of thread records.
type readCounter struct {
	store.Store
	store.RunStore
	store.Prober
	reads atomic.Int64
}

func (c *readCounter) Thread(ctx context.Context, id string) (*store.ThreadRecord, error) {
	c.reads.Add(1)
	return c.RunStore.Thread(ctx, id)
}

// TestIfNotExistsReadsOnce: a run with if_not_exists create on a new
// thread creates it with the run and reads no thread record; on an
// existing thread (the tenant's, naming no graph) it runs there, tags the
// thread with its graph and reads the record once, as a run without
// if_not_exists does; on an id another tenant uses it makes the tenant's
// own thread, as on a new id, and the other's thread has no run.
func TestIfNotExistsReadsOnce(t *testing.T) {
	var counted *readCounter
	e := newEnv(t, func(c *server.Config) {
		counted = &readCounter{Store: c.Store, RunStore: c.Store.(store.RunStore), Prober: c.Store.(store.Prober)}
		c.Store = counted
	})
	for _, id := range []string{"mine", "plain"} {
		e.call("POST", "/threads", map[string]any{"thread_id": id}, 200)
	}
	e.key = otherKey
	e.call("POST", "/threads", map[string]any{"thread_id": "theirs"}, 200)
	e.key = testKey

	create := map[string]any{"assistant_id": "approval", "if_not_exists": "create"}
	for _, tc := range []struct {
		thread string
		body   map[string]any
		reads  int64
	}{
		{"new", create, 0},
		{"mine", create, 1},
		{"plain", map[string]any{"assistant_id": "approval"}, 1},
	} {
		counted.reads.Store(0)
		if got := e.call("POST", "/threads/"+tc.thread+"/runs/wait", tc.body, 200); got["__interrupt__"] == nil {
			t.Errorf("run on thread %s = %v, want it paused at its approval", tc.thread, got)
		}
		if n := counted.reads.Load(); n != tc.reads {
			t.Errorf("run %v on thread %s read its thread record %d times, want %d", tc.body, tc.thread, n, tc.reads)
		}
		meta, _ := e.call("GET", "/threads/"+tc.thread, nil, 200)["metadata"].(map[string]any)
		if meta["graph_id"] != "approval" {
			t.Errorf("thread %s metadata = %v, want graph_id approval", tc.thread, meta)
		}
	}
	counted.reads.Store(0)
	if got := e.call("POST", "/threads/theirs/runs/wait", create, 200); got["__interrupt__"] == nil || counted.reads.Load() != 0 {
		t.Errorf("run on an id the other tenant uses = %v after %d reads, want a new thread's run", got, counted.reads.Load())
	}
	e.key = otherKey
	if runs := e.list("GET", "/threads/theirs/runs", nil); len(runs) != 0 {
		t.Errorf("runs on the other tenant's thread = %v, want none", runs)
	}
}

// A thread created with its run starts from no checkpoint, even where a
// writer outside the server (runner exec --tenant acme on the same store)
// left checkpoints under its id without a thread record: the run fails at
// its first checkpoint, the stray state is neither read nor changed.
// Another tenant's checkpoints under the same id are another thread.
func TestCreatedThreadIgnoresStrayCheckpoints(t *testing.T) {
	e := newEnv(t)
	for _, tenant := range []string{"acme", "other"} {
		stray := &runner.Engine{Store: e.store, Tenant: tenant}
		if _, err := stray.Run(context.Background(), stepsGraph(), access.ThreadKey(tenant, "stray"), nil); err != nil {
			t.Fatal(err)
		}
	}
	history := func(tenant string) []*store.Checkpoint {
		h, err := e.store.History(context.Background(), access.ThreadKey(tenant, "stray"))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := history("acme")
	body := map[string]any{"assistant_id": "steps", "input": map[string]any{"note": "mine"}, "if_not_exists": "create"}
	got := e.call("POST", "/threads/stray/runs/wait", body, 200)
	if got["__error__"] == nil || got["path"] != nil {
		t.Errorf("run on a new thread over stray checkpoints = %v, want an error and no state", got)
	}
	if after := history("acme"); len(after) != len(before) || after[len(after)-1].Tenant != "acme" {
		t.Errorf("stray checkpoints after the run: %d, want the %d written before, unchanged", len(after), len(before))
	}
	e.key = otherKey
	e.call("GET", "/threads/stray", nil, 404) // exec wrote it, no record: the tenant adopts it with POST /threads
	e.call("POST", "/threads", map[string]any{"thread_id": "stray"}, 200)
	if got := e.call("GET", "/threads/stray/state", nil, 200)["values"].(map[string]any); got["note"] != "" || len(got["path"].([]any)) != 3 {
		t.Errorf("the other tenant's adopted thread = %v, want its own run's state", got)
	}
}
