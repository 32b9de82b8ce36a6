package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/server"
)

// withExpiring serves the payout agent of the CLI's testdata whose gate
// expires a second after it opens, and sweeps approvals every 100 ms.
func withExpiring(t *testing.T) func(*server.Config) {
	g := payoutAgent(t, "../cmd/runner/testdata/expiring.yaml")
	return func(c *server.Config) {
		c.Graphs["payout"] = g
		c.ApprovalsEvery = 100 * time.Millisecond
	}
}

// pausePayout starts a payout on thread and returns its approval's id.
func pausePayout(e *env, thread string) string {
	e.t.Helper()
	e.call("POST", "/threads", map[string]any{"thread_id": thread}, 200)
	paused := e.call("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "payout", "input": map[string]any{"amount": 5}}, 200)
	if paused["__interrupt__"] == nil {
		e.t.Fatalf("no gate: %v", paused)
	}
	list, _ := e.call("GET", "/approvals", nil, 200)["approvals"].([]any)
	for _, a := range list {
		if a := a.(map[string]any); a["thread_id"] == thread {
			return a["id"].(string)
		}
	}
	e.t.Fatalf("approvals %v, none of thread %s", list, thread)
	return ""
}

// awaitExpired waits (10 s at most) until approval id is expired and its
// thread's runs have all ended, and returns the thread's runs.
func awaitExpired(e *env, thread, id string) []any {
	e.t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if e.call("GET", "/approvals/"+id, nil, 200)["status"] != store.ApprovalExpired {
			continue
		}
		runs := e.list("GET", "/threads/"+thread+"/runs", nil)
		ended := true
		for _, r := range runs {
			st := r.(map[string]any)["status"]
			ended = ended && st != "pending" && st != "running"
		}
		if ended {
			return runs
		}
	}
	e.t.Fatalf("approval %s was not expired in 10 s: %v", id, e.call("GET", "/approvals/"+id, nil, 200))
	return nil
}

// TestApprovalExpiresOnItsOwn: an approval nobody answers takes its
// on_expire decision a second after it opened, with no client request:
// the server's sweep resumes its thread in a run of its own, the payout
// is rejected (never paid), the thread is no longer interrupted, and the
// webhook is told (approval.expired: which approval, rule, thread, and
// the decision taken).
func TestApprovalExpiresOnItsOwn(t *testing.T) {
	rcv := newReceiver(t)
	e := newEnv(t, withExpiring(t), hooksTo(rcv.url()), func(c *server.Config) { c.Webhooks.Hooks[0].Events = []string{server.EventApprovalExpired} })
	id := pausePayout(e, "p1")
	runs := awaitExpired(e, "p1", id)
	rcv.waitFor(1, 10*time.Second)
	if got := rcv.events()[server.EventApprovalExpired]; len(got) != 1 {
		t.Errorf("approval.expired: %v, want one", got)
	} else if d := got[0]["data"].(map[string]any); d["approval_id"] != id || d["rule"] != "payments:payout" ||
		d["thread_id"] != "p1" || d["decision"] != "reject" || d["tool"] != "pay" {
		t.Errorf("approval.expired says %v", d)
	}
	if len(runs) != 2 || runs[0].(map[string]any)["status"] != "success" { // newest first
		t.Fatalf("runs %v, want the paused one and the sweep's, a success", runs)
	}
	st := e.call("GET", "/threads/p1/state", nil, 200)
	if n, _ := st["next"].([]any); len(n) != 0 || len(st["interrupts"].([]any)) != 0 {
		t.Errorf("thread after expiry: next %v, interrupts %v", st["next"], st["interrupts"])
	}
	recs, _ := st["values"].(map[string]any)["records"].([]any)
	if len(recs) != 1 || recs[0].(map[string]any)["status"] != "DENIED" {
		t.Errorf("payout records %v, want one DENIED", recs)
	}
}

// TestApprovalExpiresOnceAcrossReplicas: two servers share a store
// (SQLite file, PostgreSQL schema), both sweeping every 100 ms; each
// approval is expired once — one run resumes its thread, the ledger has
// one expired record for it.
func TestApprovalExpiresOnceAcrossReplicas(t *testing.T) {
	for _, sh := range sharedStores {
		t.Run(sh.name, func(t *testing.T) {
			open := sh.open(t)
			shared := open()
			a := newEnv(t, withExpiring(t), withStore(shared))
			newEnv(t, withExpiring(t), withStore(open())) // b: sweeps the same store
			ids := map[string]string{}
			for _, thread := range []string{"p1", "p2", "p3"} {
				ids[thread] = pausePayout(a, thread)
			}
			for thread, id := range ids {
				if runs := awaitExpired(a, thread, id); len(runs) != 2 {
					t.Errorf("%s: %d runs, want the paused one and one sweep's", thread, len(runs))
				}
			}
			recs, err := shared.(store.AuditStore).Audit(context.Background(), store.AuditQuery{AllTenants: true})
			if err != nil {
				t.Fatal(err)
			}
			expired := map[string]int{}
			for _, r := range recs {
				if en, _ := r.Entry(); en.Event == store.AuditExpired {
					expired[en.Thread]++
				}
			}
			if len(expired) != len(ids) {
				t.Errorf("expired ledger records by thread %v, want one for each of %d threads", expired, len(ids))
			}
			for th, n := range expired {
				if n != 1 {
					t.Errorf("thread %s expired %d times", th, n)
				}
			}
		})
	}
}
