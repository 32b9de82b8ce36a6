package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/server"
)

// payoutAgent compiles the payout agent of the definitions in file.
func payoutAgent(t testing.TB, file string) *runner.Graph {
	t.Helper()
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, diags := dsl.Load(file)
	proj, more := checker.Check(docs)
	if all := append(diags, more...); all.HasErrors(false) {
		t.Fatalf("definitions: %v", all)
	}
	agent := proj.Agents["payout"]
	g, err := checker.Compile(proj, agent.Pipeline, dsl.CompileOptions{Tool: builtins.Tool, Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// withPayout serves the payout agent of the CLI's testdata (a gate with
// reviewers by amount, a quorum of two, the requester kept apart) and
// keys for principals of tenant acme — alice (cfo), bob (ops-lead), carol and
// dave (cfo) — and eve (cfo) of tenant other.
func withPayout(t *testing.T) func(*server.Config) {
	g := payoutAgent(t, "../cmd/runner/testdata/payout.yaml")
	return func(c *server.Config) {
		c.Graphs["payout"] = g
		for _, p := range []access.Principal{{Tenant: "acme", Name: "alice", Roles: []string{"cfo"}}, {Tenant: "acme", Name: "bob", Roles: []string{"ops-lead"}},
			{Tenant: "acme", Name: "carol", Roles: []string{"cfo"}}, {Tenant: "acme", Name: "dave", Roles: []string{"cfo"}},
			{Tenant: "other", Name: "eve", Roles: []string{"cfo"}}} {
			c.Keys[access.HashKey("sk-"+p.Name)] = p
		}
	}
}

// TestReviewersOverHTTP decides the payout gate through command.resume,
// each request as the principal of its key: a principal without the
// role, the requester, a second approval by the same principal and a
// principal of another tenant are refused (403; 404 for the other
// tenant, to whom the thread does not exist) with the thread's history
// unchanged. The quorum's progress is in the interrupt, naming the
// principals, never the reviewer the body claims; two distinct cfos run
// the payout once.
func TestReviewersOverHTTP(t *testing.T) {
	e := newEnv(t, withPayout(t))
	as := func(name string) { e.key = "sk-" + name }
	history := func() string {
		as("alice")
		b, _ := json.Marshal(e.list("POST", "/threads/p1/history", map[string]any{"limit": 100}))
		return string(b)
	}
	as("alice")
	e.call("POST", "/threads", map[string]any{"thread_id": "p1"}, 200)
	paused := e.call("POST", "/threads/p1/runs/wait", map[string]any{"assistant_id": "payout", "input": map[string]any{"amount": 20000}}, 200)
	if paused["__interrupt__"] == nil {
		t.Fatalf("no gate: %v", paused)
	}
	approve := map[string]any{"assistant_id": "payout", "command": map[string]any{"resume": map[string]any{"approved": true, "reviewer": "mallory"}}}
	refuse := func(who string, status int, why string) {
		t.Helper()
		before := history()
		as(who)
		body := string(e.raw("POST", "/threads/p1/runs/wait", approve, status))
		if !strings.Contains(body, why) {
			t.Errorf("%s: %s, want it to say %q", who, body, why)
		}
		if after := history(); after != before {
			t.Errorf("%s's refused decision changed the thread", who)
		}
	}
	refuse("bob", 403, "bob (roles ops-lead) is not among its reviewers (roles cfo)")
	refuse("alice", 403, "alice started the run, and the rule asks for a reviewer other than the requester")
	as("carol")
	out := e.call("POST", "/threads/p1/runs/wait", approve, 200)
	if got := fmt.Sprint(ballotOf(out)["approved_by"]); got != "[carol]" {
		t.Fatalf("after carol's approval the ballot's approved_by is %s, want [carol]: %v", got, out)
	}
	refuse("carol", 403, "carol has decided it already; it needs 2 distinct principals")
	refuse("eve", 404, `no thread \"p1\"`)
	as("dave")
	out = e.call("POST", "/threads/p1/runs/wait", approve, 200)
	if out["__interrupt__"] != nil || strings.Count(fmt.Sprint(out["records"]), "paid 20000") != 1 {
		t.Fatalf("dave's approval: %v, want the payout made once", out)
	}
}

// ballotOf is the ballot of a paused run's gate interrupt, in its values
// (__interrupt__) or an execution's answer (interrupt).
func ballotOf(values map[string]any) map[string]any {
	intrs, _ := values["__interrupt__"].([]any)
	if intrs == nil {
		intrs, _ = values["interrupt"].([]any)
	}
	for _, i := range intrs {
		v, _ := i.(map[string]any)["value"].(map[string]any)
		if extra, ok := v["runner"].(map[string]any); ok {
			b, _ := extra["ballot"].(map[string]any)
			return b
		}
	}
	return nil
}

// TestApprovalsAPI: GET /approvals lists the pending approvals the
// caller's principal and roles may decide; GET /approvals/{id} shows one
// to its tenant only; POST /approvals/{id}/decide decides it as the
// caller, through the same checks as command.resume (403, nothing
// changed), and an approval decided is no longer listed nor decidable.
func TestApprovalsAPI(t *testing.T) {
	e := newEnv(t, withPayout(t))
	as := func(name string) { e.key = "sk-" + name }
	as("alice")
	e.call("POST", "/threads", map[string]any{"thread_id": "p2"}, 200)
	e.call("POST", "/threads/p2/runs/wait", map[string]any{"assistant_id": "payout", "input": map[string]any{"amount": 20000}}, 200)
	pending := func(who string) []any {
		as(who)
		list, _ := e.call("GET", "/approvals", nil, 200)["approvals"].([]any)
		return list
	}
	if got := pending("bob"); len(got) != 0 {
		t.Errorf("bob (ops-lead) lists %v, want none: the payout needs a cfo", got)
	}
	list := pending("carol")
	if len(list) != 1 {
		t.Fatalf("carol (cfo) lists %v, want the payout", list)
	}
	a := list[0].(map[string]any)
	id := a["id"].(string)
	if a["thread_id"] != "p2" || a["agent"] != "payout" || a["rule"] != "payments:payout" || a["status"] != "pending" {
		t.Errorf("the approval is %v", a)
	}
	as("eve")
	e.raw("GET", "/approvals/"+id, nil, 404)
	as("bob")
	e.raw("POST", "/approvals/"+id+"/decide", map[string]any{"approved": true}, 403)
	as("carol")
	if out := e.call("POST", "/approvals/"+id+"/decide", map[string]any{"approved": true}, 200); fmt.Sprint(ballotOf(out)["approved_by"]) != "[carol]" {
		t.Fatalf("carol's decision: %v, want the gate paused again with carol's approval", out)
	}
	if got := pending("carol"); len(got) != 1 {
		t.Errorf("after carol's approval she lists %v, want the approval still pending", got)
	}
	as("dave")
	if out := e.call("POST", "/approvals/"+id+"/decide", map[string]any{"approved": true}, 200); out["status"] != "completed" {
		t.Fatalf("dave's decision: %v, want the payout made", out)
	}
	if got := e.call("GET", "/approvals/"+id, nil, 200); got["status"] != "decided" {
		t.Errorf("after the quorum the approval is %v, want decided", got)
	}
	if got := pending("carol"); len(got) != 0 {
		t.Errorf("a decided approval is still listed: %v", got)
	}
	as("carol")
	e.raw("POST", "/approvals/"+id+"/decide", map[string]any{"approved": true}, 409)
}
