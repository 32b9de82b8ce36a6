package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildRunner builds the runner binary once per test run.
var buildRunner = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "runner-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "runner")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// crashLeaseTTL is the lease time of the runs the crash tests kill: a
// killed run's thread is resumed once its lease has expired.
const crashLeaseTTL = 200 * time.Millisecond

// leaseEnv sets crashLeaseTTL for a runner command.
var leaseEnv = "RUNNER_LEASE_TTL=" + crashLeaseTTL.String()

// stepService is the tool service of the crash test: each call takes a
// while, and a call repeated with the same Idempotency-Key is answered from
// memory instead of executed again.
type stepService struct {
	mu        sync.Mutex
	executed  map[string]int // idempotency key -> executions
	requested map[string]int // idempotency key -> requests
	answers   map[string][]byte
	requests  int
}

func (s *stepService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	s.requests++
	s.requested[key]++
	ans, seen := s.answers[key]
	s.mu.Unlock()
	if !seen {
		time.Sleep(20 * time.Millisecond)
		ans = []byte(fmt.Sprintf(`{"n": 1, "calls": %q}`, r.URL.Query().Get("i")))
		s.mu.Lock()
		s.executed[key]++
		s.answers[key] = ans
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(ans)
}

const crashPipeline = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: counter}
state:
  n: {type: integer, default: 0, reducer: add}
  calls: {type: array, items: {type: string}, reducer: append}
limits: {max_steps: 40}
start: call
nodes:
  call:
    type: tool
    with: {tool: step, args: {i: state.n}, merge: true, fatal: true}
    next:
      - when: state.n >= 15
        to: END
      - to: call
---
apiVersion: runner/v1
kind: Tool
metadata: {name: step}
parameters: {type: object, properties: {i: {type: integer}}}
http:
  url: "%s/step?i=${args.i}"
  allow_hosts: [%q]
`

// TestCrashAndResume kills a running `runner exec` with SIGKILL mid-run,
// resumes the thread, and checks the final state equals an uninterrupted
// run's, with no step lost and no tool call executed twice.
func TestCrashAndResume(t *testing.T) {
	svc, hist := crashAndResume(t, func(doc string) string { return doc })
	for key, n := range svc.executed {
		if n != 1 {
			t.Errorf("tool call %s executed %d times", key, n)
		}
	}
	if len(svc.executed) != 30 { // 15 steps in each of the two threads
		t.Errorf("%d distinct tool calls executed, want 30", len(svc.executed))
	}
	checkContiguous(t, hist, 16)
}

// crashAndResume runs crashPipeline, edited by edit, on a stub step
// service: once uninterrupted (thread reference), once SIGKILLed after 6
// checkpoints and resumed (thread crash); it checks both end in the same
// state and returns the service and the crashed thread's history.
func crashAndResume(t *testing.T, edit func(doc string) string) (*stepService, string) {
	t.Helper()
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	svc := &stepService{executed: map[string]int{}, requested: map[string]int{}, answers: map[string][]byte{}}
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	host := strings.TrimPrefix(srv.URL, "http://")
	writeFile(t, filepath.Join(dir, "counter.yaml"), edit(fmt.Sprintf(crashPipeline, srv.URL, host)))
	db := "sqlite:" + filepath.Join(dir, "state.db")
	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"exec", "counter", "--store", db}, args...)...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "RUNNER_PATHS=counter.yaml", leaseEnv)
		return cmd
	}
	want, err := run("--thread", "reference").Output()
	if err != nil {
		t.Fatalf("reference run: %v", err)
	}
	killAfterCheckpoints(t, run("--thread", "crash", "--events"), 6)
	got, err := run("--resume", "crash").Output()
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if strings.TrimSpace(string(got)) != strings.TrimSpace(string(want)) {
		t.Errorf("state after crash and resume:\n%s\nwant (uninterrupted):\n%s", got, want)
	}
	hist, _ := exec.Command(bin, "threads", "history", "crash", "--oldest-first", "--store", db).Output()
	return svc, string(hist)
}

// killAfterCheckpoints starts cmd, SIGKILLs it after n checkpoint events
// and waits until its lease on the thread expires.
func killAfterCheckpoints(t *testing.T, cmd *exec.Cmd, n int) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() && seen < n {
		var ev struct{ Event string }
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event == "checkpoint" {
			seen++
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if seen < n {
		t.Fatalf("the run ended after %d checkpoints, before it could be killed", seen)
	}
	time.Sleep(crashLeaseTTL) // until the killed run's lease expires
}

// checkContiguous checks a history listing holds checkpoints 1..n, each
// one step after its parent (the first holds the input, at step 0).
func checkContiguous(t *testing.T, hist string, n int) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(hist), "\n")[1:]
	if len(lines) != n {
		t.Fatalf("%d checkpoints, want %d:\n%s", len(lines), n, hist)
	}
	for i, l := range lines {
		var id, step int
		if _, err := fmt.Sscan(l, &id, &step); err != nil || id != i+1 || step != i {
			t.Fatalf("history line %d = %q: want id %d at step %d", i+1, l, i+1, i)
		}
	}
}

// TestCrashAndResumeExitDurability kills a `runner exec` of a pipeline
// with durability: exit whose tool is mutating: only the journal of each
// call (a snapshot of the state the step began with) and the end are
// written. The resumed thread
// ends in the uninterrupted run's state, and no call is made again but
// the one in flight at the kill (answered from the service's memory).
func TestCrashAndResumeExitDurability(t *testing.T) {
	svc, hist := crashAndResume(t, func(doc string) string {
		doc = strings.Replace(doc, "limits:", "durability: exit\nlimits:", 1)
		return strings.Replace(doc, "metadata: {name: step}", "metadata: {name: step}\nmutating: true", 1)
	})
	again := 0
	for key, n := range svc.executed {
		if n != 1 {
			t.Errorf("tool call %s executed %d times", key, n)
		}
		again += svc.requested[key] - 1
	}
	if len(svc.executed) != 30 || again > 1 {
		t.Errorf("%d distinct tool calls executed, %d requested again; want 30, at most the one in flight", len(svc.executed), again)
	}
	checkContiguous(t, hist, 16) // a journal a step, then the end
}
