package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store/storetest"
)

// faultWindow is how soon /readyz must follow the store: 503 after it
// becomes unwritable, 200 after it is repaired.
const faultWindow = 5 * time.Second

// waitReady polls base's /readyz until it answers status, for at most
// faultWindow, and returns how long that took.
func waitReady(t *testing.T, base string, status int) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == status {
				return time.Since(start)
			}
		}
		if time.Since(start) > faultWindow {
			t.Fatalf("/readyz did not answer %d within %v (last: %v %v)", status, faultWindow, resp.Status, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeSQLiteUnwritable makes the store's files unwritable under a
// serving runner: /readyz turns 503, a write is refused 503; repaired,
// /readyz turns 200 and runs go on, without a restart. Restarted while
// the file is unwritable, runner serve refuses to start and says which
// file and what to do.
func TestServeSQLiteUnwritable(t *testing.T) {
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := clerkProject(t, `[{"node": "ask", "delay": "2s", "text": "Slow."}, {"node": "ask", "text": "Quick."}]`)
	db := filepath.Join(dir, "state.db")
	base, proc := startReplica(t, bin, dir, "sqlite:"+db)
	var repair func()
	survivesFault(t, base, func() { repair = storetest.Unwritable(t, db, db+"-wal") }, func() { repair() })
	_ = proc.Kill()
	_, _ = proc.Wait()

	storetest.Unwritable(t, db, db+"-wal", db+"-shm")
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	restart := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--no-auth", "--store", "sqlite:"+db,
		"--script", "script.json")
	restart.Dir = dir
	restart.Env = append(os.Environ(), "RUNNER_PATHS=clerk.yaml")
	stderr, err := restart.CombinedOutput()
	if code := restart.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(stderr), "store: sqlite "+db+": ") ||
		!strings.Contains(string(stderr), "writable by this process's user") {
		t.Errorf("runner serve on an unwritable store: exit %d (%v), want 2 naming the file:\n%s", code, err, stderr)
	}
}

// proxy is a TCP proxy to a server that can be cut: while cut, it closes
// the connections it had and refuses new ones, as a stopped server does.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
}

// newProxy listens on a free port of the loopback for target.
func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go p.serve()
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

// pipe copies between c and a new connection to the target, unless the
// proxy is cut.
func (p *proxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(c, up) {
		c.Close()
		if up != nil {
			up.Close()
		}
		return
	}
	go func() { io.Copy(up, c); up.Close() }()
	io.Copy(c, up)
	c.Close()
}

// track keeps c and up to close when cut; false when the proxy is cut.
func (p *proxy) track(c, up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		p.conns[c], p.conns[up] = true, true
	}
	return !p.cut
}

// setCut cuts the proxy (closing its connections) or restores it.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// TestServePostgresRestart cuts a serving runner off its PostgreSQL
// server mid-run, as a stop does, then lets it reach the server again:
// /readyz turns 503, then 200, and runs go on, without a restart.
func TestServePostgresRestart(t *testing.T) {
	storeURL := postgresSchema(t)
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	pg := newProxy(t, u.Host)
	u.Host = pg.ln.Addr().String()
	dir, _ := clerkProject(t, `[{"node": "ask", "delay": "2s", "text": "Slow."}, {"node": "ask", "text": "Quick."}]`)
	base, _ := startReplica(t, bin, dir, u.String())
	// mid-run: the model answers in 2 s
	survivesFault(t, base, func() { pg.setCut(true) }, func() { pg.setCut(false) })
}

// survivesFault starts a run on the server at base, faults its store,
// and checks that /readyz turns 503 within faultWindow and that a write
// is refused 503; then it repairs the store, and checks that /readyz
// turns 200 within faultWindow and that a run ends well.
func survivesFault(t *testing.T, base string, fault, repair func()) {
	t.Helper()
	waitReady(t, base, 200)
	call(t, "POST", base+"/threads/"+newThreadID()+"/runs", map[string]any{"assistant_id": "clerk", "input": clerkInput,
		"if_not_exists": "create"}, 200).Body.Close()
	fault()
	t.Logf("/readyz 503 %v after the fault", waitReady(t, base, 503))
	call(t, "POST", base+"/threads", map[string]any{}, 503).Body.Close()
	repair()
	t.Logf("/readyz 200 %v after the repair", waitReady(t, base, 200))
	var out map[string]any
	decode(t, call(t, "POST", base+"/threads/"+newThreadID()+"/runs/wait", map[string]any{"assistant_id": "clerk",
		"input": clerkInput, "if_not_exists": "create"}, 200), &out)
	if out["__error__"] != nil {
		t.Errorf("a run after the repair: %v", out)
	}
}

// clerkInput is a user's message to the clerk.
var clerkInput = map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Hello."}}}

// clerkProject is a project directory with the clerk agent (its entity
// service, returned, served until the test ends), the model's replies
// script and the key sk-test of tenant acme, for startReplica.
func clerkProject(t *testing.T, script string) (string, *entityService) {
	t.Helper()
	svc := newEntityService()
	ts := httptest.NewServer(svc)
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "clerk.yaml"), fmt.Sprintf(clerkAgent, ts.URL, strings.TrimPrefix(ts.URL, "http://")))
	writeFile(t, filepath.Join(dir, "script.json"), script)
	writeFile(t, filepath.Join(dir, "keys.yaml"), access.HashKey("sk-test")+": acme\n")
	return dir, svc
}

// newThreadID is a fresh thread id.
func newThreadID() string { return fmt.Sprintf("t-%d", time.Now().UnixNano()) }
