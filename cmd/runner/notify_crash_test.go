package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestApprovalNotifiedAcrossCrash kills `runner serve` at the gate's
// checkpoint and checks that the approval.requested notification is
// still delivered after a restart. The kill is made exact with a lock:
// the test holds the outbox table of the server's PostgreSQL schema
// locked, so the server's first write to it waits; it kills the server
// then, ends the waiting transaction as the crash would, and unlocks.
// Before, the gate's checkpoint was committed first and its notification
// enqueued after, in a write of its own: that write was the one waiting,
// the kill lost it, and the restarted server, finding the thread paused,
// never sent it. Now the notification is written in the checkpoint's own
// transaction: neither survives the kill, and the restarted server
// continues the run, reaches the gate again and sends it.
func TestApprovalNotifiedAcrossCrash(t *testing.T) {
	storeURL := postgresSchema(t)
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	requested := map[string]int{} // thread → approval.requested received
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Type string
			Data struct {
				ThreadID string `json:"thread_id"`
			}
		}
		if json.Unmarshal(body, &m) == nil && m.Type == "approval.requested" {
			mu.Lock()
			requested[m.Data.ThreadID]++
			mu.Unlock()
		}
	}))
	defer rcv.Close()
	dir, _ := clerkProject(t, replicaScript)
	writeFile(t, filepath.Join(dir, "runner.yaml"), "webhooks:\n  - {name: reviewers, url: "+rcv.URL+", secret_env: HOOK_SECRET}\n")
	t.Setenv("HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	a, aProc := startReplica(t, bin, dir, storeURL)

	ctx := context.Background()
	db, err := pgx.Connect(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	lock, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, `LOCK TABLE webhooks IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var thread struct {
		ThreadID string `json:"thread_id"`
	}
	decode(t, call(t, "POST", a+"/threads", map[string]any{}, 200), &thread)
	input := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Create Alpha."}}}
	call(t, "POST", a+"/threads/"+thread.ThreadID+"/runs", map[string]any{"assistant_id": "clerk", "input": input}, 200).Body.Close()

	// The writers waiting for the outbox's lock: the server's write of the
	// notification, once the gate has paused the run.
	waiting := `SELECT pid FROM pg_locks WHERE relation = 'webhooks'::regclass AND NOT granted`
	deadline := time.Now().Add(runTimeout)
	for {
		var pid int
		err := lock.QueryRow(ctx, waiting).Scan(&pid)
		if err == nil {
			break
		}
		if err != pgx.ErrNoRows || time.Now().After(deadline) {
			t.Fatalf("no write of the outbox waits for its lock: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = aProc.Kill()
	_, _ = aProc.Wait()
	// The killed server's waiting transactions end with it (PostgreSQL
	// would notice the closed connection only once unblocked).
	if _, err := lock.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM (`+waiting+`) w`); err != nil {
		t.Fatal(err)
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	startReplica(t, bin, dir, storeURL) // takes over the killed server's run
	deadline = time.Now().Add(replicaLeaseTTL + runTimeout)
	for {
		mu.Lock()
		n := requested[thread.ThreadID]
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("approval.requested of thread %s not delivered after the restart", thread.ThreadID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
