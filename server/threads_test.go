package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
	"github.com/runner-dev/runner/server"
)

// TestAuth: no key or a wrong one is 401; health needs none; another
// tenant's thread is not found.
func TestAuth(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	e.call("GET", "/ok", nil, 200)
	e.call("GET", "/info", nil, 200)
	for _, key := range []string{"", "sk-wrong"} {
		e.key = key
		p := e.call("GET", "/threads/"+id, nil, 401)
		if p["status"] != 401.0 || p["title"] != "Unauthorized" {
			t.Errorf("key %q: problem %v", key, p)
		}
	}
	req, _ := http.NewRequest("GET", e.url+"/threads/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("Bearer key: %v %v", resp.StatusCode, err)
	}
	e.key = testKey
	e.call("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "approval"}, 200)
	if h, err := e.store.History(context.Background(), access.ThreadKey("acme", id)); err != nil || h[0].Tenant != "acme" {
		t.Errorf("the run's thread is not the key's tenant's: %v", err)
	}
	e.key = otherKey
	e.call("GET", "/threads/"+id, nil, 404)
	e.call("GET", "/threads/"+id+"/state", nil, 404)
	e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "approval"}, 404)
	if found := e.list("POST", "/threads/search", map[string]any{}); len(found) != 0 {
		t.Errorf("other tenant's search found %v", found)
	}
	if _, err := server.New(context.Background(), server.Config{Store: e.store}); err == nil {
		t.Error("a server without keys and without NoAuth was made")
	}
}

// TestAssistants: one assistant per graph, by uuid5 id or name.
func TestAssistants(t *testing.T) {
	e := newEnv(t)
	all := e.list("POST", "/assistants/search", map[string]any{"limit": 10})
	if len(all) != 5 {
		t.Fatalf("%d assistants, want 5", len(all))
	}
	id := server.AssistantID("approval")
	if id != "e234584d-b7bf-527f-9d06-ba77f8f5172d" { // uuid5(6ba7b821-..., "approval"), as LangGraph derives it
		t.Errorf("assistant id %s", id)
	}
	a := e.call("GET", "/assistants/"+id, nil, 200)
	if a["graph_id"] != "approval" || a["assistant_id"] != id {
		t.Errorf("assistant %v", a)
	}
	g := e.call("GET", "/assistants/approval/graph", nil, 200)
	if len(g["nodes"].([]any)) != 4 || len(g["edges"].([]any)) != 3 {
		t.Errorf("graph %v", g)
	}
	s := e.call("GET", "/assistants/approval/schemas", nil, 200)
	if _, ok := s["state_schema"].(map[string]any)["properties"].(map[string]any)["messages"]; !ok {
		t.Errorf("schemas %v", s)
	}
	e.call("GET", "/assistants/nope", nil, 404)
	// a run by assistant id
	out := e.call("POST", "/runs/wait", map[string]any{"assistant_id": id}, 200)
	if out["__interrupt__"] == nil {
		t.Errorf("run by assistant id = %v", out)
	}
}

// TestThreads: create (if_exists), patch, search by status and metadata,
// state update as a node, history newest first, delete.
func TestThreads(t *testing.T) {
	e := newEnv(t)
	e.call("POST", "/threads", map[string]any{"thread_id": "t1", "metadata": map[string]any{"team": "a"}}, 200)
	e.call("POST", "/threads", map[string]any{"thread_id": "t1"}, 409)
	if got := e.call("POST", "/threads", map[string]any{"thread_id": "t1", "if_exists": "do_nothing"}, 200); got["metadata"].(map[string]any)["team"] != "a" {
		t.Errorf("if_exists do_nothing = %v", got)
	}
	e.call("PATCH", "/threads/t1", map[string]any{"metadata": map[string]any{"tier": 2}}, 200)
	e.call("POST", "/threads", map[string]any{"thread_id": "t2", "metadata": map[string]any{"graph_id": "agent"}}, 200)
	e.call("POST", "/threads", map[string]any{"thread_id": "t3", "supersteps": []any{map[string]any{}}}, 422)
	e.call("POST", "/threads/t1/runs/wait", map[string]any{"assistant_id": "approval"}, 200)
	found := e.list("POST", "/threads/search", map[string]any{"status": "interrupted", "metadata": map[string]any{"tier": 2}})
	if len(found) != 1 || found[0].(map[string]any)["thread_id"] != "t1" {
		t.Errorf("search interrupted = %v", found)
	}
	if idle := e.list("POST", "/threads/search", map[string]any{"status": "idle"}); len(idle) != 1 {
		t.Errorf("search idle = %v", idle)
	}
	e.call("POST", "/threads/t2/state", map[string]any{"values": map[string]any{"topic": "x"}}, 409)
	e.call("POST", "/threads/t2/runs/wait", map[string]any{"assistant_id": "approval"}, 200)
	if got := e.call("GET", "/threads/t2", nil, 200); got["metadata"].(map[string]any)["graph_id"] != "approval" || got["status"] != "interrupted" {
		t.Errorf("a thread created with a graph_id runner does not serve, after a run: %v", got)
	}
	e.call("POST", "/threads/t2/runs", map[string]any{"assistant_id": "slow"}, 409)
	upd := e.call("POST", "/threads/t1/state", map[string]any{"values": map[string]any{"approved": true}, "as_node": "gate"}, 200)
	cp := upd["checkpoint"].(map[string]any)["checkpoint_id"].(string)
	st := e.call("GET", "/threads/t1/state", nil, 200)
	if st["values"].(map[string]any)["approved"] != true || len(st["next"].([]any)) != 0 || st["checkpoint"].(map[string]any)["checkpoint_id"] != cp {
		t.Errorf("state after update as gate: %v", st)
	}
	hist := e.list("POST", "/threads/t1/history", map[string]any{"limit": 2})
	if len(hist) != 2 || hist[0].(map[string]any)["checkpoint"].(map[string]any)["checkpoint_id"] != cp {
		t.Errorf("history = %v", hist)
	}
	older := hist[1].(map[string]any)["checkpoint"].(map[string]any)["checkpoint_id"].(string)
	if old := e.call("GET", "/threads/t1/state/"+older, nil, 200); old["values"].(map[string]any)["approved"] != false {
		t.Errorf("state at %s = %v", older, old)
	}
	before := e.list("POST", "/threads/t1/history", map[string]any{"before": map[string]any{"configurable": map[string]any{"checkpoint_id": cp}}})
	if len(before) == 0 || before[0].(map[string]any)["checkpoint"].(map[string]any)["checkpoint_id"] != older {
		t.Errorf("history before %s = %v", cp, before)
	}
	if got := e.list("GET", "/threads/t1/history?limit=1&before="+cp, nil); len(got) != 1 || got[0].(map[string]any)["checkpoint"].(map[string]any)["checkpoint_id"] != older {
		t.Errorf("GET history?limit=1&before=%s = %v", cp, got)
	}
	e.call("GET", "/threads/t1/history?limit=-1", nil, 422)
	e.call("DELETE", "/threads/t1", nil, 204)
	e.call("GET", "/threads/t1", nil, 404)
	if _, err := e.store.History(context.Background(), "t1"); err == nil {
		t.Error("the deleted thread's checkpoints are left")
	}
}

// TestHeartbeat: an idle stream gets keep-alive comments; a client that
// leaves with on_disconnect cancel cancels the run.
func TestHeartbeat(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"assistant_id": "slow", "on_disconnect": "cancel"})
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/threads/"+id+"/runs/stream", strings.NewReader(string(body)))
	req.Header.Set("X-Api-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), ": heartbeat") {
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("stream ended before a heartbeat: %v\n%s", err, got.String())
		}
	}
	cancel()
	resp.Body.Close()
	runs := e.list("GET", "/threads/"+id+"/runs", nil)
	e.waitStatus(id, runs[0].(map[string]any)["run_id"].(string), "interrupted")
}

// TestRecovery: a run a stopped server left running, whose graph this
// server does not serve, cannot be taken over: it is marked error, its
// stream ended, once it has not changed for a lease TTL and its thread is
// not leased: on startup, then by the sweep; a run whose thread a live
// run leases is left alone.
func TestRecovery(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rs := st.(store.RunStore)
	ctx := context.Background()
	const ttl = 200 * time.Millisecond
	old := time.Now().Add(-time.Hour)
	for _, r := range []*store.RunRecord{
		{ID: "old", Thread: "t1", CreatedAt: old},
		{ID: "leased", Thread: "t2", CreatedAt: old},
		{ID: "recent", Thread: "t3"},
	} {
		r.Assistant, r.Status = "slow", store.RunRunning
		if _, _, err := rs.CreateRun(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Acquire(ctx, "t2", "a live server", time.Minute); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(ctx, server.Config{Store: st, NoAuth: true, Graphs: map[string]*runner.Graph{}, LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(ctx)
	want := map[string]string{"old": store.RunError, "leased": store.RunRunning, "recent": store.RunRunning}
	checkRuns(t, rs, want)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(ttl / 4) {
		if r, _ := rs.Run(ctx, "recent"); r.Status == store.RunError {
			break
		}
	}
	want["recent"] = store.RunError
	checkRuns(t, rs, want)
}

// checkRuns checks the status of runs, and that the stream of each
// marked error has an error event and its end.
func checkRuns(t *testing.T, rs store.RunStore, want map[string]string) {
	t.Helper()
	for id, status := range want {
		r, _ := rs.Run(context.Background(), id)
		evs, _ := rs.Events(context.Background(), id, 0)
		if r.Status != status || status == store.RunError && (len(evs) != 2 || evs[1].Event != "end") {
			t.Errorf("run %s is %s with events %v, want %s", id, r.Status, evs, status)
		}
	}
}

// TestCORS: a configured origin gets CORS headers exposing the run's
// location; others get none.
func TestCORS(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.CORSOrigins = []string{"https://app.example"} })
	for origin, want := range map[string]string{"https://app.example": "https://app.example", "https://evil.example": ""} {
		req, _ := http.NewRequest("OPTIONS", e.url+"/threads", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != want {
			t.Errorf("origin %s: allowed %q, want %q", origin, got, want)
		}
		if want != "" && !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Content-Location") {
			t.Errorf("exposed headers %q", resp.Header.Get("Access-Control-Expose-Headers"))
		}
	}
}

// A completed run's thread is pruned to the server's retention, as exec
// prunes: the newest state stays whole, the older checkpoints go.
func TestRetentionAfterRun(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Retention = runner.Retention{Keep: 2} })
	e.call("POST", "/threads", map[string]any{"thread_id": "kept"}, 200)
	out := e.call("POST", "/threads/kept/runs/wait", map[string]any{"assistant_id": "steps"}, 200)
	if path, _ := out["path"].([]any); len(path) != 3 {
		t.Fatalf("run values %v", out)
	}
	hist := e.list("POST", "/threads/kept/history", map[string]any{"limit": 100})
	if len(hist) != 2 {
		t.Fatalf("history after the run: %d checkpoints, want the 2 the retention keeps", len(hist))
	}
	if path, _ := hist[0].(map[string]any)["values"].(map[string]any)["path"].([]any); len(path) != 3 {
		t.Errorf("newest state after pruning: %v", hist[0])
	}
}

// A run that overruns its pipeline's timeout ends timed out: its run has
// status timeout, and runs/wait answers the error.
func TestRunTimedOut(t *testing.T) {
	never := make(chan struct{})
	g := slowGraph(never)
	g.Name, g.Timeout = "late", 30*time.Millisecond
	e := newEnv(t, func(c *server.Config) { c.Graphs["late"] = g })
	e.call("POST", "/threads", map[string]any{"thread_id": "late"}, 200)
	out := e.call("POST", "/threads/late/runs/wait", map[string]any{"assistant_id": "late"}, 200)
	if errBody, _ := out["__error__"].(map[string]any); errBody["error"] != "timeout" {
		t.Fatalf("runs/wait of a timed-out run: %v", out)
	}
	runs := e.list("GET", "/threads/late/runs", nil)
	if len(runs) != 1 || runs[0].(map[string]any)["status"] != "timeout" {
		t.Errorf("runs %v, want one with status timeout", runs)
	}
}

// TestServerNamesInTimeOrder: the ids the server gives threads and runs
// are UUIDv7, each after the one before, so their rows and index entries
// go to the newest pages of the store (a client's random ids scatter
// them: docs/performance.md).
func TestServerNamesInTimeOrder(t *testing.T) {
	e := newEnv(t)
	var threads, runs []string
	for range 5 {
		id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
		threads = append(threads, id)
		runs = append(runs, e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "steps"}, 200)["run_id"].(string))
	}
	for what, ids := range map[string][]string{"thread": threads, "run": runs} {
		for i, id := range ids {
			if u, err := uuid.Parse(id); err != nil || u.Version() != 7 {
				t.Errorf("%s id %q: version %v, %v; want a UUIDv7", what, id, u.Version(), err)
			}
			if i > 0 && id <= ids[i-1] {
				t.Errorf("%s id %s comes after %s, not in time order", what, id, ids[i-1])
			}
		}
	}
}

// TestHistorySteps: every checkpoint of a history has a step of its own,
// strictly descending newest first, the thread's input checkpoint at -1
// with source input, as LangGraph writes them — across a pause, its
// resume, an edit and a second turn.
func TestHistorySteps(t *testing.T) {
	e := newEnv(t)
	e.call("POST", "/threads", map[string]any{"thread_id": "h"}, 200)
	e.call("POST", "/threads/h/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{"topic": "a"}}, 200)
	e.call("POST", "/threads/h/runs/wait", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": map[string]any{"approved": true}}}, 200)
	e.call("POST", "/threads/h/state", map[string]any{"values": map[string]any{"topic": "edited"}}, 200)
	e.call("POST", "/threads/h/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{"topic": "b"}}, 200)
	hist := e.list("POST", "/threads/h/history", map[string]any{"limit": 100})
	if len(hist) < 6 {
		t.Fatalf("history has %d checkpoints", len(hist))
	}
	var steps []float64
	for _, h := range hist {
		steps = append(steps, h.(map[string]any)["metadata"].(map[string]any)["step"].(float64))
	}
	for i := 1; i < len(steps); i++ {
		if steps[i] >= steps[i-1] {
			t.Errorf("steps %v do not strictly descend at %d", steps, i)
		}
	}
	first := hist[len(hist)-1].(map[string]any)["metadata"].(map[string]any)
	if first["step"] != -1.0 || first["source"] != "input" {
		t.Errorf("the input checkpoint's metadata %v, want step -1, source input", first)
	}
	head := e.call("GET", "/threads/h/state", nil, 200)["metadata"].(map[string]any)
	if head["step"] != steps[0] {
		t.Errorf("state's step %v, history head's %v", head["step"], steps[0])
	}
}
