package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store/storetest"
)

// replicaLeaseTTL is the lease time of the replicas: a run of a killed
// replica is taken over by the other that long after (within twice that).
const replicaLeaseTTL = time.Second

// replicaScript: the clerk asks to create an entity, which waits for
// approval; approved, the entity is created, then the model takes its
// time to answer (the replica running it is killed meanwhile); thanked in
// a new turn, it answers.
const replicaScript = `[
 {"node": "ask", "tool_calls": [{"id": "c1", "name": "create_entity", "args": {"name": "Alpha"}}]},
 {"node": "ask", "delay": "2s", "text": "Created Alpha."},
 {"node": "ask", "text": "You are welcome."}]`

// TestServeReplicas runs two `runner serve` replicas on one PostgreSQL
// database. A background run started on replica A is killed with A
// mid-run, after its approved tool call: a client of A rejoins the run on
// replica B (join), which takes the run over once its lease has expired
// and finishes it under the same id, its stream going on where A's
// stopped, the tool call not executed again (defect 10: B marked it error
// and nobody finished it).
func TestServeReplicas(t *testing.T) {
	storeURL := postgresSchema(t)
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	dir, svc := clerkProject(t, replicaScript)
	a, aProc := startReplica(t, bin, dir, storeURL)
	b, _ := startReplica(t, bin, dir, storeURL)

	thread := pausedClerk(t, a, "Alpha")
	runs := "/threads/" + thread + "/runs"
	var run struct {
		RunID string `json:"run_id"`
	}
	decode(t, call(t, "POST", a+runs, approveBody, 200), &run)
	waitRecords(t, b+"/threads/"+thread+"/state", 1)
	_ = aProc.Kill()
	_, _ = aProc.Wait()

	runURL := b + runs + "/" + run.RunID
	killed := time.Now()
	if st := runStatus(t, runURL); st != "running" {
		t.Fatalf("replica B sees the killed run %s, want running", st)
	}
	var final map[string]any
	decode(t, call(t, "GET", runURL+"/join", nil, 200), &final)
	t.Logf("the killed replica's run ended on B %v after the kill", time.Since(killed).Round(time.Millisecond))
	if st := runStatus(t, runURL); st != "success" || time.Since(killed) > replicaLeaseTTL+5*time.Second {
		t.Fatalf("the run of the killed replica is %s %v after the kill, want success within %v",
			st, time.Since(killed), replicaLeaseTTL+5*time.Second)
	}
	checkClerkFinal(t, final, "Created Alpha.")
	evs := sseEvents(t, call(t, "GET", runURL+"/stream", nil, 200))
	if strings.Contains(evs, `"server_lost"`) || !strings.Contains(evs, `"attempt":2`) || !strings.HasSuffix(evs, "event: end\ndata: null\n") {
		t.Errorf("the taken-over run's stream does not go on to its end on B:\n%s", evs)
	}
	checkOnce(t, svc, thread, 1)
}

// TestServeReplicasTwenty: replica A runs 20 background runs, each
// resuming a clerk thread with its gated call approved; A is killed once
// every call was made, while the model answers. Replica B finishes all 20
// within the lease TTL and 5 s: no step checkpointed twice, every gated
// call made once.
func TestServeReplicasTwenty(t *testing.T) {
	storeURL := postgresSchema(t)
	killAndFinish(t, storeURL, true)
}

// TestServeRestartFinishesRuns: the only server, on SQLite, is killed
// under 20 background runs (and runs queued behind some of them,
// multitask_strategy enqueue); restarted, it finishes them all.
func TestServeRestartFinishesRuns(t *testing.T) {
	storeURL := "sqlite:" + filepath.Join(t.TempDir(), "state.db")
	killAndFinish(t, storeURL, false)
}

// killAndFinish starts server A on storeURL, makes 20 clerk threads
// pause for approval and resumes each, approved, in a background run (a
// few with a run queued behind it); it kills A once every approved call
// was made and checkpointed, and checks that server B — a replica
// serving all along, or A restarted — finishes every run within the lease
// TTL and 5 s of the kill, with each thread's steps checkpointed once and
// each gated call made once.
func killAndFinish(t *testing.T, storeURL string, replica bool) {
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	dir, svc := clerkProject(t, replicaScript)
	a, aProc := startReplica(t, bin, dir, storeURL)
	var b string
	if replica {
		b, _ = startReplica(t, bin, dir, storeURL)
	}

	const n, queued = 20, 3
	threads := make([]string, n)
	for i := range threads {
		threads[i] = pausedClerk(t, a, "Alpha")
	}
	type admitted struct{ thread, run string }
	var runs []admitted
	for i, thread := range threads {
		var run struct {
			RunID string `json:"run_id"`
		}
		decode(t, call(t, "POST", a+"/threads/"+thread+"/runs", approveBody, 200), &run)
		runs = append(runs, admitted{thread, run.RunID})
		if i < queued {
			thanks := map[string]any{"assistant_id": "clerk", "multitask_strategy": "enqueue",
				"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Thanks."}}}}
			decode(t, call(t, "POST", a+"/threads/"+thread+"/runs", thanks, 200), &run)
			runs = append(runs, admitted{thread, run.RunID})
		}
	}
	for _, thread := range threads { // each approved call made and checkpointed
		waitRecords(t, a+"/threads/"+thread+"/state", 1)
	}
	_ = aProc.Kill()
	_, _ = aProc.Wait()
	killed := time.Now()
	if !replica {
		b, _ = startReplica(t, bin, dir, storeURL)
	}

	for _, r := range runs {
		var final map[string]any
		decode(t, call(t, "GET", b+"/threads/"+r.thread+"/runs/"+r.run+"/join", nil, 200), &final)
		if st := runStatus(t, b+"/threads/"+r.thread+"/runs/"+r.run); st != "success" {
			t.Errorf("run %s of thread %s ended %s, want success; its stream:\n%s", r.run, r.thread, st,
				sseEvents(t, call(t, "GET", b+"/threads/"+r.thread+"/runs/"+r.run+"/stream", nil, 200)))
		}
	}
	took := time.Since(killed)
	t.Logf("the %d runs of the killed server ended %v after the kill", len(runs), took.Round(time.Millisecond))
	if limit := replicaLeaseTTL + 5*time.Second; took > limit {
		t.Errorf("the runs of the killed server ended %v after the kill, want within %v", took, limit)
	}
	for i, thread := range threads {
		var final struct{ Values map[string]any }
		decode(t, call(t, "GET", b+"/threads/"+thread+"/state", nil, 200), &final)
		answer := "Created Alpha."
		if i < queued {
			answer = "You are welcome."
		}
		checkClerkFinal(t, final.Values, answer)
		checkSteps(t, b, thread)
		checkOnce(t, svc, thread, 1)
	}
}

// checkSteps checks that no step of thread was checkpointed twice.
func checkSteps(t *testing.T, url, thread string) {
	t.Helper()
	var hist []struct {
		Metadata struct{ Step int } `json:"metadata"`
	}
	decode(t, call(t, "POST", url+"/threads/"+thread+"/history", map[string]any{"limit": 100}, 200), &hist)
	seen := map[int]bool{}
	for _, cp := range hist {
		if seen[cp.Metadata.Step] {
			t.Errorf("thread %s: step %d checkpointed twice (%d checkpoints)", thread, cp.Metadata.Step, len(hist))
		}
		seen[cp.Metadata.Step] = true
	}
}

// approveBody resumes a clerk thread paused for approval, approved.
var approveBody = map[string]any{"assistant_id": "clerk", "command": map[string]any{"resume": map[string]any{"approved": true}}}

// pausedClerk starts a thread of the clerk on the replica at url, which
// pauses for approval to create the entity name, and returns its id.
func pausedClerk(t *testing.T, url, name string) string {
	t.Helper()
	var thread struct {
		ThreadID string `json:"thread_id"`
	}
	decode(t, call(t, "POST", url+"/threads", map[string]any{}, 200), &thread)
	input := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Create " + name + "."}}}
	var paused map[string]any
	decode(t, call(t, "POST", url+"/threads/"+thread.ThreadID+"/runs/wait", map[string]any{"assistant_id": "clerk", "input": input}, 200), &paused)
	if paused["__interrupt__"] == nil {
		t.Fatalf("first run did not pause for approval: %v", paused)
	}
	return thread.ThreadID
}

// checkClerkFinal checks the values of a clerk thread that created an
// entity: one record, and the model's answer last.
func checkClerkFinal(t *testing.T, final map[string]any, answer string) {
	t.Helper()
	if final["__error__"] != nil || len(asSlice(final["records"])) != 1 {
		t.Fatalf("the thread ended with %v, want one record and no error", final)
	}
	msgs := asSlice(final["messages"])
	if last, _ := msgs[len(msgs)-1].(map[string]any); last["content"] != answer {
		t.Errorf("last message %v, want the model's answer", last)
	}
}

// checkOnce checks that thread made n create_entity calls, each
// requested and executed once.
func checkOnce(t *testing.T, svc *entityService, thread string, n int) {
	t.Helper()
	requests, executed := svc.counts(access.ThreadKey("acme", thread)) // a call's idempotency key names the tenant's thread
	if len(executed) != n || len(requests) != n {
		t.Errorf("thread %s: create_entity requests %v, executions %v: want %d calls, each requested and executed once", thread, requests, executed, n)
	}
	for id, k := range requests {
		if k != 1 || executed[id] != 1 {
			t.Errorf("thread %s: create_entity call %s requested %d times, executed %d times; want once", thread, id, k, executed[id])
		}
	}
}

// postgresSchema returns the URL of a schema of its own on the test
// server (storetest.PostgresSchema).
func postgresSchema(t *testing.T) string { return storetest.PostgresSchema(t, "runner_serve_") }

// startReplica starts `runner serve` on the store in the project dir and
// returns its base URL and process, killed when the test ends.
func startReplica(t *testing.T, bin, dir, storeURL string) (string, *os.Process) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--store", storeURL,
		"--script", "script.json", "--api-keys", "keys.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RUNNER_PATHS=clerk.yaml", "RUNNER_LEASE_TTL="+replicaLeaseTTL.String())
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return serveAddress(t, stderr), cmd.Process
}

// runStatus is the status of the run at url.
func runStatus(t *testing.T, url string) string {
	t.Helper()
	var run struct{ Status string }
	decode(t, call(t, "GET", url, nil, 200), &run)
	return run.Status
}

// waitRecords waits until the thread state at url holds n records.
func waitRecords(t *testing.T, url string, n int) {
	t.Helper()
	deadline := time.Now().Add(runTimeout)
	for {
		var state struct{ Values map[string]any }
		decode(t, call(t, "GET", url, nil, 200), &state)
		if len(asSlice(state.Values["records"])) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread never held %d records: %v", n, state.Values)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
