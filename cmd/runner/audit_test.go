package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
	"github.com/runner-dev/runner/runner/store/storetest"
)

// ledgerFile is an SQLite store whose ledger holds n decisions of
// tenant acme, appended a hundred at a time, and one of the default
// tenant.
func ledgerFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := st.(store.AuditStore)
	ctx := context.Background()
	for i := 0; i < n; i += 100 {
		recs := make([]*store.AuditRecord, 0, 100)
		for j := i; j < min(i+100, n); j++ {
			recs = append(recs, storetest.Audit("acme", fmt.Sprintf("/acme/t%d", j), "c", int64(j)))
		}
		if err := a.AppendAudit(ctx, recs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.AppendAudit(ctx, storetest.Audit("", "t", "c", 0)); err != nil {
		t.Fatal(err)
	}
	return path
}

// tamper runs an SQL statement on the store's file, as someone editing
// it by hand would.
func tamper(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if res, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%s changed %d rows, want 1", stmt, n)
	}
}

// TestAuditExportVerify: export --verify passes on a ledger of 10,000
// decisions, writing each record; it names the sequence number of a row
// changed by hand, and of one deleted.
func TestAuditExportVerify(t *testing.T) {
	path := ledgerFile(t, 10_000)
	dsn := "sqlite:" + path
	code, out, errOut := runCLI(t, "audit", "export", "--verify", "--store", dsn)
	if lines := strings.Count(out, "\n"); code != 0 || lines != 10_001 || !strings.Contains(errOut, "the ledger verifies: 10001 records") {
		t.Fatalf("export --verify of an untouched ledger: exit %d, %d lines, %s", code, lines, errOut)
	}
	code, out, _ = runCLI(t, "audit", "export", "--verify", "--tenant", "acme", "--since", "2023-11-14T22:15:00Z", "--store", dsn)
	if lines := strings.Count(out, "\n"); code != 0 || lines != 10_000-100 {
		t.Errorf("acme's records since second 100: exit %d, %d lines, want %d", code, lines, 10_000-100)
	}
	tamper(t, path, `UPDATE audit SET record = CAST(replace(CAST(record AS TEXT), '"approve"', '"reject"') AS BLOB) WHERE tenant = 'acme' AND seq = 4321`)
	code, out, errOut = runCLI(t, "audit", "export", "--verify", "--store", dsn)
	if code != 1 || !strings.Contains(errOut, `tenant "acme": record 4321 was changed`) {
		t.Errorf("a changed row: exit %d, %s", code, errOut)
	}
	if lines := strings.Count(out, "\n"); lines != 1+4320 {
		t.Errorf("a changed row: %d lines written before it, want the %d that verify", lines, 1+4320)
	}
	tamper(t, path, `DELETE FROM audit WHERE tenant = 'acme' AND seq = 777`)
	if code, _, errOut := runCLI(t, "audit", "export", "--verify", "--tenant", "acme", "--store", dsn); code != 1 || !strings.Contains(errOut, "record 777 is missing: deleted") {
		t.Errorf("a deleted row: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "audit", "export", "--since", "yesterday", "--store", dsn); code != 2 || !strings.Contains(errOut, "RFC 3339") {
		t.Errorf("a bad --since: exit %d, %s", code, errOut)
	}
}
