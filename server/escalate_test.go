package server_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/server"
)

// withEscalating serves, with withPayout's principals, the payout agent
// of the CLI's testdata that ops leads approve and that escalates to the
// CFOs a second after its gate opens; approvals are swept every 100 ms.
func withEscalating(t *testing.T) func(*server.Config) {
	keys, g := withPayout(t), payoutAgent(t, "../cmd/runner/testdata/escalating.yaml")
	return func(c *server.Config) {
		keys(c)
		c.Graphs["payout"] = g
		c.ApprovalsEvery = 100 * time.Millisecond
	}
}

// inbox lists the ids of the approvals the env's key may decide.
func inbox(e *env) []string {
	e.t.Helper()
	var ids []string
	list, _ := e.call("GET", "/approvals", nil, 200)["approvals"].([]any)
	for _, a := range list {
		ids = append(ids, a.(map[string]any)["id"].(string))
	}
	return ids
}

// awaitInbox waits (10 s at most) until approval id is in the inbox of
// the env's key.
func awaitInbox(e *env, id string) {
	e.t.Helper()
	for end := time.Now().Add(10 * time.Second); !slices.Contains(inbox(e), id); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			e.t.Fatalf("approval %s did not reach the inbox in 10 s: %v", id, e.call("GET", "/approvals/"+id, nil, 200))
		}
	}
}

// TestApprovalEscalatesOnItsOwn: a second after the payout's gate opens,
// undecided, the server's sweep escalates it with no client request: a
// CFO who could not decide it (403, not in their inbox) finds it in
// their inbox and decides it (200, paid once); the interrupt's ballot
// names the CFOs; the webhook is told once (approval.escalated), and no
// run was made for it.
func TestApprovalEscalatesOnItsOwn(t *testing.T) {
	rcv := newReceiver(t)
	e := newEnv(t, withEscalating(t), hooksTo(rcv.url()), func(c *server.Config) { c.Webhooks.Hooks[0].Events = []string{server.EventApprovalEscalated} })
	as := func(name string) { e.key = "sk-" + name }
	as("bob")
	e.call("POST", "/threads", map[string]any{"thread_id": "p1"}, 200)
	paused := e.call("POST", "/threads/p1/runs/wait", map[string]any{"assistant_id": "payout", "input": map[string]any{"amount": 5}}, 200)
	ids := inbox(e)
	if len(ids) != 1 || paused["__interrupt__"] == nil {
		t.Fatalf("bob's inbox %v after %v", ids, paused)
	}
	id := ids[0]
	as("alice")
	approve := map[string]any{"assistant_id": "payout", "command": map[string]any{"resume": map[string]any{"approved": true}}}
	if slices.Contains(inbox(e), id) {
		t.Fatal("the approval is in a CFO's inbox before it escalated")
	}
	e.raw("POST", "/threads/p1/runs/wait", approve, 403)
	awaitInbox(e, id)
	st := e.call("GET", "/threads/p1/state", nil, 200)
	if b := ballotOf(map[string]any{"interrupt": st["interrupts"]}); b == nil {
		t.Errorf("no ballot in the thread's interrupt: %v", st)
	} else if roles := b["reviewers"].(map[string]any)["roles"]; len(roles.([]any)) != 2 {
		t.Errorf("the interrupt's reviewers after the escalation: %v", b)
	}
	if runs := e.list("GET", "/threads/p1/runs", nil); len(runs) != 1 {
		t.Errorf("%d runs of the thread, want the paused one alone: the escalation is no run", len(runs))
	}
	out := e.call("POST", "/threads/p1/runs/wait", approve, 200)
	if out["__interrupt__"] != nil || len(out["records"].([]any)) != 1 {
		t.Fatalf("alice's approval: %v, want the payout made once", out)
	}
	rcv.waitFor(1, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // three sweeps: another escalation would have come
	got := rcv.events()[server.EventApprovalEscalated]
	if len(got) != 1 {
		t.Fatalf("approval.escalated: %v, want one", got)
	}
	if d := got[0]["data"].(map[string]any); d["approval_id"] != id || d["thread_id"] != "p1" || d["rule"] != "payments:payout" ||
		len(d["reviewers"].([]any)) != 2 {
		t.Errorf("approval.escalated says %v", d)
	}
}

// TestApprovalEscalatesOnceAcrossReplicas: two servers share a store
// (SQLite file, PostgreSQL schema), both sweeping every 100 ms; each
// approval escalates once — one escalated ledger record, one
// notification.
func TestApprovalEscalatesOnceAcrossReplicas(t *testing.T) {
	for _, sh := range sharedStores {
		t.Run(sh.name, func(t *testing.T) {
			rcv := newReceiver(t)
			open := sh.open(t)
			shared := open()
			a := newEnv(t, withEscalating(t), withStore(shared), hooksTo(rcv.url()))
			newEnv(t, withEscalating(t), withStore(open()), hooksTo(rcv.url())) // b: sweeps the same store
			a.key = "sk-bob"
			ids := map[string]bool{}
			for _, thread := range []string{"p1", "p2", "p3"} {
				a.call("POST", "/threads", map[string]any{"thread_id": thread}, 200)
				a.call("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "payout", "input": map[string]any{"amount": 5}}, 200)
			}
			for _, id := range inbox(a) {
				ids[id] = true
			}
			a.key = "sk-alice"
			for id := range ids {
				awaitInbox(a, id)
			}
			time.Sleep(500 * time.Millisecond) // five sweeps of each: a second escalation would have come
			recs, err := shared.(store.AuditStore).Audit(context.Background(), store.AuditQuery{Tenant: "acme"})
			if err != nil {
				t.Fatal(err)
			}
			escalated := map[string]int{}
			for _, r := range recs {
				if en, _ := r.Entry(); en.Event == store.AuditEscalated {
					escalated[en.Thread]++
				}
			}
			if len(escalated) != 3 {
				t.Errorf("escalated ledger records by thread %v, want one for each of 3 threads", escalated)
			}
			for th, n := range escalated {
				if n != 1 {
					t.Errorf("thread %s escalated %d times", th, n)
				}
			}
			rcv.waitFor(6, 10*time.Second) // requested and escalated, each thrice
			notified := map[any]int{}
			for _, m := range rcv.events()[server.EventApprovalEscalated] {
				notified[m["data"].(map[string]any)["approval_id"]]++
			}
			if len(notified) != 3 {
				t.Errorf("approval.escalated by approval %v, want one for each of 3", notified)
			}
			for id, n := range notified {
				if n != 1 {
					t.Errorf("approval %s: %d notifications", id, n)
				}
			}
		})
	}
}

// TestNestedApprovalEscalatesAndExpires: the gate of a subgraph's payout
// (a child thread's approval) is swept as a thread's own is: half a
// second after it opens it escalates — a CFO finds it in their inbox, and
// the root thread's interrupt names the CFOs — and two seconds after, it
// expires in a run of the root thread: the payout is rejected, never
// paid, the approval expired, the thread done.
func TestNestedApprovalEscalatesAndExpires(t *testing.T) {
	g := payoutAgent(t, "../cmd/runner/testdata/nested_payout.yaml")
	e := newEnv(t, withEscalating(t), func(c *server.Config) { c.Graphs["payout"] = g })
	e.key = "sk-bob"
	e.call("POST", "/threads", map[string]any{"thread_id": "n1"}, 200)
	paused := e.call("POST", "/threads/n1/runs/wait", map[string]any{"assistant_id": "payout", "input": map[string]any{"amount": 5}}, 200)
	ids := inbox(e)
	if len(ids) != 1 || paused["__interrupt__"] == nil {
		t.Fatalf("bob's inbox %v after %v", ids, paused)
	}
	e.key = "sk-alice"
	awaitInbox(e, ids[0])
	st := e.call("GET", "/threads/n1/state", nil, 200)
	if b := ballotOf(map[string]any{"interrupt": st["interrupts"]}); b == nil || len(b["reviewers"].(map[string]any)["roles"].([]any)) != 2 {
		t.Errorf("the root thread's interrupt after the escalation: %v", st["interrupts"])
	}
	awaitExpired(e, "n1", ids[0])
	st = e.call("GET", "/threads/n1/state", nil, 200)
	recs, _ := st["values"].(map[string]any)["records"].([]any)
	if n, _ := st["next"].([]any); len(n) != 0 || len(recs) != 1 || recs[0].(map[string]any)["status"] != "DENIED" {
		t.Errorf("thread after the expiry: next %v, records %v", st["next"], recs)
	}
}
