package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// runTimeout bounds every run of the binary and every wait for one.
const runTimeout = 10 * time.Second

// clerkAgent is an agent whose model asks to create entities through a
// mutating HTTP tool, which a platform rule gates: every round of
// create_entity calls pauses for a reviewer before any call runs. It may
// also look entities up, and a lookup of "secret" pauses for a reviewer
// after it ran; its budget is two tool calls.
const clerkAgent = `apiVersion: runner/v1
kind: Pipeline
metadata: {name: loop}
state:
  messages: {type: array, reducer: messages}
  pending_tool_calls: {type: array}
  records: {type: array, reducer: append}
limits: {max_steps: 20}
start: ask
nodes:
  ask:
    type: llm
    with: {tools: [create_entity, lookup_entity]}
    next:
      - when: len(state.pending_tool_calls) > 0
        to: act
      - to: END
  act:
    type: tools
    with: {record: records}
    next: ask
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: platform}
scope: platform
rules:
  - key: platform:hitl_on_mutating_capability
    on: before_tool_call
    when: tool.mutating
    do: {require_hitl: {checkpoint_type: mutation}}
---
apiVersion: runner/v1
kind: RuleSet
metadata: {name: desk}
rules:
  - key: desk:review_secrets
    on: after_tool_call
    when: result.tool_name == "lookup_entity" && tool.args.name == "secret"
    do: {require_hitl: {checkpoint_type: disclosure}}
---
apiVersion: runner/v1
kind: Agent
metadata: {name: clerk}
pipeline: loop
model: tiny
rules: [platform, desk]
budget: {max_tool_calls: 2}
---
apiVersion: runner/v1
kind: Model
metadata: {name: tiny}
provider: scripted
---
apiVersion: runner/v1
kind: Tool
metadata: {name: create_entity}
capability: create_entity
mutating: true
parameters:
  type: object
  properties: {name: {type: string}}
  required: [name]
http:
  method: POST
  url: "%[1]s/entities"
  body: '{"name": args.name}'
  allow_hosts: [%[2]q]
---
apiVersion: runner/v1
kind: Tool
metadata: {name: lookup_entity}
parameters:
  type: object
  properties: {name: {type: string}}
  required: [name]
http:
  method: POST
  url: "%[1]s/lookups"
  body: '{"name": args.name}'
  allow_hosts: [%[2]q]
`

// entityService is the create_entity service of the approval crash test.
// Like stepService it executes a call once per Idempotency-Key and answers
// a repeated key from memory. Armed with a trap, it SIGKILLs the runner
// under test when the trap's key arrives, before or after executing it,
// and never answers that request.
type entityService struct {
	mu       sync.Mutex
	requests map[string]int // idempotency key -> requests
	executed map[string]int // idempotency key -> executions
	answers  map[string][]byte
	delay    time.Duration // each execution takes this long
	trap     *killTrap     // fires once, then is cleared
	proc     *os.Process   // the runner running now
	exited   chan struct{} // closed once proc has been waited for
	killed   bool          // the trap fired on proc
}

// killTrap says which request kills the runner, and when.
type killTrap struct {
	key       string
	afterExec bool // execute (and remember the answer) first
}

func newEntityService() *entityService {
	return &entityService{requests: map[string]int{}, executed: map[string]int{}, answers: map[string][]byte{}}
}

func (s *entityService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	var body struct{ Name string }
	if r.Method != http.MethodPost || key == "" || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, "want a POST with an Idempotency-Key and a JSON body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests[key]++
	ans, seen := s.answers[key]
	tr := s.trap
	if tr != nil && tr.key == key {
		s.trap = nil
	} else {
		tr = nil
	}
	if !seen && (tr == nil || tr.afterExec) {
		time.Sleep(s.delay)
		ans = []byte(fmt.Sprintf(`{"created": %q}`, body.Name))
		s.executed[key]++
		s.answers[key] = ans
	}
	if tr != nil {
		s.kill() // unlocks s.mu
		panic(http.ErrAbortHandler)
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(ans)
}

// kill, called with s.mu held, SIGKILLs the runner, unlocks s.mu and
// waits until the runner is gone, so that nothing it might still do
// races the test.
func (s *entityService) kill() {
	exited := s.exited
	if s.proc != nil {
		_ = s.proc.Kill()
		s.killed = true
	}
	s.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(runTimeout):
	}
}

// arm sets the trap of the next run.
func (s *entityService) arm(t *killTrap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trap, s.killed = t, false
}

// counts returns, for the keys of thread, the requests and executions so
// far, keyed by call id.
func (s *entityService) counts(thread string) (requests, executed map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pick := func(m map[string]int) map[string]int {
		out := map[string]int{}
		for k, n := range m {
			if id, ok := strings.CutPrefix(k, thread+":"); ok {
				out[id] = n
			}
		}
		return out
	}
	return pick(s.requests), pick(s.executed)
}

// approvalRig runs the clerk agent with the built binary, a SQLite store and
// entityService for create_entity.
type approvalRig struct {
	bin, dir, db string
	svc          *entityService
}

// runResult is how one run of the binary ended.
type runResult struct {
	code           int // -1: killed
	killed         bool
	stdout, stderr string
}

func newApprovalRig(t *testing.T) *approvalRig {
	t.Helper()
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	svc := newEntityService()
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "clerk.yaml"), fmt.Sprintf(clerkAgent, srv.URL, strings.TrimPrefix(srv.URL, "http://")))
	return &approvalRig{bin: bin, dir: dir, db: "sqlite:" + filepath.Join(dir, "state.db"), svc: svc}
}

// command is a runner command in the project's directory.
func (g *approvalRig) command(args ...string) *exec.Cmd {
	cmd := exec.Command(g.bin, append(args, "--store", g.db)...)
	cmd.Dir, cmd.Env = g.dir, append(os.Environ(), "RUNNER_PATHS=clerk.yaml", leaseEnv)
	return cmd
}

// exec runs `runner exec clerk` with script and args, to its end or until
// the service kills it, within runTimeout.
func (g *approvalRig) exec(t *testing.T, script string, args ...string) runResult {
	t.Helper()
	cmd := g.command(append([]string{"exec", "clerk", "--script", script}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	exited := make(chan struct{})
	g.svc.mu.Lock() // no request reaches the service before it knows proc
	err := cmd.Start()
	if err == nil {
		g.svc.proc, g.svc.exited = cmd.Process, exited
	}
	g.svc.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(runTimeout, func() { _ = cmd.Process.Kill() })
	_ = cmd.Wait()
	stopped := timer.Stop()
	close(exited)
	g.svc.mu.Lock()
	killed := g.svc.killed
	g.svc.proc, g.svc.killed = nil, false
	g.svc.mu.Unlock()
	if !stopped {
		t.Fatalf("runner %s did not end within %v\nstderr:\n%s", strings.Join(args, " "), runTimeout, &stderr)
	}
	return runResult{code: cmd.ProcessState.ExitCode(), killed: killed, stdout: stdout.String(), stderr: stderr.String()}
}

// output runs a command that must succeed and returns its stdout.
func (g *approvalRig) output(t *testing.T, args ...string) string {
	t.Helper()
	cmd := g.command(args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("runner %s: %v\n%s", strings.Join(args, " "), err, &stderr)
	}
	return string(out)
}

// script writes a scripted model that asks, in one round, to create each
// of names (calls c1, c2, ...), then closes.
func (g *approvalRig) script(t *testing.T, names []string) string {
	t.Helper()
	var calls []string
	for _, name := range names {
		calls = append(calls, "create_entity "+name)
	}
	return g.round(t, fmt.Sprintf("script-%d.yaml", len(names)), calls, 0)
}

// round writes a scripted model that asks, in one round, for calls
// ("tool name", as c1, c2, ...), then closes after a pause of delay.
func (g *approvalRig) round(t *testing.T, file string, calls []string, delay time.Duration) string {
	t.Helper()
	var yaml []string
	for i, c := range calls {
		tool, name, _ := strings.Cut(c, " ")
		yaml = append(yaml, fmt.Sprintf("{id: c%d, name: %s, args: {name: %s}}", i+1, tool, name))
	}
	writeFile(t, filepath.Join(g.dir, file), fmt.Sprintf("- {node: ask, tool_calls: [%s]}\n- {node: ask, text: Done., delay: %s}\n", strings.Join(yaml, ", "), delay))
	return file
}

// approvedRun runs a thread that pauses and is approved, without a crash,
// and returns how its approval ended.
func (g *approvalRig) approvedRun(t *testing.T, script, thread string) runResult {
	t.Helper()
	if res := g.exec(t, script, "--thread", thread); res.code != exitPaused {
		t.Fatalf("reference run: exit %d, want %d (paused)\n%s", res.code, exitPaused, res.stderr)
	}
	res := g.exec(t, script, "--resume", thread, "--value", `{"approved": true}`)
	if res.code != exitCompleted {
		t.Fatalf("reference approval: exit %d, want 0\n%s", res.code, res.stderr)
	}
	return res
}

// newestCheckpoint is what the test reads of a thread's newest checkpoint.
type newestCheckpoint struct {
	Node, Next, Status string
	Meta               struct {
		Journal []struct {
			ID       string
			Decision *struct{ Type string }
			Exec     *struct{ Status string }
		}
	}
}

// TestApprovalExactlyOnceAcrossCrashes pauses a real `runner exec` at an
// approval gate on a mutating HTTP tool, approves the calls, and has the
// tool service SIGKILL the runner at the worst moments: after the verdict
// was journaled but before the call executed, after it executed but before
// the runner saw the answer, and between two calls of one approved round.
// A resume without a value must finish the round exactly once per call —
// the journaled verdict stands, a journaled result is reused, a call
// repeated after a crash carries the same Idempotency-Key — and end in the
// state of an approved run that never crashed.
func TestApprovalExactlyOnceAcrossCrashes(t *testing.T) {
	g := newApprovalRig(t)
	for _, tc := range []struct {
		name, thread string
		names        []string // the entities of the round: calls c1, c2, ...
		trap         killTrap // its key is a call id here
		// what the service saw when the runner died, and in the end
		crashRequests, crashExecuted, requests map[string]int
		// the calls whose result the runner had journaled when it died
		journaled []string
	}{
		{
			name: "kill between approval and execution", thread: "before-exec", names: []string{"Alpha"},
			trap:          killTrap{key: "c1"},
			crashRequests: map[string]int{"c1": 1}, crashExecuted: map[string]int{},
			requests: map[string]int{"c1": 2},
		},
		{
			name: "kill after execution, before the answer", thread: "after-exec", names: []string{"Alpha"},
			trap:          killTrap{key: "c1", afterExec: true},
			crashRequests: map[string]int{"c1": 1}, crashExecuted: map[string]int{"c1": 1},
			requests: map[string]int{"c1": 2},
		},
		{
			name: "kill between two approved calls", thread: "between-calls", names: []string{"Alpha", "Beta"},
			trap:          killTrap{key: "c2"},
			crashRequests: map[string]int{"c1": 1, "c2": 1}, crashExecuted: map[string]int{"c1": 1},
			requests: map[string]int{"c1": 1, "c2": 2}, journaled: []string{"c1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := g.script(t, tc.names)
			thread := tc.thread
			ids := make([]string, len(tc.names))
			for i := range ids {
				ids[i] = fmt.Sprintf("c%d", i+1)
			}

			// the run pauses before any call reaches the service
			if res := g.exec(t, script, "--thread", thread); res.code != exitPaused {
				t.Fatalf("run: exit %d, want %d (paused)\nstderr:\n%s", res.code, exitPaused, res.stderr)
			}
			g.checkCounts(t, "paused", thread, map[string]int{}, map[string]int{})

			// the approval's run dies inside the round
			g.svc.arm(&killTrap{key: thread + ":" + tc.trap.key, afterExec: tc.trap.afterExec})
			res := g.exec(t, script, "--resume", thread, "--value", `{"approved": true}`)
			if !res.killed || res.code != -1 {
				t.Fatalf("approval: exit %d (killed by the service: %v), want killed by the service at %s\nstdout:\n%s\nstderr:\n%s",
					res.code, res.killed, tc.trap.key, res.stdout, res.stderr)
			}
			g.checkCounts(t, "killed", thread, tc.crashRequests, tc.crashExecuted)
			g.checkJournal(t, thread, ids, tc.journaled)
			time.Sleep(crashLeaseTTL) // until the killed run's lease expires

			// a resume without a value finishes the round from the journal
			res = g.exec(t, script, "--resume", thread)
			if res.code != exitCompleted {
				t.Fatalf("resume: exit %d, want 0\nstderr:\n%s", res.code, res.stderr)
			}
			executed := map[string]int{}
			for _, id := range ids {
				executed[id] = 1
			}
			g.checkCounts(t, "resumed", thread, tc.requests, executed)
			got := finalState(t, res.stdout)
			checkCreated(t, got, tc.names)
			ref := g.approvedRun(t, script, "reference-"+thread)
			if want := finalState(t, ref.stdout); !reflect.DeepEqual(got, want) {
				t.Errorf("state after the crash and resume (timestamps and durations left out):\n%s\nwant (approved, no crash):\n%s", indentJSON(got), indentJSON(want))
			}
			if got, want := usageLine(res.stderr), usageLine(ref.stderr); got != want || want == "" {
				t.Errorf("usage after the crash and resume: %q, want (approved, no crash) %q", got, want)
			}

			// the finished thread takes no second approval
			hist := g.output(t, "threads", "history", thread)
			res = g.exec(t, script, "--resume", thread, "--value", `{"approved": true}`)
			if res.code != exitFailed || !strings.Contains(res.stderr, "already completed") {
				t.Errorf("a second approval of the completed thread: exit %d, stderr %q; want it refused: exit %d, already completed", res.code, res.stderr, exitFailed)
			}
			if after := g.output(t, "threads", "history", thread); after != hist {
				t.Errorf("a refused approval changed the thread's history:\n%s\nwant:\n%s", after, hist)
			}
			g.checkCounts(t, "refused", thread, tc.requests, executed)
		})
	}
}

// checkCounts compares the service's requests and executions for thread's
// keys, by call id, with what they must be at a stage of the scenario.
func (g *approvalRig) checkCounts(t *testing.T, stage, thread string, requests, executed map[string]int) {
	t.Helper()
	gotReq, gotExec := g.svc.counts(thread)
	if !maps.Equal(gotReq, requests) {
		t.Errorf("%s: requests by key %s:<id> = %v, want %v", stage, thread, gotReq, requests)
	}
	if !maps.Equal(gotExec, executed) {
		t.Errorf("%s: executions by key %s:<id> = %v, want %v", stage, thread, gotExec, executed)
	}
}

// checkJournal checks that the thread's newest checkpoint, written inside
// the round, journals an approval of every call and a result for exactly
// the calls in journaled.
func (g *approvalRig) checkJournal(t *testing.T, thread string, ids, journaled []string) {
	t.Helper()
	var cp newestCheckpoint
	if err := json.Unmarshal([]byte(g.output(t, "threads", "show", "--raw", thread)), &cp); err != nil {
		t.Fatal(err)
	}
	if cp.Node != "act" || cp.Next != "act" || cp.Status != "running" {
		t.Errorf("newest checkpoint after the crash: node %s, next %s, status %s; want act, act, running", cp.Node, cp.Next, cp.Status)
	}
	var got []string
	for _, e := range cp.Meta.Journal {
		d, ran := "none", "not run"
		if e.Decision != nil {
			d = e.Decision.Type
		}
		if e.Exec != nil {
			ran = e.Exec.Status
		}
		got = append(got, fmt.Sprintf("%s: %s, %s", e.ID, d, ran))
	}
	var want []string
	for _, id := range ids {
		ran := "not run"
		if slices.Contains(journaled, id) {
			ran = "SUCCESS"
		}
		want = append(want, fmt.Sprintf("%s: approve, %s", id, ran))
	}
	if !slices.Equal(got, want) {
		t.Errorf("journal after the crash = %q, want %q", got, want)
	}
}

// finalState decodes exec's output, leaving out what differs between two
// identical runs: the records' timestamps and durations.
func finalState(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var state map[string]any
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&state); err != nil {
		t.Fatalf("output %q: %v", stdout, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("output %q: more than one JSON value", stdout)
	}
	records, _ := state["records"].([]any)
	for _, r := range records {
		if m, ok := r.(map[string]any); ok {
			delete(m, "timestamp")
			delete(m, "execution_time_ms")
		}
	}
	return state
}

// checkCreated checks the state of a finished approved round: one
// successful record and one tool message per entity, in order, each with
// the service's answer, and the model's closing reply last.
func checkCreated(t *testing.T, state map[string]any, names []string) {
	t.Helper()
	var got, want []string
	for _, r := range asList(state["records"]) {
		m, _ := r.(map[string]any)
		got = append(got, fmt.Sprintf("record %v %v %v %v", m["call_id"], m["status"], m["ok"], m["output"]))
	}
	for _, msg := range asList(state["messages"]) {
		m, _ := msg.(map[string]any)
		switch m["role"] {
		case "tool":
			got = append(got, fmt.Sprintf("tool %v %v", m["tool_call_id"], m["content"]))
		case "assistant":
			got = append(got, fmt.Sprintf("assistant %d call(s) %v", len(asList(m["tool_calls"])), m["content"]))
		}
	}
	for i, name := range names {
		want = append(want, fmt.Sprintf("record c%d SUCCESS true map[created:%s]", i+1, name))
	}
	want = append(want, fmt.Sprintf("assistant %d call(s) ", len(names)))
	for i, name := range names {
		want = append(want, fmt.Sprintf(`tool c%d {"created":%q}`, i+1, name))
	}
	want = append(want, "assistant 0 call(s) Done.")
	if !slices.Equal(got, want) {
		t.Errorf("final state:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p := asList(state["pending_tool_calls"]); len(p) != 0 {
		t.Errorf("pending_tool_calls = %v, want none", p)
	}
}

// usageLine is the usage exec reports on stderr.
func usageLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "usage: ") {
			return l
		}
	}
	return ""
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func indentJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestMixedRoundAcrossCrashes pauses a real `runner exec` on a round that
// holds one call at a gate and lets another through — a gate before
// create_entity, and one after a lookup of "secret" — approves it, and
// SIGKILLs the approval at each of its checkpoints in turn. A resume
// without a value finishes it: each call executed once in all, the state
// and the usage those of an approved run that never crashed, within a
// budget of two tool calls.
func TestMixedRoundAcrossCrashes(t *testing.T) {
	g := newApprovalRig(t)
	g.svc.delay = 50 * time.Millisecond // the kill lands inside a call, not after the run
	for _, tc := range []struct {
		gate  string
		calls []string
	}{
		{"before_tool_call", []string{"lookup_entity a", "create_entity Alpha"}},
		{"after_tool_call", []string{"lookup_entity a", "lookup_entity secret"}},
	} {
		t.Run(tc.gate, func(t *testing.T) {
			script := g.round(t, tc.gate+".yaml", tc.calls, 300*time.Millisecond)
			ref := g.approvedRun(t, script, "reference-"+tc.gate)
			checkpoints := g.approvalCheckpoints(t, script, "count-"+tc.gate)
			for n := 1; n < checkpoints; n++ {
				thread := fmt.Sprintf("%s-%d", tc.gate, n)
				if res := g.exec(t, script, "--thread", thread); res.code != exitPaused {
					t.Fatalf("run: exit %d, want %d (paused)\n%s", res.code, exitPaused, res.stderr)
				}
				killAfterCheckpoints(t, g.command("exec", "clerk", "--script", script, "--resume", thread, "--value", `{"approved": true}`, "--events"), n)
				res := g.exec(t, script, "--resume", thread)
				if res.code != exitCompleted {
					t.Fatalf("killed after checkpoint %d: resume: exit %d, want 0\n%s", n, res.code, res.stderr)
				}
				_, executed := g.svc.counts(thread)
				if want := map[string]int{"c1": 1, "c2": 1}; !maps.Equal(executed, want) {
					t.Errorf("killed after checkpoint %d: executions by call %v, want %v", n, executed, want)
				}
				if got, want := finalState(t, res.stdout), finalState(t, ref.stdout); !reflect.DeepEqual(got, want) {
					t.Errorf("killed after checkpoint %d: state\n%s\nwant (approved, no crash)\n%s", n, indentJSON(got), indentJSON(want))
				}
				if got, want := usageLine(res.stderr), usageLine(ref.stderr); got != want || want == "" {
					t.Errorf("killed after checkpoint %d: usage %q, want (approved, no crash) %q", n, got, want)
				}
			}
		})
	}
}

// approvalCheckpoints pauses thread and approves it, without a crash, and
// returns how many checkpoints the approval wrote.
func (g *approvalRig) approvalCheckpoints(t *testing.T, script, thread string) int {
	t.Helper()
	if res := g.exec(t, script, "--thread", thread); res.code != exitPaused {
		t.Fatalf("run: exit %d, want %d (paused)\n%s", res.code, exitPaused, res.stderr)
	}
	res := g.exec(t, script, "--resume", thread, "--value", `{"approved": true}`, "--events")
	if res.code != exitCompleted {
		t.Fatalf("approval: exit %d, want 0\n%s", res.code, res.stderr)
	}
	return strings.Count(res.stdout, `"event":"checkpoint"`)
}

// TestRefusedVerdict: `exec --resume` with a verdict the gate refuses
// exits 2, says what to fix and changes nothing; an approval then runs
// the call once.
func TestRefusedVerdict(t *testing.T) {
	g := newApprovalRig(t)
	script := g.script(t, []string{"Alpha"})
	if res := g.exec(t, script, "--thread", "refused"); res.code != exitPaused {
		t.Fatalf("run: exit %d, want %d (paused)\n%s", res.code, exitPaused, res.stderr)
	}
	hist := g.output(t, "threads", "history", "refused")
	for _, c := range []struct{ value, want string }{
		{`{"approved": false, "comment": "wrong lease"}`, `did you mean "message"?`},
		{`{"decisions": [{"type": "edit", "edited_action": {"name": "lookup_entity", "args": {"name": "Beta"}}}]}`,
			"the edit names tool lookup_entity, but the gated call is create_entity"},
	} {
		res := g.exec(t, script, "--resume", "refused", "--value", c.value)
		if res.code != 2 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("resume with %s: exit %d, want 2 saying %q\n%s", c.value, res.code, c.want, res.stderr)
		}
	}
	if after := g.output(t, "threads", "history", "refused"); after != hist {
		t.Errorf("refused verdicts changed the thread's history:\n%s\nwant:\n%s", after, hist)
	}
	if res := g.exec(t, script, "--resume", "refused", "--value", `{"approved": true}`); res.code != exitCompleted {
		t.Fatalf("approval: exit %d, want 0\n%s", res.code, res.stderr)
	}
	g.checkCounts(t, "approved", "refused", map[string]int{"c1": 1}, map[string]int{"c1": 1})
}
