package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
	"github.com/runner-dev/runner/runner/store/storetest"
	"github.com/runner-dev/runner/server"
)

// BenchmarkApprovalsInbox times GET /approvals listing 1,000 pending
// approvals of tenant acme (records of about 1 KB, on SQLite, among 1,000
// of another tenant): server time, the handler called without a network,
// against a first page of 50 of them in the same run. The console's inbox
// needs the 1,000 under 300 ms.
func BenchmarkApprovalsInbox(b *testing.B) {
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	record, _ := json.Marshal(map[string]any{"calls": []any{map[string]any{"id": "call_1", "tool": "create_entity", "rule": "platform:gate",
		"args": map[string]any{"name": "Mitchell Ranch 3H", "note": strings.Repeat("x", 800)}}}})
	for i := range 2000 {
		tenant := []string{"acme", "other"}[i%2]
		cp := storetest.Checkpoint(access.ThreadKey(tenant, fmt.Sprintf("t%05d", i)), 1, true)
		a := storetest.Approval(fmt.Sprintf("a%05d", i), cp.Thread, int64(i), "role:cfo")
		cp.Tenant, a.Tenant, a.Record = tenant, tenant, record
		cp.Approvals = []*store.Approval{a}
		if err := st.Put(context.Background(), cp); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	srv, err := server.New(ctx, server.Config{Store: st, Graphs: map[string]*runner.Graph{},
		Keys: access.Keys{access.HashKey("sk-carol"): {Tenant: "acme", Name: "carol", Roles: []string{"cfo"}}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Shutdown(ctx) })
	list := func(limit int) time.Duration {
		req := httptest.NewRequest("GET", fmt.Sprintf("/approvals?limit=%d", limit), nil)
		req.Header.Set("X-Api-Key", "sk-carol")
		rec := httptest.NewRecorder()
		start := time.Now()
		srv.ServeHTTP(rec, req)
		took := time.Since(start)
		var page struct{ Approvals []any }
		if err := json.Unmarshal(rec.Body.Bytes(), &page); rec.Code != 200 || err != nil || len(page.Approvals) != limit {
			b.Fatalf("GET /approvals?limit=%d: %d, %d approvals, %v", limit, rec.Code, len(page.Approvals), err)
		}
		return took
	}
	var all, first []time.Duration
	for b.Loop() {
		all, first = append(all, list(1000)), append(first, list(50))
	}
	a, f := medianOf(all), medianOf(first)
	b.ReportMetric(float64(a.Microseconds())/1000, "inbox-1000-ms")
	b.ReportMetric(float64(f.Microseconds())/1000, "page-50-ms")
	b.ReportMetric(float64(a)/float64(f), "ratio")
}

// medianOf is the median of ds.
func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
