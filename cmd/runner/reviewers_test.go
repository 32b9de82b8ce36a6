package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecReviewers decides testdata/payout.yaml's gate (reviewers by
// the amount, a quorum of two, the requester kept apart) with exec
// --resume --as: a principal without the role, the requester, a second
// approval by the same principal and a principal of another tenant are
// each refused with exit 2 and the thread's history unchanged; two
// distinct reviewers with the role run the payout once.
func TestExecReviewers(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "state.db")
	exec := func(args ...string) (int, string, string) {
		return runCLI(t, append([]string{"exec", "--store", db, "testdata/payout.yaml"}, args...)...)
	}
	history := func() string {
		_, out, _ := runCLI(t, "threads", "history", "/acme/p1", "--store", db)
		return out
	}
	if code, _, errOut := exec("--tenant", "acme", "--thread", "p1", "--input", `{"amount": 20000}`, "--as", "alice"); code != 3 {
		t.Fatalf("start: exit %d, want 3 (paused): %s", code, errOut)
	}
	approve := []string{"--resume", "/acme/p1", "--value", `{"approved": true, "reviewer": "mallory"}`}
	refuse := func(why string, as ...string) {
		t.Helper()
		before := history()
		code, _, errOut := exec(append(approve, as...)...)
		if code != 2 || !strings.Contains(errOut, "not allowed to decide this approval: "+why) {
			t.Errorf("%v: exit %d, want 2 saying %q: %s", as, code, why, errOut)
		}
		if after := history(); after != before {
			t.Errorf("%v: the refusal changed the thread:\n%s\nwant\n%s", as, after, before)
		}
	}
	refuse("bob (roles ops-lead) is not among its reviewers (roles cfo)", "--as", "bob", "--role", "ops-lead")
	refuse("alice started the run", "--as", "alice", "--role", "cfo")
	if code, out, errOut := exec(append(approve, "--as", "carol", "--role", "cfo", "--output", "json")...); code != 3 ||
		!strings.Contains(out, `"approved_by": [`+"\n"+`              "carol"`) {
		t.Fatalf("carol's approval: exit %d, want 3 (paused, one of two): %s%s", code, out, errOut)
	}
	refuse("carol has decided it already; it needs 2 distinct principals", "--as", "carol", "--role", "cfo")
	before := history()
	if code, _, errOut := runCLI(t, "exec", "--store", db, "testdata/payout.yaml", "--tenant", "other", "--resume", "p1",
		"--value", `{"approved": true}`, "--as", "dave", "--role", "cfo"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("another tenant's dave: exit %d, want 1 (its tenant has no thread p1): %s", code, errOut)
	}
	if after := history(); after != before {
		t.Errorf("another tenant's decision changed the thread:\n%s\nwant\n%s", after, before)
	}
	code, out, errOut := exec(append(approve, "--as", "dave", "--role", "cfo", "--output", "json")...)
	if code != 0 || strings.Count(out, `"output": "paid 20000"`) != 1 {
		t.Fatalf("dave's approval: exit %d, want 0 with the payout once: %s%s", code, out, errOut)
	}
}

// TestApprovalsCommands: runner approvals list shows the pending
// approvals the principal may decide; decide resumes the thread as the
// principal through exec's checks (exit 2 for one who may not decide,
// nothing changed), and show prints the record, decided once the quorum
// approved.
func TestApprovalsCommands(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "state.db")
	if code, _, errOut := runCLI(t, "exec", "--store", db, "testdata/payout.yaml", "--tenant", "acme", "--thread", "p2",
		"--input", `{"amount": 500}`, "--as", "alice"); code != 3 {
		t.Fatalf("start: exit %d, want 3: %s", code, errOut)
	}
	approvals := func(args ...string) (int, string, string) {
		return runCLI(t, append([]string{"approvals", "--store", db, "--tenant", "acme"}, args...)...)
	}
	if _, out, _ := approvals("list", "--as", "carol", "--role", "cfo"); strings.Contains(out, "payments:payout") {
		t.Errorf("a cfo lists an ops-lead's approval:\n%s", out)
	}
	code, out, errOut := approvals("list", "--as", "bob", "--role", "ops-lead", "--format", "json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 1 {
		t.Fatalf("list: exit %d, %v: %s%s", code, err, out, errOut)
	}
	id := list[0]["id"].(string)
	decide := func(as ...string) (int, string) {
		code, _, errOut := approvals(append([]string{"decide", id, "testdata/payout.yaml"}, as...)...)
		return code, errOut
	}
	if code, errOut := decide("--as", "carol", "--role", "cfo"); code != 2 || !strings.Contains(errOut, "carol (roles cfo) is not among its reviewers") {
		t.Errorf("carol: exit %d, want 2: %s", code, errOut)
	}
	if code, errOut := decide("--as", "bob", "--role", "ops-lead"); code != 3 {
		t.Errorf("bob: exit %d, want 3 (one of two): %s", code, errOut)
	}
	if code, errOut := decide("--as", "erin", "--role", "ops-lead"); code != 0 {
		t.Errorf("erin: exit %d, want 0: %s", code, errOut)
	}
	if code, out, _ := approvals("show", id); code != 0 || !strings.Contains(out, `"status": "decided"`) {
		t.Errorf("show: exit %d\n%s", code, out)
	}
	if code, _, _ := approvals("show", id, "--tenant", "other"); code != 1 {
		t.Errorf("another tenant's show: exit %d, want 1 (not found)", code)
	}
}
