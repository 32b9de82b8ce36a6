package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/server"
)

// marker is in every input of tenant acme's threads in these tests: no
// byte of it may reach another tenant.
const marker = "MARKER-7d1e5c9a-acme-secret"

// bobKey is the key of bob, a principal without roles of tenant globex.
const bobKey = "sk-bob"

// nestGraph runs stepsGraph as a child thread ("<thread>/sub@<step>")
// with the parent's note, and keeps the child's path.
func nestGraph() *runner.Graph {
	sub := stepsGraph()
	return &runner.Graph{Name: "nest", Start: "call", MaxSteps: 10,
		Fields: map[string]runner.Field{"note": {Reducer: runner.Replace, Default: ""}, "path": {Reducer: runner.Append, Default: []any{}}},
		Nodes: map[string]*runner.Step{"call": {Name: "call", Node: fn(func(ctx context.Context, in *runner.Input) (runner.Update, error) {
			res, err := in.Run.Child(ctx, sub, "sub", map[string]any{"note": in.State["note"]}, in.Resume)
			if err != nil {
				return nil, err
			}
			return runner.Update{"path": res.State["path"]}, nil
		}), Routes: []runner.Route{{To: runner.End}}}}}
}

// withIsolation adds the nest graph and bob's key.
func withIsolation(c *server.Config) {
	c.Graphs["nest"] = nestGraph()
	c.Keys[access.HashKey(bobKey)] = access.Principal{Tenant: "globex", Name: "bob"}
}

// acmeData is what tenant acme has, each holding the marker: a thread and
// its run, a conversation paused at its gate, a thread with a child
// thread, and a thread runner exec wrote without a record.
type acmeData struct {
	thread, run, conversation, nested, child, exec string
}

// seedAcme makes acmeData through the API (and runner exec's engine).
func seedAcme(t *testing.T, e *env) acmeData {
	t.Helper()
	e.key = testKey
	d := acmeData{thread: "walk-t", conversation: "walk-conv", nested: "nest-t", exec: "exec-t"}
	e.call("POST", "/threads", map[string]any{"thread_id": d.thread, "metadata": map[string]any{"secret": marker}}, 200)
	resp := e.request("POST", "/threads/"+d.thread+"/runs/wait", map[string]any{"assistant_id": "steps", "input": map[string]any{"note": marker}})
	resp.Body.Close()
	d.run = strings.TrimPrefix(resp.Header.Get("Content-Location"), "/threads/"+d.thread+"/runs/")
	e.call("POST", "/execute", map[string]any{"agent_type": "approval", "conversation_id": d.conversation, "message": marker}, 200)
	e.call("POST", "/threads/"+d.nested+"/runs/wait", map[string]any{"assistant_id": "nest", "input": map[string]any{"note": marker},
		"if_not_exists": "create"}, 200)
	threads, err := e.store.Threads(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range threads {
		if access.Root(th.ID) == access.ThreadKey("acme", d.nested) && th.ID != access.Root(th.ID) {
			d.child = access.ThreadID(th.ID)
		}
	}
	exec := &runner.Engine{Store: e.store, Tenant: "acme"} // runner exec --tenant acme --thread exec-t
	if _, err := exec.Run(context.Background(), stepsGraph(), access.ThreadKey("acme", d.exec), map[string]any{"note": marker}); err != nil {
		t.Fatal(err)
	}
	if d.run == "" || d.child == "" || !strings.Contains(fmt.Sprint(e.call("GET", "/threads/"+d.thread+"/state", nil, 200)), marker) {
		t.Fatalf("acme's data: %+v", d)
	}
	return d
}

// reply is an answer as the walk compares it.
type reply struct {
	status int
	ctype  string
	body   string
	raw    string // body and headers, for the marker
}

// send sends a request of a route; a stream is read to its end, or until
// it has said nothing but heartbeats for a second (one that waits for
// what never comes).
func send(t *testing.T, e *env, key, method, path string, body any) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, method, e.url+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var data []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data = readQuiet(resp.Body, cancel)
	} else {
		data, _ = io.ReadAll(resp.Body)
	}
	var hdr strings.Builder
	_ = resp.Header.Write(&hdr)
	return reply{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: string(data), raw: hdr.String() + string(data)}
}

// readQuiet reads a stream to its end, or, calling stop, until it has
// sent nothing but heartbeats for a second.
func readQuiet(r io.Reader, stop func()) []byte {
	chunks := make(chan []byte)
	go func() {
		defer close(chunks)
		for {
			b := make([]byte, 4096)
			n, err := r.Read(b)
			if n > 0 {
				chunks <- b[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	var data []byte
	quiet := time.NewTimer(time.Second)
	for {
		select {
		case b, ok := <-chunks:
			if !ok {
				return data
			}
			data = append(data, b...)
			if beatPattern.ReplaceAllString(string(b), "") != "" {
				quiet.Reset(time.Second)
			}
		case <-quiet.C:
			stop()
			for b := range chunks {
				data = append(data, b...)
			}
			return data
		}
	}
}

var (
	uuidPattern  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	stampPattern = regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+Z`)
	beatPattern  = regexp.MustCompile(`(?m)^: heartbeat\n`)
	// requestIDPattern is a problem's request id (X-Request-Id).
	requestIDPattern = regexp.MustCompile(`"request_id":"[^"]*"`)
)

// normal is a reply's body with id written as <id>, and what differs from
// one request to the next (uuids, times, heartbeats, the keep-alive
// newlines before a long run's answer) blanked.
func normal(body, id string) string {
	body = strings.ReplaceAll(strings.TrimLeft(body, "\n"), id, "<id>")
	body = uuidPattern.ReplaceAllString(body, "<uuid>")
	body = stampPattern.ReplaceAllString(body, "<time>")
	body = requestIDPattern.ReplaceAllString(body, `"request_id":"<request>"`)
	return beatPattern.ReplaceAllString(body, "")
}

// TestIsolationWalk walks every route the router knows with acme's thread,
// run, conversation and child thread ids, as another tenant's key and as a
// principal without roles of a third tenant: first naming acme's ids only
// in paths, then in bodies too (creating, say, a thread of that id). Each
// answer is exactly the answer for an id nobody uses, made by the same
// requests in the same order; on the first walk every route that names a
// thread or a conversation in its path is 404 (or 403); no answer carries
// a byte of acme's data, and acme's data is intact after.
func TestIsolationWalk(t *testing.T) {
	e := newEnv(t, withIsolation)
	a := seedAcme(t, e)
	history := func() int {
		h, err := e.store.History(context.Background(), access.ThreadKey("acme", a.thread))
		if err != nil {
			t.Fatal(err)
		}
		return len(h)
	}
	before := history()
	public, api := e.srv.RoutePatterns()
	if len(public)+len(api) < 30 {
		t.Fatalf("the router knows %d routes: %v %v", len(public)+len(api), public, api)
	}
	for _, who := range []struct{ name, key string }{{"another tenant's key", otherKey}, {"a principal without roles", bobKey}} {
		t.Run(who.name, func(t *testing.T) {
			t.Parallel()
			walk(t, e, who.key, a, public, api)
		})
	}
	t.Cleanup(func() { // after the walks
		e.key = testKey
		if n := history(); n != before || !strings.Contains(fmt.Sprint(e.call("GET", "/threads/"+a.thread+"/state", nil, 200)), marker) {
			t.Errorf("acme's thread after the walk: %d checkpoints, want %d, with its data", n, before)
		}
		e.call("GET", "/threads/"+a.thread+"/runs/"+a.run, nil, 200)
		if _, err := e.store.History(context.Background(), access.ThreadKey("acme", a.nested)+"/"+strings.SplitN(a.child, "/", 2)[1]); err != nil {
			t.Errorf("acme's child thread after the walk: %v", err)
		}
	})
}

// walk is the isolation walk of one key: each of acme's ids and an id of
// the same shape nobody uses, named in paths only, then in bodies too,
// through every route.
func walk(t *testing.T, e *env, key string, a acmeData, public, api []string) {
	for _, ids := range [][2]string{
		{a.thread, "u-" + uuid.NewString()},
		{a.conversation, "u-" + uuid.NewString()},
		{a.exec, "u-" + uuid.NewString()},
		{a.child, "u-" + uuid.NewString() + "/sub@1"},
		{access.ThreadKey("acme", a.thread), access.ThreadKey("acme", "u-"+uuid.NewString())},
	} {
		for _, inBodies := range []bool{false, true} {
			for _, pattern := range append(public, api...) {
				var got [2]reply
				for i, id := range ids {
					got[i] = walkRoute(t, e, key, pattern, id, inBodies, a.run, i == 1)
				}
				checkWalked(t, pattern, ids, got, slices.Contains(api, pattern), !inBodies)
			}
		}
	}
}

// checkWalked checks the answers of a route to acme's id and to an unknown
// one: no marker; the same status and content type, and for an API route
// the same body but for the ids; with acme's id in the path only, 404 (or
// 403) from a route that names a thread or a conversation.
func checkWalked(t *testing.T, pattern string, ids [2]string, got [2]reply, api, pathOnly bool) {
	t.Helper()
	for i, r := range got {
		if strings.Contains(r.raw, marker) {
			t.Errorf("%s with %q answered acme's data: %s", pattern, ids[i], r.raw)
		}
	}
	if got[0].status != got[1].status || got[0].ctype != got[1].ctype || api && normal(got[0].body, ids[0]) != normal(got[1].body, ids[1]) {
		t.Errorf("%s with acme's id %q answers %d %s, with an unknown id %d %s",
			pattern, ids[0], got[0].status, got[0].body, got[1].status, got[1].body)
	}
	names := strings.Contains(pattern, "{thread}") || strings.Contains(pattern, "/conversations/")
	if names && pathOnly && got[0].status != http.StatusNotFound && got[0].status != http.StatusForbidden {
		t.Errorf("%s with acme's id %q = %d, want 404 (or 403)", pattern, ids[0], got[0].status)
	}
}

// walkRoute sends a request of the route pattern naming id in its path
// (and, with inBodies, in its body's id fields; else a fresh id there),
// and run as its run (a fresh one with freshRun).
func walkRoute(t *testing.T, e *env, key, pattern, id string, inBodies bool, run string, freshRun bool) reply {
	t.Helper()
	if freshRun {
		run = uuid.NewString()
	}
	bodyID := "b-" + uuid.NewString()
	if inBodies {
		bodyID = id
	}
	method, path, ok := strings.Cut(pattern, " ")
	if !ok { // a pattern of every method
		method, path = http.MethodPost, pattern
	}
	path = strings.NewReplacer("{thread}", url.PathEscape(id), "{id}", url.PathEscape(id), "{run}", run, "{checkpoint}", "1").Replace(path)
	return send(t, e, key, method, path, map[string]any{"thread_id": bodyID, "conversation_id": bodyID, "ids": []string{bodyID},
		"assistant_id": "steps", "agent_type": "approval", "message": "hi", "input": map[string]any{"note": "theirs"}})
}

// TestChildThreadsHaveOwners (issue 29, defect 1): another tenant cannot
// make a record for acme's child thread or for a thread runner exec wrote,
// so it never reads their state, writes or deletes them; acme cannot name
// its own child thread either (it is used through its root).
func TestChildThreadsHaveOwners(t *testing.T) {
	e := newEnv(t, withIsolation)
	a := seedAcme(t, e)
	for _, key := range []string{otherKey, testKey} {
		e.key = key
		e.call("POST", "/threads", map[string]any{"thread_id": a.child}, 422)
		e.call("GET", "/threads/"+url.PathEscape(a.child)+"/state", nil, 404)
		e.call("POST", "/threads/"+url.PathEscape(a.child)+"/runs/wait", map[string]any{"assistant_id": "steps", "if_not_exists": "create"}, 422)
	}
	e.key = otherKey
	e.call("POST", "/threads", map[string]any{"thread_id": a.exec}, 200) // its own exec-t
	if st := e.call("GET", "/threads/"+a.exec+"/state", nil, 200); strings.Contains(fmt.Sprint(st), marker) {
		t.Errorf("the other tenant's exec-t shows acme's state: %v", st)
	}
	e.call("DELETE", "/threads/"+a.exec, nil, 204)
	for _, key := range []string{access.ThreadKey("acme", a.exec), access.ThreadKey("acme", a.nested) + "/" + strings.SplitN(a.child, "/", 2)[1]} {
		if h, err := e.store.History(context.Background(), key); err != nil || !strings.Contains(string(h[0].Meta), marker) {
			t.Errorf("acme's %s after the other tenant's requests: %v", key, err)
		}
	}
	e.key = testKey // acme adopts the thread its runner exec wrote
	e.call("POST", "/threads", map[string]any{"thread_id": a.exec}, 200)
	if st := e.call("GET", "/threads/"+a.exec+"/state", nil, 200); !strings.Contains(fmt.Sprint(st), marker) {
		t.Errorf("acme's adopted exec-t = %v, want its state", st)
	}
}

// TestDeleteByOwnership (issue 29, defect 2): deleting a thread removes
// its own child threads, and no thread of another tenant that used the
// same id; no tenant can make a thread whose id begins with another's and
// a "/" (the store deletes by recorded ownership anyway: storetest).
func TestDeleteByOwnership(t *testing.T) {
	e := newEnv(t, withIsolation)
	e.key = otherKey
	e.call("POST", "/threads", map[string]any{"thread_id": "x/evil"}, 422)
	for _, key := range []string{testKey, otherKey} {
		e.key = key
		e.call("POST", "/threads/x/runs/wait", map[string]any{"assistant_id": "nest", "input": map[string]any{"note": key},
			"if_not_exists": "create"}, 200)
	}
	e.key = testKey
	e.call("DELETE", "/threads/x", nil, 204)
	threads, err := e.store.Threads(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, th := range threads {
		left = append(left, th.ID)
	}
	if len(left) != 2 || access.Root(left[0]) != "/other/x" || access.Root(left[1]) != "/other/x" {
		t.Errorf("threads after acme deleted x: %v, want the other tenant's x and its child", left)
	}
	e.key = otherKey
	if v := e.call("GET", "/threads/x/state", nil, 200)["values"].(map[string]any); v["note"] != otherKey {
		t.Errorf("the other tenant's x = %v", v)
	}
}

// TestStreamsEndWhenDeleted (issue 29, defect 3): a thread's and a
// conversation's streams end when the thread is deleted — here or by
// another server on the store — and never carry the events of the thread
// that takes the id next.
func TestStreamsEndWhenDeleted(t *testing.T) {
	e := newEnv(t, withIsolation)
	other := newEnvOn(t, e.store) // another replica
	for _, tc := range []struct {
		name, stream string
		deleter      *env
		next         string // the key that uses the id next
	}{
		{"a thread stream, deleted here", "/threads/s1/stream", e, otherKey},
		{"a thread stream, deleted by another server", "/threads/s2/stream", other, testKey},
		{"a conversation stream", "/conversations/s3/stream", e, testKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := strings.Split(tc.stream, "/")[2]
			e.key = testKey
			e.call("POST", "/threads", map[string]any{"thread_id": id}, 200)
			evs, _ := e.openStream(tc.stream)
			tc.deleter.key = testKey
			tc.deleter.call("DELETE", "/threads/"+id, nil, 204)
			tc.deleter.key = tc.next
			tc.deleter.call("POST", "/execute", map[string]any{"agent_type": "approval", "conversation_id": id, "message": marker}, 200)
			var got []sse
			for timeout := time.After(5 * time.Second); ; {
				select {
				case ev, ok := <-evs:
					if ok {
						got = append(got, ev)
						continue
					}
				case <-timeout:
					t.Fatalf("the stream goes on after its thread was deleted: %v", got)
				}
				break
			}
			if len(got) != 1 || got[0].Event != "error" || got[0].Data.(map[string]any)["error"] != "thread_deleted" {
				t.Errorf("the stream of a deleted thread: %v, want its end (an error event thread_deleted) alone", got)
			}
		})
	}
}

// newEnvOn serves the test graphs from st, as a second replica.
func newEnvOn(t *testing.T, st store.Store, tweak ...func(*server.Config)) *env {
	t.Helper()
	cfg := server.Config{Store: st, Heartbeat: 50 * time.Millisecond,
		Graphs: map[string]*runner.Graph{"approval": approvalGraph(), "steps": stepsGraph()},
		Keys:   access.Keys{access.HashKey(testKey): {Tenant: "acme"}, access.HashKey(otherKey): {Tenant: "other"}}}
	for _, f := range tweak {
		f(&cfg)
	}
	srv, err := server.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return &env{t: t, url: hs.URL, srv: srv, store: st, key: testKey}
}

// TestCreateForeignIDLooksUnknown (issue 29, defect 4): POST /threads with
// an id another tenant uses answers as with an id nobody uses — with
// if_exists do_nothing too, and for the reads that follow.
func TestCreateForeignIDLooksUnknown(t *testing.T) {
	e := newEnv(t, withIsolation)
	a := seedAcme(t, e)
	e.key = otherKey
	fresh := "u-" + uuid.NewString()
	for _, step := range []struct {
		method, path string
		body         map[string]any
	}{
		{"POST", "/threads", map[string]any{"thread_id": "<id>"}},
		{"POST", "/threads", map[string]any{"thread_id": "<id>", "if_exists": "do_nothing"}},
		{"POST", "/threads", map[string]any{"thread_id": "<id>"}},
		{"GET", "/threads/<id>", nil},
		{"GET", "/threads/<id>/state", nil},
	} {
		var got [2]reply
		for i, id := range []string{a.thread, fresh} {
			body := map[string]any{}
			for k, v := range step.body {
				body[k] = strings.ReplaceAll(fmt.Sprint(v), "<id>", id)
			}
			got[i] = send(t, e, otherKey, step.method, strings.ReplaceAll(step.path, "<id>", id), body)
		}
		if got[0].status != got[1].status || normal(got[0].body, a.thread) != normal(got[1].body, fresh) || strings.Contains(got[0].raw, marker) {
			t.Errorf("%s %s with acme's id = %d %s; with an unknown id %d %s", step.method, step.path, got[0].status, got[0].body, got[1].status, got[1].body)
		}
	}
}
