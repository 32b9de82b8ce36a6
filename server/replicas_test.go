package server_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/postgres"
	"github.com/runner-dev/runner/runner/store/sqlite"
	"github.com/runner-dev/runner/runner/store/storetest"
	"github.com/runner-dev/runner/server"
)

// withStore serves from st.
func withStore(st store.Store) func(*server.Config) {
	return func(c *server.Config) { c.Store = st }
}

// sharedStores are the stores two replicas share, each opened twice: a
// SQLite file, a PostgreSQL schema.
var sharedStores = []struct {
	name string
	open func(t *testing.T) (open func() store.Store)
}{
	{"sqlite", func(t *testing.T) func() store.Store {
		db := filepath.Join(t.TempDir(), "shared.db")
		return func() store.Store { return openStore(t, db, sqlite.Open) }
	}},
	{"postgres", func(t *testing.T) func() store.Store {
		u := storetest.PostgresSchema(t, "runner_server_")
		return func() store.Store { return openStore(t, u, postgres.Open) }
	}},
}

// openStore opens a store, closed when the test ends.
func openStore(t *testing.T, where string, open func(string) (store.Store, error)) store.Store {
	t.Helper()
	st, err := open(where)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestReplicaBusy: two servers share a store; while one runs a thread,
// a run of it on the other is a 409 thread-busy problem before any run is
// made — on every way to start a run — that names neither host nor
// process; once the run has ended, the other runs the thread.
func TestReplicaBusy(t *testing.T) {
	host, _ := os.Hostname()
	for _, sh := range sharedStores {
		t.Run(sh.name, func(t *testing.T) {
			open := sh.open(t)
			a, b := newEnv(t, withStore(open())), newEnv(t, withStore(open()))
			a.call("POST", "/threads", map[string]any{"thread_id": "t1"}, 200)
			run := a.call("POST", "/threads/t1/runs", map[string]any{"assistant_id": "hold", "input": map[string]any{"block": true}}, 200)
			for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) { // until it holds in its second node
				if values, _ := b.call("GET", "/threads/t1/state", nil, 200)["values"].(map[string]any); values["n"] == float64(1) {
					break
				}
				if time.Now().After(end) {
					t.Fatal("the run on a did not reach its second node in 10 s")
				}
			}
			for _, url := range []string{"/threads/t1/runs", "/threads/t1/runs/wait", "/threads/t1/runs/stream"} {
				p := b.refusal("POST", url, map[string]any{"assistant_id": "hold"}, http.StatusConflict, "")
				if p["type"] != "https://runner.dev/problems/thread-busy" || strings.Contains(p["detail"].(string), host) {
					t.Errorf("POST %s on b: %v, want a thread-busy problem that names no host", url, p)
				}
			}
			if runs, _ := b.runCount("t1"); runs != 1 {
				t.Errorf("t1 has %d runs after b's refusals, want a's alone", runs)
			}
			close(a.release)
			close(b.release)
			a.waitStatus("t1", run["run_id"].(string), "success")
			b.call("POST", "/threads/t1/runs/wait", map[string]any{"assistant_id": "hold"}, 200)
		})
	}
}

// TestStoreStopped: when PostgreSQL stops, requests are answered 503 with
// a request id, and no word of the driver's error reaches the client.
func TestStoreStopped(t *testing.T) {
	u, err := url.Parse(storetest.PostgresSchema(t, "runner_server_"))
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, u.Host)
	u.Host = p.addr
	e := newEnv(t, withStore(openStore(t, u.String(), postgres.Open)))
	e.call("POST", "/threads", map[string]any{"thread_id": "t1"}, 200)
	p.stop()
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/threads/t1", nil},
		{"POST", "/threads", map[string]any{}},
		{"POST", "/threads/t1/runs/wait", map[string]any{"assistant_id": "steps"}},
		{"POST", "/threads/search", map[string]any{}},
	} {
		resp := e.request(c.method, c.path, c.body)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id := resp.Header.Get("X-Request-Id")
		if resp.StatusCode != http.StatusServiceUnavailable || id == "" || !strings.Contains(string(body), `"request_id":"`+id+`"`) {
			t.Errorf("%s %s with PostgreSQL stopped = %d %s (X-Request-Id %q), want 503 with the request id", c.method, c.path, resp.StatusCode, body, id)
		}
		for _, leak := range []string{"postgres", "connect", "dial", "127.0.0.1", p.addr, "runner_server_"} {
			if strings.Contains(strings.ToLower(string(body)), leak) {
				t.Errorf("%s %s answers the driver's words (%q): %s", c.method, c.path, leak, body)
			}
		}
	}
}

// proxy forwards TCP connections to a server until stopped, when it
// closes them all and refuses new ones: the server, as a client sees it,
// has stopped.
type proxy struct {
	addr  string
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

// stop closes the listener and every connection.
func (p *proxy) stop() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
