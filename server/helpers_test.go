package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
	"github.com/runner-dev/runner/server"
)

// fn is a node of a test graph.
type fn func(ctx context.Context, in *runner.Input) (runner.Update, error)

func (f fn) Run(ctx context.Context, in *runner.Input) (runner.Update, error) { return f(ctx, in) }

// effects counts the runs of the approval graph's approved action.
var effects atomic.Int64

// approvalGraph answers the user, then pauses for approval; approved, it
// acts once and ends.
func approvalGraph() *runner.Graph {
	return &runner.Graph{Name: "approval", Start: "answer", MaxSteps: 20,
		Fields: map[string]runner.Field{
			"messages": {Reducer: runner.Messages, Default: []any{}},
			"approved": {Reducer: runner.Replace, Default: false},
			"topic":    {Reducer: runner.Replace, Default: ""},
		},
		Nodes: map[string]*runner.Step{
			"answer": {Name: "answer", Node: fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
				return runner.Update{"messages": []any{map[string]any{"id": "a1", "role": "assistant", "content": "",
					"tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "act", "arguments": `{"x":1}`}}}}}}, nil
			}), Routes: []runner.Route{{To: "gate"}}},
			"gate": {Name: "gate", Node: fn(func(_ context.Context, in *runner.Input) (runner.Update, error) {
				if !in.Resumed {
					return nil, &runner.Interrupt{Kind: "approval", Message: "approve act?",
						Payload: map[string]any{"action_requests": []any{map[string]any{"name": "act", "args": map[string]any{"x": 1}}}}}
				}
				v, _ := in.Resume.(map[string]any)
				ok, _ := v["approved"].(bool)
				if ok {
					effects.Add(1)
				}
				return runner.Update{"approved": ok, "messages": []any{map[string]any{"role": "tool", "tool_call_id": "c1", "content": "done"}}}, nil
			}), Routes: []runner.Route{{To: runner.End}}},
		}}
}

// slowGraph waits in its node until released or cancelled.
func slowGraph(release <-chan struct{}) *runner.Graph {
	return &runner.Graph{Name: "slow", Start: "wait", MaxSteps: 10,
		Fields: map[string]runner.Field{"n": {Reducer: runner.Add, Default: int64(0)}},
		Nodes: map[string]*runner.Step{
			"wait": {Name: "wait", Node: fn(func(ctx context.Context, in *runner.Input) (runner.Update, error) {
				select {
				case <-release:
					return runner.Update{"n": int64(1)}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}), Routes: []runner.Route{{To: runner.End}}},
		}}
}

// failGraph fails in its only node.
func failGraph() *runner.Graph {
	return &runner.Graph{Name: "fail", Start: "boom", MaxSteps: 10, Fields: map[string]runner.Field{},
		Nodes: map[string]*runner.Step{
			"boom": {Name: "boom", Node: fn(func(context.Context, *runner.Input) (runner.Update, error) {
				return nil, runner.Permanent(errors.New("boom"))
			}), Routes: []runner.Route{{To: runner.End}}},
		}}
}

// stepsGraph runs a, b, c in turn, each appending its name to path.
func stepsGraph() *runner.Graph {
	step := func(name, next string) *runner.Step {
		return &runner.Step{Name: name, Node: fn(func(context.Context, *runner.Input) (runner.Update, error) {
			return runner.Update{"path": name}, nil
		}), Routes: []runner.Route{{To: next}}}
	}
	return &runner.Graph{Name: "steps", Start: "a", MaxSteps: 20,
		Fields: map[string]runner.Field{"path": {Reducer: runner.Append, Default: []any{}}, "note": {Reducer: runner.Replace, Default: ""}},
		Nodes:  map[string]*runner.Step{"a": step("a", "b"), "b": step("b", "c"), "c": step("c", runner.End)}}
}

// holdGraph adds one to n, then, when block is set, waits in its second
// node until released or cancelled.
func holdGraph(release <-chan struct{}) *runner.Graph {
	return &runner.Graph{Name: "hold", Start: "add", MaxSteps: 10,
		Fields: map[string]runner.Field{"n": {Reducer: runner.Add, Default: int64(0)}, "block": {Reducer: runner.Replace, Default: false}},
		Nodes: map[string]*runner.Step{
			"add": {Name: "add", Node: fn(func(context.Context, *runner.Input) (runner.Update, error) {
				return runner.Update{"n": int64(1)}, nil
			}), Routes: []runner.Route{{To: "hold"}}},
			"hold": {Name: "hold", Node: fn(func(ctx context.Context, in *runner.Input) (runner.Update, error) {
				if in.State["block"] != true {
					return nil, nil
				}
				select {
				case <-release:
					return nil, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}), Routes: []runner.Route{{To: runner.End}}},
		}}
}

// testKey is the API key of tenant acme; otherKey of tenant other.
const testKey, otherKey = "sk-acme", "sk-other"

// env is a server under test with its HTTP client side.
type env struct {
	t       *testing.T
	url     string
	srv     *server.Server
	store   store.Store
	db      string // the SQLite file of store
	release chan struct{}
	key     string
	token   string // a bearer token sent, when set, as Authorization
}

// newEnv serves the test graphs from a SQLite file store.
func newEnv(t *testing.T, tweak ...func(*server.Config)) *env {
	t.Helper()
	db := filepath.Join(t.TempDir(), "state.db")
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: st, db: db, release: make(chan struct{}), key: testKey}
	cfg := server.Config{Store: st, Heartbeat: 50 * time.Millisecond,
		Graphs: map[string]*runner.Graph{"approval": approvalGraph(), "slow": slowGraph(e.release), "fail": failGraph(),
			"steps": stepsGraph(), "hold": holdGraph(e.release)},
		Keys: access.Keys{access.HashKey(testKey): {Tenant: "acme"}, access.HashKey(otherKey): {Tenant: "other"}}}
	for _, f := range tweak {
		f(&cfg)
	}
	e.srv, err = server.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(e.srv)
	hs.Config = e.srv.HTTPServer() // with the server's timeouts and limits
	hs.Listener = e.srv.Listener(hs.Listener)
	hs.Start()
	e.url = hs.URL
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.srv.Shutdown(ctx)
		st.Close()
	})
	return e
}

// request sends a JSON request with the env's key: body encoded, or
// sent as it is when it is an io.Reader.
func (e *env) request(method, path string, body any, header ...string) *http.Response {
	e.t.Helper()
	rd, ok := body.(io.Reader) // sent as it is
	if !ok && body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if e.key != "" {
		req.Header.Set("X-Api-Key", e.key)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// raw sends a request, checks its status and returns its body.
func (e *env) raw(method, path string, body any, status int) []byte {
	e.t.Helper()
	resp := e.request(method, path, body)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		e.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, data, status)
	}
	return data
}

// call sends a request, checks its status and decodes its JSON body.
func (e *env) call(method, path string, body any, status int) map[string]any {
	e.t.Helper()
	data := bytes.TrimLeft(e.raw(method, path, body, status), "\n") // keep-alive newlines before a long run's answer
	var out map[string]any
	if len(data) > 0 && data[0] == '{' {
		if err := json.Unmarshal(data, &out); err != nil {
			e.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return out
}

// list is call for an endpoint answering with a JSON list.
func (e *env) list(method, path string, body any) []any {
	e.t.Helper()
	resp := e.request(method, path, body)
	defer resp.Body.Close()
	var out []any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		e.t.Fatalf("%s %s = %d, %v", method, path, resp.StatusCode, err)
	}
	return out
}

// sse is one server-sent event.
type sse struct {
	ID, Event string
	Data      any
}

// readSSE reads a stream to its end, with the heartbeat comments seen.
func readSSE(t *testing.T, resp *http.Response) (evs []sse, beats int) {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s %s", resp.StatusCode, ct, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var cur sse
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != "" {
				evs = append(evs, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, ":"):
			beats++
		case strings.HasPrefix(line, "id: "):
			cur.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			cur.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &cur.Data); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
		}
	}
	return evs, beats
}

// waitStatus polls a run until it has status.
func (e *env) waitStatus(thread, run, status string) {
	e.t.Helper()
	for range 200 {
		if r := e.call("GET", "/threads/"+thread+"/runs/"+run, nil, 200); r["status"] == status {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("run %s never reached %s", run, status)
}

// compileSource checks the definitions of src (named file) and compiles
// the pipeline name with the built-in tools.
func compileSource(t *testing.T, file, src, name string) *runner.Graph {
	t.Helper()
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, diags := dsl.Parse(file, []byte(src))
	proj, more := checker.Check(docs)
	if all := append(diags, more...); all.HasErrors(false) {
		t.Fatalf("definitions: %v", all)
	}
	g, err := checker.Compile(proj, name, dsl.CompileOptions{Tool: builtins.Tool})
	if err != nil {
		t.Fatal(err)
	}
	return g
}
