package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestApprovalsSweep: runner approvals sweep leaves an approval before
// its expiry alone and, once it has passed, resumes its thread without a
// verdict: the payout is rejected by on_expire, never paid, the approval
// expired; a second sweep finds nothing to do.
func TestApprovalsSweep(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "state.db")
	if code, _, errOut := runCLI(t, "exec", "--store", db, "testdata/expiring.yaml", "--tenant", "acme", "--thread", "p1",
		"--input", `{"amount": 500}`); code != 3 {
		t.Fatalf("start: exit %d, want 3: %s", code, errOut)
	}
	approvals := func(args ...string) (int, string, string) {
		return runCLI(t, append([]string{"approvals", "--store", db}, args...)...)
	}
	status := func() string {
		_, out, _ := approvals("list", "--tenant", "acme", "--status", "", "--format", "json")
		var list []map[string]any
		if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
			t.Fatalf("list: %v: %s", err, out)
		}
		return list[0]["status"].(string)
	}
	if code, out, errOut := approvals("sweep", "testdata/expiring.yaml"); code != 0 || out != "" || status() != "pending" {
		t.Fatalf("sweep before the expiry: exit %d, %q %s; approval %s", code, out, errOut, status())
	}
	time.Sleep(1100 * time.Millisecond)
	if code, out, errOut := approvals("sweep", "testdata/expiring.yaml"); code != 0 || !strings.Contains(out, "p1\tpayments:payout\texit 0") {
		t.Fatalf("sweep after the expiry: exit %d, %q %s", code, out, errOut)
	}
	if s := status(); s != "expired" {
		t.Errorf("approval %s after the sweep, want expired", s)
	}
	code, out, _ := runCLI(t, "threads", "show", "--store", db, "/acme/p1")
	if code != 0 || !strings.Contains(out, "DENIED") || strings.Contains(out, "paid 500") {
		t.Errorf("thread after the sweep: exit %d\n%s", code, out)
	}
	if code, out, _ := approvals("sweep", "testdata/expiring.yaml"); code != 0 || out != "" {
		t.Errorf("a second sweep: exit %d, %q", code, out)
	}
}

// TestApprovalsSweepEscalates: runner approvals sweep escalates an
// approval whose escalation is due, once: before it, a CFO neither sees
// nor may decide the payout's approval; after, they see it and decide
// it, and a second sweep finds nothing to do.
func TestApprovalsSweepEscalates(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "state.db")
	if code, _, errOut := runCLI(t, "exec", "--store", db, "testdata/escalating.yaml", "--tenant", "acme", "--thread", "p1",
		"--input", `{"amount": 500}`, "--as", "bob"); code != 3 {
		t.Fatalf("start: exit %d, want 3: %s", code, errOut)
	}
	approvals := func(args ...string) (int, string, string) {
		return runCLI(t, append([]string{"approvals", "--store", db}, args...)...)
	}
	cfo := []string{"--tenant", "acme", "--as", "alice", "--role", "cfo"}
	if code, out, errOut := approvals("sweep"); code != 0 || out != "" {
		t.Fatalf("sweep before the escalation: exit %d, %q %s", code, out, errOut)
	}
	if _, out, _ := approvals(append([]string{"list"}, cfo...)...); strings.Contains(out, "payments:payout") {
		t.Fatalf("a CFO lists the approval before its escalation:\n%s", out)
	}
	approve := append([]string{"exec", "--store", db, "testdata/escalating.yaml", "--resume", "/acme/p1", "--value", `{"approved": true}`}, cfo[2:]...)
	if code, _, errOut := runCLI(t, approve...); code != 2 || !strings.Contains(errOut, "not among its reviewers") {
		t.Fatalf("a CFO decides before the escalation: exit %d, %s", code, errOut)
	}
	time.Sleep(1100 * time.Millisecond)
	if code, out, errOut := approvals("sweep"); code != 0 || !strings.Contains(out, "p1\tpayments:payout\tescalated to role:ops-lead, role:cfo") {
		t.Fatalf("sweep after the escalation is due: exit %d, %q %s", code, out, errOut)
	}
	if code, out, _ := approvals("sweep"); code != 0 || out != "" {
		t.Errorf("a second sweep: exit %d, %q", code, out)
	}
	if _, out, _ := approvals(append([]string{"list"}, cfo...)...); !strings.Contains(out, "payments:payout") {
		t.Fatalf("a CFO does not list the escalated approval:\n%s", out)
	}
	if code, out, errOut := runCLI(t, approve...); code != 0 || !strings.Contains(out, "paid 500") {
		t.Fatalf("a CFO decides after the escalation: exit %d, %s %s", code, out, errOut)
	}
}
