package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runner-dev/runner/runner/access"
)

// postgresEnv names the variable holding the URL of the PostgreSQL server
// the replica test runs against.
const postgresEnv = "RUNNER_TEST_POSTGRES"

// replicaLeaseTTL is the lease time of the replicas: a run of a killed
// replica is marked error, and its thread resumable, that long after.
const replicaLeaseTTL = time.Second

// replicaScript: the clerk asks to create an entity, which waits for
// approval; approved, the entity is created, then the model takes its
// time to answer (the replica running it is killed meanwhile).
const replicaScript = `[
 {"node": "ask", "tool_calls": [{"id": "c1", "name": "create_entity", "args": {"name": "Alpha"}}]},
 {"node": "ask", "delay": "2s", "text": "Created Alpha."}]`

// TestServeReplicas runs two `runner serve` replicas on one PostgreSQL
// database. A run started on replica A is killed with A mid-run, after its
// approved tool call: replica B sees the thread and the run, marks the
// run error once its lease has expired (no ghost running run), and
// continues the thread to its end, the tool call not executed again.
func TestServeReplicas(t *testing.T) {
	storeURL := postgresSchema(t)
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	svc := newEntityService()
	ts := httptest.NewServer(svc)
	defer ts.Close()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "clerk.yaml"), fmt.Sprintf(clerkAgent, ts.URL, strings.TrimPrefix(ts.URL, "http://")))
	writeFile(t, filepath.Join(dir, "script.json"), replicaScript)
	writeFile(t, filepath.Join(dir, "keys.yaml"), access.HashKey("sk-test")+": acme\n")
	a, aProc := startReplica(t, bin, dir, storeURL)
	b, _ := startReplica(t, bin, dir, storeURL)

	var thread struct {
		ThreadID string `json:"thread_id"`
	}
	decode(t, call(t, "POST", a+"/threads", map[string]any{}, 200), &thread)
	runs := "/threads/" + thread.ThreadID + "/runs"
	input := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Create Alpha."}}}
	var paused map[string]any
	decode(t, call(t, "POST", a+runs+"/wait", map[string]any{"assistant_id": "clerk", "input": input}, 200), &paused)
	if paused["__interrupt__"] == nil {
		t.Fatalf("first run did not pause for approval: %v", paused)
	}
	var run struct {
		RunID string `json:"run_id"`
	}
	approve := map[string]any{"assistant_id": "clerk", "command": map[string]any{"resume": map[string]any{"approved": true}}}
	decode(t, call(t, "POST", a+runs, approve, 200), &run)
	waitRecords(t, b+"/threads/"+thread.ThreadID+"/state", 1)
	_ = aProc.Kill()
	_, _ = aProc.Wait()

	runURL := b + runs + "/" + run.RunID
	killed := time.Now()
	if st := runStatus(t, runURL); st != "running" && st != "error" {
		t.Fatalf("replica B sees the killed run %s, want running (or error)", st)
	}
	for runStatus(t, runURL) != "error" {
		if time.Since(killed) > 10*replicaLeaseTTL {
			t.Fatalf("the run of the killed replica is still %s after %v", runStatus(t, runURL), 10*replicaLeaseTTL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the killed replica's run was marked error %v after the kill", time.Since(killed).Round(time.Millisecond))
	if evs := sseEvents(t, call(t, "GET", runURL+"/stream", nil, 200)); !strings.Contains(evs, `"server_lost"`) || !strings.HasSuffix(evs, "event: end\ndata: null\n") {
		t.Errorf("the killed run's stream does not end with its error:\n%s", evs)
	}

	var final map[string]any
	decode(t, call(t, "POST", b+runs+"/wait", map[string]any{"assistant_id": "clerk"}, 200), &final)
	if final["__error__"] != nil || len(asSlice(final["records"])) != 1 {
		t.Fatalf("the run continuing the thread on replica B ended with %v, want one record and no error", final)
	}
	msgs := asSlice(final["messages"])
	if last, _ := msgs[len(msgs)-1].(map[string]any); last["content"] != "Created Alpha." {
		t.Errorf("last message %v, want the model's answer", last)
	}
	requests, executed := svc.counts(access.ThreadKey("acme", thread.ThreadID)) // a call's idempotency key names the tenant's thread
	if len(executed) != 1 || len(requests) != 1 {
		t.Errorf("create_entity requests %v, executions %v: want one call, requested and executed once", requests, executed)
	}
	for id, n := range requests {
		if n != 1 || executed[id] != 1 {
			t.Errorf("create_entity call %s requested %d times, executed %d times; want once", id, n, executed[id])
		}
	}
}

// postgresSchema returns the URL of a schema of its own on the server in
// postgresEnv, dropped when the test ends. Without the variable the test
// is skipped, or fails under CI, which must run it.
func postgresSchema(t *testing.T) string {
	t.Helper()
	server := os.Getenv(postgresEnv)
	switch {
	case server == "" && os.Getenv("CI") != "":
		t.Fatalf("%s is not set: CI must run the PostgreSQL tests (.ci/run starts a server)", postgresEnv)
	case server == "":
		t.Skipf("set %s=postgres://user@host:port/db?sslmode=disable to run the PostgreSQL tests", postgresEnv)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("connect to %s: %v", postgresEnv, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "runner_serve_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close(ctx)
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

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
