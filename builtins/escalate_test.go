package builtins_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// escalatingPayout compiles the payout agent of the CLI's testdata whose
// gate, decided by ops leads, escalates to the CFOs after a second.
func escalatingPayout(t *testing.T) *runner.Graph {
	t.Helper()
	docs, diags := dsl.Load("../cmd/runner/testdata/escalating.yaml")
	c, proj := checked(t, docs, diags)
	agent := proj.Agents["payout"]
	g, err := c.Compile(proj, agent.Pipeline, dsl.CompileOptions{Tool: builtins.Tool, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestEscalationOnTheVirtualClock: a gate whose rule escalates after a
// second does not escalate before; once due, Escalate widens its
// reviewers with no run — the journal (a CFO may then decide, and could
// not before), the interrupt, the approval record and one escalated
// ledger record, in one checkpoint — and a second Escalate does nothing.
func TestEscalationOnTheVirtualClock(t *testing.T) {
	ctx := context.Background()
	g := escalatingPayout(t)
	clk := &fixedClock{at: time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)}
	st := store.NewMemory()
	defer st.Close()
	e := &runner.Engine{Store: st, Clock: clk}
	bob := access.Principal{Name: "bob", Roles: []string{"ops-lead"}}
	alice := access.Principal{Name: "alice", Roles: []string{"cfo"}}
	res, err := e.RunWith(ctx, g, "p1", map[string]any{"amount": 5}, runner.RunOptions{As: bob})
	if err != nil || res.Status != runner.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
	as := st.(store.ApprovalStore)
	pending := func() *store.Approval {
		t.Helper()
		list, err := as.Approvals(ctx, store.ApprovalQuery{Status: store.ApprovalPending})
		if err != nil || len(list) != 1 {
			t.Fatalf("pending approvals: %v, %v", list, err)
		}
		return list[0]
	}
	a := pending()
	if !a.EscalateAt.Equal(clk.at.Add(time.Second)) {
		t.Errorf("escalate_at %s, want a second after the gate opened (%s)", a.EscalateAt, clk.at)
	}
	approve := func(p access.Principal) error {
		_, err := e.Resume(ctx, g, "p1", runner.ResumeOptions{Value: map[string]any{"approved": true}, RunOptions: runner.RunOptions{As: p}})
		return err
	}
	if err := approve(alice); !errors.Is(err, access.ErrForbidden) {
		t.Fatalf("a CFO decides before the escalation: %v, want access.ErrForbidden", err)
	}
	if esc, err := e.Escalate(ctx, a); esc != nil || err != nil {
		t.Fatalf("Escalate before it is due: %+v, %v", esc, err)
	}

	clk.at = clk.at.Add(2 * time.Second)
	esc, err := e.Escalate(ctx, a)
	if err != nil || esc == nil || !slices.Equal(esc.Calls, []string{callOf(t, st)}) {
		t.Fatalf("Escalate when due: %+v, %v", esc, err)
	}
	if again, err := e.Escalate(ctx, pending()); again != nil || err != nil {
		t.Fatalf("a second Escalate: %+v, %v", again, err)
	}
	a = pending()
	if !slices.Equal(a.Reviewers, []string{"role:ops-lead", "role:cfo"}) || !a.EscalateAt.IsZero() {
		t.Errorf("the approval after the escalation: reviewers %v, escalate_at %s", a.Reviewers, a.EscalateAt)
	}
	cps, _ := st.Load(ctx, "p1", 0)
	var intr runner.Interrupt
	_ = json.Unmarshal(cps[len(cps)-1].Interrupt, &intr)
	ballot, _ := json.Marshal(intr.Payload["ballot"])
	done, _ := intr.Payload["escalation"].(map[string]any)
	if string(ballot) != `{"requester":"bob","reviewers":{"roles":["ops-lead","cfo"]}}` || done["done"] != "2026-01-02T09:00:02Z" {
		t.Errorf("the interrupt after the escalation: ballot %s, payload %v", ballot, intr.Payload)
	}
	recs, _ := st.(store.AuditStore).Audit(ctx, store.AuditQuery{})
	escalated := 0
	for _, r := range recs {
		if en, _ := r.Entry(); en.Event == store.AuditEscalated {
			escalated++
		}
	}
	if escalated != 1 {
		t.Errorf("%d escalated records in the ledger, want 1", escalated)
	}

	if err := approve(alice); err != nil {
		t.Fatalf("a CFO decides after the escalation: %v", err)
	}
	ts, err := e.State(ctx, g, "p1", 0)
	if err != nil || ts.Status != runner.StatusCompleted || len(ts.State["records"].([]any)) != 1 {
		t.Fatalf("after the CFO's approval: %v %+v", err, ts)
	}
}

// callOf is the id of the call the gate of thread p1 holds.
func callOf(t *testing.T, st store.Store) string {
	t.Helper()
	cps, err := st.Load(context.Background(), "p1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var intr runner.Interrupt
	_ = json.Unmarshal(cps[len(cps)-1].Interrupt, &intr)
	calls, _ := intr.Payload["calls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("the gate holds %v", calls)
	}
	return calls[0].(string)
}
