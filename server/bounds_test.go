package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/server"
)

// idleCounts are the process's goroutines and open files (but the
// store's, whose pool of readers grows as it needs) once the client's
// idle connections are closed.
func (e *env) idleCounts() (goroutines, files int) {
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(50 * time.Millisecond)
	return runtime.NumGoroutine(), len(e.openFiles())
}

// openFiles are the targets of the process's file descriptors, but the
// store's files.
func (e *env) openFiles() []string {
	e.t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		e.t.Skipf("open files are counted in /proc/self/fd: %v", err)
	}
	var out []string
	for _, fd := range fds {
		if to, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && !strings.HasPrefix(to, e.db) {
			out = append(out, to)
		}
	}
	return out
}

// settles fails the test unless the process's goroutines and open files
// come back to at most goroutines and files within 10 s.
func (e *env) settles(goroutines, files int) {
	e.t.Helper()
	http.DefaultClient.CloseIdleConnections()
	var g int
	var f []string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if g, f = runtime.NumGoroutine(), e.openFiles(); g <= goroutines && len(f) <= files {
			return
		}
	}
	e.t.Errorf("after 10 s: %d goroutines (%d before), %d open files (%d before): %v", g, goroutines, len(f), files, f)
}

// slack is how late a connection may be seen closed after its timeout:
// the server accepts and answers hundreds at once, on a machine that may
// be busy (and under the race detector). Without the timeouts they stay
// open.
const slack = 5 * time.Second

// rawRequest is an HTTP/1.1 request with the test key, as bytes.
func rawRequest(method, path, body string) string {
	return fmt.Sprintf("%s %s HTTP/1.1\r\nHost: runner\r\nX-Api-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		method, path, testKey, len(body), body)
}

// dialAll opens n connections to the env's server at once.
func (e *env) dialAll(n int, dial func() (net.Conn, error)) []net.Conn {
	e.t.Helper()
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() { conns[i], errs[i] = dial() })
	}
	wg.Wait()
	e.t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			e.t.Fatal(err)
		}
	}
	return conns
}

func (e *env) dial() (net.Conn, error) { return net.Dial("tcp", strings.TrimPrefix(e.url, "http://")) }

// untilClosed reads c until the server closes it, for at most wait; it
// returns what it read and when the close came.
func untilClosed(c net.Conn, wait time.Duration) (string, time.Time, error) {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	b, err := io.ReadAll(c)
	return string(b), time.Now(), err
}

// TestSlowBodiesClosed sends 500 requests whose bodies never finish: each
// is answered 408 and its connection closed within the read timeout, and
// the server's goroutines and open files come back to their idle count.
func TestSlowBodiesClosed(t *testing.T) {
	const n, timeout = 500, time.Second
	e := newEnv(t, func(c *server.Config) { c.Limits.ReadTimeout = timeout })
	g0, f0 := e.idleCounts()
	conns := e.dialAll(n, e.dial)
	sent := make([]time.Time, n)
	for i, c := range conns {
		head := rawRequest("POST", "/threads", strings.Repeat(" ", 100))
		if _, err := io.WriteString(c, head[:len(head)-90]); err != nil {
			t.Fatal(err)
		}
		sent[i] = time.Now()
	}
	var late, answered, worst time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			out, closed, err := untilClosed(c, timeout+10*time.Second)
			took := closed.Sub(sent[i])
			mu.Lock()
			defer mu.Unlock()
			worst = max(worst, took)
			if err != nil || took > timeout+slack {
				late++
			}
			if strings.HasPrefix(out, "HTTP/1.1 408 ") && strings.Contains(out, "application/problem+json") {
				answered++
			}
		})
	}
	wg.Wait()
	t.Logf("%d slow bodies: the last closed %v after its request began (read timeout %v)", n, worst, timeout)
	if late > 0 || answered != n {
		t.Errorf("%d of %d connections closed later than the read timeout + %v; %d answered 408", late, n, slack, answered)
	}
	if got := sample(e.scrape(), `runner_http_refusals_total{reason="read_timeout"}`); got != n {
		t.Errorf("read_timeout refusals = %v, want %d", got, n)
	}
	for _, c := range conns {
		c.Close()
	}
	e.settles(g0, f0)
}

// TestIdleKeepAlivesClosed leaves 1,000 keep-alive connections idle after
// a request each: the server closes every one after the idle timeout.
func TestIdleKeepAlivesClosed(t *testing.T) {
	const n, timeout = 1000, time.Second
	e := newEnv(t, func(c *server.Config) { c.Limits.IdleTimeout = timeout })
	g0, f0 := e.idleCounts()
	conns := e.dialAll(n, e.dial)
	var late, served int
	var worst time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			ok := false
			if _, err := io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: runner\r\n\r\n"); err == nil {
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				ok = err == nil && resp.StatusCode == 200 && !resp.Close
			}
			idle := time.Now()
			_, closed, err := untilClosed(c, timeout+10*time.Second)
			mu.Lock()
			defer mu.Unlock()
			worst = max(worst, closed.Sub(idle))
			if ok {
				served++
			}
			if err != nil || closed.Sub(idle) > timeout+slack {
				late++
			}
		})
	}
	wg.Wait()
	t.Logf("%d idle keep-alives: the last closed %v after its answer (idle timeout %v)", n, worst, timeout)
	if served != n || late > 0 {
		t.Errorf("%d of %d connections served and kept alive; %d closed later than the idle timeout + %v", served, n, late, slack)
	}
	for _, c := range conns {
		c.Close()
	}
	e.settles(g0, f0)
}

// bigGraph sets a 1 MiB value, then waits until released: a stream of
// its values blocks the server's writes, on a connection whose buffers
// are small, while it runs.
func bigGraph(release <-chan struct{}) *runner.Graph {
	blob := strings.Repeat("x", 1<<20)
	return &runner.Graph{Name: "big", Start: "set", MaxSteps: 10,
		Fields: map[string]runner.Field{"blob": {Reducer: runner.Replace, Default: ""}},
		Nodes: map[string]*runner.Step{
			"set": {Name: "set", Node: fn(func(context.Context, *runner.Input) (runner.Update, error) {
				return runner.Update{"blob": blob}, nil
			}), Routes: []runner.Route{{To: "wait"}}},
			"wait": {Name: "wait", Node: fn(func(ctx context.Context, _ *runner.Input) (runner.Update, error) {
				select {
				case <-release:
					return nil, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}), Routes: []runner.Route{{To: runner.End}}},
		}}
}

// smallBuffers are connections with buffers of 4 KiB in the kernel, so
// a peer that does not read stops the other's writes soon.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		err = setBuffers(c.(*net.TCPConn))
	}
	return c, err
}

func setBuffers(c *net.TCPConn) error {
	return errors.Join(c.SetReadBuffer(4096), c.SetWriteBuffer(4096))
}

// TestStreamClientStopsReading opens a run's stream and never reads it:
// the server drops the stream after the write timeout, the run goes on
// to its end, and the server's goroutines and open files come back to
// their idle count.
func TestStreamClientStopsReading(t *testing.T) {
	const timeout = 300 * time.Millisecond
	release := make(chan struct{})
	e := newEnv(t, func(c *server.Config) {
		c.Limits.WriteTimeout = timeout
		c.Graphs["big"] = bigGraph(release)
	})
	e.call("POST", "/threads", map[string]any{"thread_id": "deaf"}, 200)
	small := httptest.NewUnstartedServer(e.srv)
	small.Config, small.Listener = e.srv.HTTPServer(), e.srv.Listener(smallBuffers{small.Listener})
	small.Start()
	t.Cleanup(small.Close) // after the client's connection closes (dialAll)
	g0, f0 := e.idleCounts()
	conns := e.dialAll(1, func() (net.Conn, error) {
		c, err := net.Dial("tcp", small.Listener.Addr().String())
		if err == nil {
			err = setBuffers(c.(*net.TCPConn))
		}
		return c, err
	})
	body, _ := json.Marshal(map[string]any{"assistant_id": "big", "stream_mode": []string{"values"}})
	if _, err := io.WriteString(conns[0], rawRequest("POST", "/threads/deaf/runs/stream", string(body))); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); sample(e.scrape(), `runner_http_refusals_total{reason="write_timeout"}`) != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the stream of a client that does not read was never dropped")
		}
	}
	conns[0].Close() // the server's side is counted by settles
	run := e.list("GET", "/threads/deaf/runs", nil)[0].(map[string]any)["run_id"].(string)
	e.waitStatus("deaf", run, "running")
	close(release)
	e.waitStatus("deaf", run, "success")
	e.settles(g0, f0)
}

// TestStreamLimits refuses a tenant's stream past its limit, and any
// stream past the limit in all, with 429, Retry-After and a problem,
// counted by reason; a stream closed gives its place back.
func TestStreamLimits(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.Limits.MaxTenantStreams, c.Limits.MaxStreams = 2, 3 })
	for _, id := range []string{"a1", "a2", "a3"} {
		e.call("POST", "/threads", map[string]any{"thread_id": id}, 200)
	}
	e.key = otherKey
	e.call("POST", "/threads", map[string]any{"thread_id": "b1"}, 200)
	open := func(key, thread string) (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/threads/"+thread+"/stream", nil)
		req.Header.Set("X-Api-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); resp.Body.Close() })
		return resp, cancel
	}
	refused := func(resp *http.Response, detail string) {
		t.Helper()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(b), detail) {
			t.Errorf("stream past a limit: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
	}
	ok := func(resp *http.Response) {
		t.Helper()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("stream under the limits: %d", resp.StatusCode)
		}
	}
	r1, _ := open(testKey, "a1")
	ok(r1)
	r2, close2 := open(testKey, "a2")
	ok(r2)
	r3, _ := open(testKey, "a3")
	refused(r3, "your tenant has its maximum number of event streams open")
	r4, _ := open(otherKey, "b1")
	ok(r4)
	r5, _ := open(otherKey, "b1")
	refused(r5, "the server has its maximum number of event streams open")
	m := e.scrape()
	if tenant, all := sample(m, `runner_http_refusals_total{reason="tenant_streams"}`), sample(m, `runner_http_refusals_total{reason="streams"}`); tenant != 1 || all != 1 {
		t.Errorf("refusals: tenant_streams %v, streams %v; want 1 and 1", tenant, all)
	}
	close2()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r, _ := open(testKey, "a3"); r.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(end) {
			t.Fatal("a closed stream never gave its place back")
		}
	}
}

// TestConnectionLimit answers a connection past the maximum 429 with
// Retry-After and closes it; connections closed give their places back.
func TestConnectionLimit(t *testing.T) {
	const n = 5
	e := newEnv(t, func(c *server.Config) { c.Limits.MaxConnections = n })
	conns := e.dialAll(n, e.dial)
	for _, c := range conns { // each served, so each is accepted
		if _, err := io.WriteString(c, "GET /ok HTTP/1.1\r\nHost: runner\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("a connection under the limit: %v", err)
		}
	}
	over := e.dialAll(1, e.dial)[0]
	_, _ = io.WriteString(over, "GET /ok HTTP/1.1\r\nHost: runner\r\n\r\n")
	out, _, err := untilClosed(over, 5*time.Second)
	if err != nil || !strings.HasPrefix(out, "HTTP/1.1 429 ") || !strings.Contains(out, "Retry-After: ") ||
		!strings.Contains(out, `"status":429`) {
		t.Errorf("a connection past the limit: %v %q", err, out)
	}
	for _, c := range conns {
		c.Close()
	}
	refused := 1.0
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(e.url + "/metrics")
		if err == nil && resp.StatusCode == 200 {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := sample(string(b), `runner_http_refusals_total{reason="connections"}`); got != refused {
				t.Errorf("connections refusals = %v, want %v", got, refused)
			}
			return
		}
		if err == nil {
			resp.Body.Close()
			refused++ // still over the limit
		}
		if time.Now().After(end) {
			t.Fatal("closed connections never gave their places back")
		}
	}
}
