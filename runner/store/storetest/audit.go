package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// RunAuditStore runs the audit ledger suite on fresh stores from open,
// each a store.Store and a store.AuditStore, closed by open's caller
// (use t.Cleanup).
func RunAuditStore(t *testing.T, open func(t *testing.T) store.Store) {
	cases := []struct {
		name string
		run  func(t *testing.T, s store.Store, a store.AuditStore)
	}{
		{"records are appended with their checkpoint", testAuditPut},
		{"a refused put appends nothing", testAuditRefused},
		{"queries filter by tenant and time, and page", testAuditQuery},
		{"concurrent appends keep one chain a tenant", testAuditConcurrent},
		{"delete and prune leave the ledger", testAuditKept},
		{"an append of two tenants' records is refused", testAuditMixed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			tc.run(t, s, as[store.AuditStore](t, s))
		})
	}
}

// Audit returns the record of a decision on call of thread, at second sec
// (past 1700000000), of tenant.
func Audit(tenant, thread, call string, sec int64) *store.AuditRecord {
	return store.NewAudit(store.AuditEntry{Time: time.Unix(1_700_000_000+sec, 7), Event: store.AuditDecided, Tenant: tenant,
		Thread: thread, Rule: "rule:gate", Defs: "defs", Call: call, Tool: "pay", Args: "digest", Decision: "approve",
		Principal: "alice", Quorum: "1/1"})
}

// Verify reads every record of the ledger and checks its chains; it
// returns how many it read.
func Verify(t testing.TB, a store.AuditStore) int {
	t.Helper()
	recs, err := a.Audit(context.Background(), store.AuditQuery{AllTenants: true})
	if err != nil {
		t.Fatalf("Audit: %v", err)
	}
	var v store.AuditVerifier
	for _, r := range recs {
		if err := v.Check(r); err != nil {
			t.Fatalf("the ledger does not verify: %v", err)
		}
	}
	return len(recs)
}

// testAuditPut: the records of a Put are appended, numbered and chained
// in order, and read back whole.
func testAuditPut(t *testing.T, s store.Store, a store.AuditStore) {
	ctx := context.Background()
	want := []*store.AuditRecord{Audit("acme", "/acme/t", "c1", 1), Audit("acme", "/acme/t", "c2", 1), Audit("acme", "/acme/t", "c1", 2)}
	cp := Checkpoint("/acme/t", 1, true)
	cp.Tenant, cp.Audit = "acme", want[:2]
	if err := s.Put(ctx, cp); err != nil {
		t.Fatalf("Put: %v", err)
	}
	cp = Checkpoint("/acme/t", 2, false)
	cp.Tenant, cp.Audit = "acme", want[2:]
	if err := s.Put(ctx, cp); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := a.Audit(ctx, store.AuditQuery{Tenant: "acme"})
	if err != nil || len(got) != 3 {
		t.Fatalf("Audit = %v, %v; want 3 records", got, err)
	}
	prev := ""
	for i, r := range got {
		w := *want[i]
		w.Chain(int64(i), prev)
		if !reflect.DeepEqual(r, &w) {
			t.Errorf("record %d = %+v\nwant %+v", i+1, r, &w)
		}
		prev = r.Hash
	}
	if e, err := got[1].Entry(); err != nil || e.Call != "c2" || e.Principal != "alice" {
		t.Errorf("record 2's entry = %+v, %v", e, err)
	}
	if Verify(t, a) != 3 {
		t.Errorf("Verify read other than 3 records")
	}
}

// testAuditRefused: a Put refused (not the next id) appends nothing.
func testAuditRefused(t *testing.T, s store.Store, a store.AuditStore) {
	ctx := context.Background()
	if err := s.Put(ctx, Checkpoint("t", 1, true)); err != nil {
		t.Fatalf("Put: %v", err)
	}
	cp := Checkpoint("t", 1, true)
	cp.Audit = []*store.AuditRecord{Audit("", "t", "lost", 1)}
	if err := s.Put(ctx, cp); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Put of a taken id = %v, want store.ErrConflict", err)
	}
	if got, err := a.Audit(ctx, store.AuditQuery{AllTenants: true}); err != nil || len(got) != 0 {
		t.Errorf("after a refused Put: %v, %v; want no record", got, err)
	}
}

// testAuditQuery: a tenant's records, every tenant's in order, since a
// time, after a cursor, limited.
func testAuditQuery(t *testing.T, s store.Store, a store.AuditStore) {
	ctx := context.Background()
	for _, r := range []*store.AuditRecord{Audit("acme", "t", "a", 1), Audit("globex", "t", "b", 2), Audit("acme", "t", "c", 3),
		Audit("acme", "t", "d", 4), Audit("", "t", "e", 5)} {
		if err := a.AppendAudit(ctx, r); err != nil {
			t.Fatalf("AppendAudit: %v", err)
		}
	}
	for _, tc := range []struct {
		name string
		q    store.AuditQuery
		want string
	}{
		{"a tenant's", store.AuditQuery{Tenant: "acme"}, "acme/1 acme/2 acme/3"},
		{"the default tenant's", store.AuditQuery{}, "/1"},
		{"every tenant's", store.AuditQuery{AllTenants: true}, "/1 acme/1 acme/2 acme/3 globex/1"},
		{"since", store.AuditQuery{Tenant: "acme", Since: time.Unix(1_700_000_003, 7)}, "acme/2 acme/3"},
		{"after a cursor", store.AuditQuery{AllTenants: true, After: &store.AuditCursor{Tenant: "acme", Seq: 2}}, "acme/3 globex/1"},
		{"limited", store.AuditQuery{AllTenants: true, Limit: 2}, "/1 acme/1"},
	} {
		got, err := a.Audit(ctx, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var names []string
		for _, r := range got {
			names = append(names, fmt.Sprintf("%s/%d", r.Tenant, r.Seq))
		}
		if s := fmt.Sprint(names); s != "["+tc.want+"]" {
			t.Errorf("%s: %s, want [%s]", tc.name, s, tc.want)
		}
	}
	Verify(t, a)
}

// testAuditConcurrent: writers appending at once, with checkpoints and
// alone, to two tenants, leave each tenant one unbroken chain holding
// every record.
func testAuditConcurrent(t *testing.T, s store.Store, a store.AuditStore) {
	ctx := context.Background()
	const writers, each = 6, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			tenant := []string{"acme", "globex"}[w%2]
			thread := fmt.Sprintf("/%s/t%d", tenant, w)
			for i := range each {
				r := Audit(tenant, thread, fmt.Sprint(i), int64(i))
				var err error
				if i%2 == 0 {
					cp := Checkpoint(thread, int64(i/2+1), i == 0)
					cp.Tenant, cp.Audit = tenant, []*store.AuditRecord{r}
					err = s.Put(ctx, cp)
				} else {
					err = a.AppendAudit(ctx, r)
				}
				if err != nil {
					t.Errorf("append: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if n := Verify(t, a); n != writers*each {
		t.Errorf("the ledger holds %d records, want %d", n, writers*each)
	}
}

// testAuditKept: deleting a thread and pruning its checkpoints leave its
// records.
func testAuditKept(t *testing.T, s store.Store, a store.AuditStore) {
	ctx := context.Background()
	for id := int64(1); id <= 3; id++ {
		cp := Checkpoint("t", id, true)
		cp.Audit = []*store.AuditRecord{Audit("", "t", fmt.Sprint(id), id)}
		if err := s.Put(ctx, cp); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	if _, err := s.Prune(ctx, "t", 3); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if err := s.Delete(ctx, "t"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n := Verify(t, a); n != 3 {
		t.Errorf("after prune and delete the ledger holds %d records, want 3", n)
	}
}

// testAuditMixed: records of two tenants in one append are refused, and
// nothing is appended.
func testAuditMixed(t *testing.T, _ store.Store, a store.AuditStore) {
	if err := a.AppendAudit(context.Background(), Audit("acme", "t", "a", 1), Audit("globex", "t", "b", 1)); err == nil {
		t.Errorf("an append of two tenants' records succeeded")
	}
	if n := Verify(t, a); n != 0 {
		t.Errorf("the ledger holds %d records, want none", n)
	}
}
