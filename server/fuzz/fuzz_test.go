// Package fuzz_test fuzzes the server's request parsers, in a test binary
// of its own: the fuzzer instruments every package the binary links, and
// the server's own tests link the SQL drivers.
package fuzz_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/server"
)

// node is a function as a graph's node.
type node func(ctx context.Context, in *runner.Input) (runner.Update, error)

func (f node) Run(ctx context.Context, in *runner.Input) (runner.Update, error) { return f(ctx, in) }

// stepsGraph notes that it ran; approvalGraph pauses for a verdict, then
// notes it.
func stepsGraph() *runner.Graph {
	return &runner.Graph{Name: "steps", Start: "a", MaxSteps: 20,
		Fields: map[string]runner.Field{"note": {Reducer: runner.Replace, Default: ""}},
		Nodes: map[string]*runner.Step{"a": {Name: "a", Node: node(func(context.Context, *runner.Input) (runner.Update, error) {
			return runner.Update{"note": "ran"}, nil
		}), Routes: []runner.Route{{To: runner.End}}}}}
}

func approvalGraph() *runner.Graph {
	return &runner.Graph{Name: "approval", Start: "gate", MaxSteps: 20,
		Fields: map[string]runner.Field{"note": {Reducer: runner.Replace, Default: ""}},
		Nodes: map[string]*runner.Step{"gate": {Name: "gate", Node: node(func(_ context.Context, in *runner.Input) (runner.Update, error) {
			if !in.Resumed {
				return nil, &runner.Interrupt{Kind: "approval", Message: "approve?"}
			}
			return runner.Update{"note": "approved"}, nil
		}), Routes: []runner.Route{{To: runner.End}}}}}
}

// fuzzRoutes are the routes whose request bodies FuzzRequests feeds:
// runs (a new turn, a resume with its decisions), threads (create,
// search, patch, state update, history, copy) and assistants.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/runs/wait"},
	{"POST", "/runs/stream"},
	{"POST", "/threads/t1/runs"},
	{"POST", "/threads/t1/runs/wait"},
	{"POST", "/threads/paused/runs/wait"},
	{"POST", "/threads"},
	{"POST", "/threads/search"},
	{"PATCH", "/threads/t1"},
	{"POST", "/threads/t1/state"},
	{"POST", "/threads/paused/state"},
	{"POST", "/threads/t1/history"},
	{"POST", "/threads/t1/copy"},
	{"POST", "/assistants"},
	{"POST", "/assistants/search"},
}

// FuzzRequests sends random bodies to the request parsers: whatever a
// client sends is answered, never with a 5xx, never with a panic.
func FuzzRequests(f *testing.F) {
	st := store.NewMemory()
	s, err := server.New(context.Background(), server.Config{Store: st, NoAuth: true, Heartbeat: time.Hour,
		Graphs: map[string]*runner.Graph{"approval": approvalGraph(), "steps": stepsGraph()}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	serve := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		return w
	}
	for _, seed := range []struct{ path, body string }{
		{"/threads", `{"thread_id": "t1"}`},
		{"/threads", `{"thread_id": "paused"}`},
		{"/threads/t1/runs/wait", `{"assistant_id": "steps"}`},
		{"/threads/paused/runs/wait", `{"assistant_id": "approval"}`},
	} {
		if w := serve("POST", seed.path, seed.body); w.Code != http.StatusOK {
			f.Fatalf("POST %s: %d %s", seed.path, w.Code, w.Body)
		}
	}
	for _, body := range []string{
		`{"assistant_id": "steps", "input": {"note": "x"}, "stream_mode": ["values", "updates"]}`,
		`{"assistant_id": "approval", "command": {"resume": {"approved": true}}}`,
		`{"assistant_id": "approval", "command": {"resume": {"decisions": [{"type": "approve"}]}}}`,
		`{"assistant_id": "steps", "if_not_exists": "x", "config": {"recursion_limit": -5}, "stream_mode": 5}`,
		`{"assistant_id": "steps", "command": {"goto": ["a", "b"], "update": {"note": 1}}}`,
		`{"values": {"note": "y"}, "as_node": "a", "checkpoint_id": "1"}`,
		`{"metadata": {"k": [1, {"x": null}]}, "limit": -1, "offset": "2"}`,
		`[1, 2]`, `null`, `"x"`, `{"a": 1} {}`, `{`,
	} {
		for i := range fuzzRoutes {
			f.Add(uint8(i), body)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		if w := serve(rt.method, rt.path, body); w.Code >= 500 {
			t.Fatalf("%s %s %q = %d %s", rt.method, rt.path, body, w.Code, w.Body)
		}
	})
}
