package server_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/storetest"
	"github.com/runner-dev/runner/server"
)

// auditorKey is the API key of ava, an auditor of tenant acme.
const auditorKey = "sk-acme-auditor"

// TestAuditForAuditors: a gate opened and decided over the API appends
// its records to acme's ledger, with the run's id; GET /audit gives
// them, verified, to acme's auditor and to no one else, never another
// tenant's; a row changed by hand fails verify=true with its sequence
// number.
func TestAuditForAuditors(t *testing.T) {
	e := newEnv(t, withShipped(t, map[string]string{"rule_37": rule37Script}), func(c *server.Config) {
		c.Keys[access.HashKey(auditorKey)] = access.Principal{Tenant: "acme", Name: "ava", Roles: []string{access.Auditor}}
	})
	e.call("POST", "/threads", map[string]any{"thread_id": "conv"}, 200)
	e.call("POST", "/threads/conv/runs/wait", map[string]any{"assistant_id": "rule_37",
		"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "Add the Mitchell Ranch 3H well."}}}}, 200)
	e.call("POST", "/threads/conv/runs/wait", map[string]any{"assistant_id": "rule_37",
		"command": map[string]any{"resume": map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}}}, 200)
	runs := e.list("GET", "/threads/conv/runs", nil)
	if err := e.store.(store.AuditStore).AppendAudit(context.Background(), storetest.Audit("other", "/other/t", "c", 1)); err != nil {
		t.Fatal(err)
	}

	e.raw("GET", "/audit", nil, http.StatusForbidden) // acme's key has no auditor role
	e.key = otherKey
	e.raw("GET", "/audit", nil, http.StatusForbidden)
	e.key = auditorKey
	var got []store.AuditEntry
	sc := bufio.NewScanner(bytes.NewReader(e.raw("GET", "/audit?verify=true", nil, http.StatusOK)))
	for sc.Scan() {
		var r store.AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		en, err := r.Entry()
		if err != nil || r.Tenant != "acme" {
			t.Fatalf("record %s: %v", sc.Bytes(), err)
		}
		got = append(got, en)
	}
	if len(got) != 2 || got[0].Event != store.AuditOpened || got[1].Event != store.AuditDecided || got[1].Tool != "create_entity" {
		t.Fatalf("acme's ledger = %+v, want the gate opened and decided on create_entity", got)
	}
	ids := map[string]bool{}
	for _, r := range runs {
		ids[r.(map[string]any)["run_id"].(string)] = true
	}
	if !ids[got[0].Run] || !ids[got[1].Run] || got[0].Run == got[1].Run {
		t.Errorf("the records name runs %q and %q, want the two runs %v", got[0].Run, got[1].Run, ids)
	}
	if lines := bytes.Count(e.raw("GET", "/audit?since=2099-01-01T00:00:00Z", nil, http.StatusOK), []byte("\n")); lines != 0 {
		t.Errorf("since 2099: %d records", lines)
	}
	e.raw("GET", "/audit?since=yesterday", nil, http.StatusUnprocessableEntity)

	db, err := sql.Open("sqlite", e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE audit SET record = CAST(replace(CAST(record AS TEXT), '"approve"', '"reject"') AS BLOB) WHERE tenant = 'acme' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	if p := string(e.raw("GET", "/audit?verify=true", nil, http.StatusConflict)); !strings.Contains(p, "record 2 was changed") {
		t.Errorf("a changed row: %s", p)
	}
}
