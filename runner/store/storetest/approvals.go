package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// RunApprovalStore runs the approvals suite on fresh stores from open,
// each a store.Store and a store.ApprovalStore, closed by open's caller
// (use t.Cleanup).
func RunApprovalStore(t *testing.T, open func(t *testing.T) store.Store) {
	cases := []struct {
		name string
		run  func(t *testing.T, s store.Store, a store.ApprovalStore)
	}{
		{"an approval is written with its checkpoint", testApprovalPut},
		{"a refused put writes no approval", testApprovalRefused},
		{"an upsert keeps when the approval opened", testApprovalUpsert},
		{"queries filter, order and page", testApprovalQuery},
		{"concurrent pages of a changing inbox", testApprovalPaging},
		{"delete removes a thread's approvals, its children's too", testApprovalDelete},
		{"an escalation is claimed once", testApprovalEscalation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			tc.run(t, s, as[store.ApprovalStore](t, s))
		})
	}
}

// Approval returns a pending approval id of tenant acme on thread, opened
// at second sec (past 1700000000) and reviewed by reviewers.
func Approval(id, thread string, sec int64, reviewers ...string) *store.Approval {
	at := time.Unix(1_700_000_000+sec, 7).UTC()
	return &store.Approval{ID: id, Tenant: "acme", Thread: thread, Agent: "agent", Rule: "rule:gate", Status: store.ApprovalPending,
		Reviewers: reviewers, CreatedAt: at, UpdatedAt: at, Record: json.RawMessage(fmt.Sprintf(`{"id":%q}`, id))}
}

// putWith puts checkpoint id of thread carrying approvals.
func putWith(t *testing.T, s store.Store, thread string, id int64, approvals ...*store.Approval) {
	t.Helper()
	cp := Checkpoint(thread, id, id == 1)
	cp.Approvals = approvals
	if err := s.Put(context.Background(), cp); err != nil {
		t.Fatalf("Put(%s/%d): %v", thread, id, err)
	}
}

// testApprovalPut: an approval put with a checkpoint reads back whole;
// the checkpoint's reads carry none; an unknown id is not found.
func testApprovalPut(t *testing.T, s store.Store, as store.ApprovalStore) {
	ctx := context.Background()
	want := Approval("a1", "/acme/t", 1, "role:cfo", "principal:alice")
	want.ExpiresAt = time.Unix(1_800_000_000, 9).UTC()
	want.EscalateAt = time.Unix(1_750_000_000, 3).UTC()
	putWith(t, s, "/acme/t", 1, want)
	got, err := as.Approval(ctx, "a1")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Approval = %+v, %v\nwant %+v", got, err, want)
	}
	cps, err := s.Load(ctx, "/acme/t", 0)
	if err != nil || cps[0].Approvals != nil {
		t.Errorf("Load = %v, %v: want a checkpoint without approvals", cps, err)
	}
	if _, err := as.Approval(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Approval(nope) = %v, want store.ErrNotFound", err)
	}
}

// testApprovalRefused: a Put refused (not the next id) writes nothing of
// its approvals.
func testApprovalRefused(t *testing.T, s store.Store, as store.ApprovalStore) {
	putWith(t, s, "t", 1)
	cp := Checkpoint("t", 1, true)
	cp.Approvals = []*store.Approval{Approval("lost", "t", 1, "*")}
	if err := s.Put(context.Background(), cp); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Put of a taken id = %v, want store.ErrConflict", err)
	}
	if a, err := as.Approval(context.Background(), "lost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused Put's approval: %+v, %v; want none", a, err)
	}
}

// testApprovalUpsert: a later checkpoint's record of an approval replaces
// its status, reviewers, expiry and record, not when it opened.
func testApprovalUpsert(t *testing.T, s store.Store, as store.ApprovalStore) {
	putWith(t, s, "t", 1, Approval("a1", "t", 1, "role:cfo"))
	next := Approval("a1", "t", 50, "role:cfo", "role:ceo")
	next.Status, next.Record, next.UpdatedAt = store.ApprovalDecided, json.RawMessage(`{"decided":true}`), time.Unix(1_700_000_060, 0).UTC()
	putWith(t, s, "t", 2, next)
	got, err := as.Approval(context.Background(), "a1")
	want := *next
	want.CreatedAt = Approval("a1", "t", 1).CreatedAt
	if err != nil || !reflect.DeepEqual(got, &want) {
		t.Errorf("after the upsert: %+v, %v\nwant %+v", got, err, &want)
	}
}

// testApprovalQuery: each filter, both orders, a cursor and a limit.
func testApprovalQuery(t *testing.T, s store.Store, as store.ApprovalStore) {
	all := []*store.Approval{Approval("a", "t1", 1, "role:cfo"), Approval("b", "t2", 2, "*"), Approval("c", "t3", 3, "principal:alice"),
		Approval("d", "t4", 4, "role:ops"), Approval("e", "t5", 5, "role:cfo"), Approval("f", "t6", 6, "role:cfo")}
	all[1].Agent, all[2].Rule, all[3].Status = "other", "rule:other", store.ApprovalDecided
	all[4].Tenant, all[4].Thread = "globex", "/globex/t5"
	all[5].ExpiresAt = time.Unix(1_700_000_100, 0).UTC()
	for i, a := range all {
		putWith(t, s, a.Thread, 1, all[i])
	}
	at := func(sec int64) time.Time { return time.Unix(1_700_000_000+sec, 7).UTC() }
	for _, tc := range []struct {
		name string
		q    store.ApprovalQuery
		want string
	}{
		{"a tenant's, newest first", store.ApprovalQuery{Tenant: "acme"}, "fdcba"},
		{"oldest first", store.ApprovalQuery{Tenant: "acme", Oldest: true}, "abcdf"},
		{"every tenant's", store.ApprovalQuery{AllTenants: true, Oldest: true}, "abcdef"},
		{"pending", store.ApprovalQuery{Tenant: "acme", Status: store.ApprovalPending}, "fcba"},
		{"by agent", store.ApprovalQuery{Tenant: "acme", Agent: "other"}, "b"},
		{"by rule", store.ApprovalQuery{Tenant: "acme", Rule: "rule:other"}, "c"},
		{"by reviewers", store.ApprovalQuery{Tenant: "acme", Reviewers: []string{"*", "role:cfo"}}, "fba"},
		{"by name", store.ApprovalQuery{Tenant: "acme", Reviewers: []string{"principal:alice"}}, "c"},
		{"no keys: none", store.ApprovalQuery{Tenant: "acme", Reviewers: []string{}}, ""},
		{"opened after", store.ApprovalQuery{Tenant: "acme", CreatedAfter: at(3)}, "fd"},
		{"opened before", store.ApprovalQuery{Tenant: "acme", CreatedBefore: at(3)}, "ba"},
		{"expiring before", store.ApprovalQuery{AllTenants: true, ExpiresBefore: time.Unix(1_700_000_101, 0)}, "f"},
		{"expiring before, not yet", store.ApprovalQuery{AllTenants: true, ExpiresBefore: time.Unix(1_700_000_100, 0)}, ""},
		{"a page after a cursor", store.ApprovalQuery{Tenant: "acme", After: store.CursorOf(all[3]), Limit: 2}, "cb"},
		{"oldest, after a cursor", store.ApprovalQuery{Tenant: "acme", Oldest: true, After: store.CursorOf(all[1]), Limit: 2}, "cd"},
	} {
		got, err := as.Approvals(context.Background(), tc.q)
		if ids := approvalIDs(got); err != nil || ids != tc.want {
			t.Errorf("%s: Approvals = %q, %v; want %q", tc.name, ids, err, tc.want)
		}
	}
}

// testApprovalPaging: paging by cursor while approvals are added and
// decided visits each approval pending throughout exactly once.
func testApprovalPaging(t *testing.T, s store.Store, as store.ApprovalStore) {
	ctx := context.Background()
	const n = 40
	for i := range n {
		putWith(t, s, fmt.Sprintf("t%02d", i), 1, Approval(fmt.Sprintf("a%02d", i), fmt.Sprintf("t%02d", i), int64(i), "*"))
	}
	var wg sync.WaitGroup
	wg.Go(func() { // new approvals, and the odd old ones decided
		for i := range n {
			putWith(t, s, fmt.Sprintf("new%02d", i), 1, Approval(fmt.Sprintf("new%02d", i), fmt.Sprintf("new%02d", i), int64(100+i), "*"))
			if i%2 == 1 {
				done := Approval(fmt.Sprintf("a%02d", i), fmt.Sprintf("t%02d", i), int64(i), "*")
				done.Status = store.ApprovalDecided
				putWith(t, s, fmt.Sprintf("t%02d", i), 2, done)
			}
		}
	})
	seen := map[string]int{}
	q := store.ApprovalQuery{Tenant: "acme", Status: store.ApprovalPending, Oldest: true, Limit: 3}
	for {
		page, err := as.Approvals(ctx, q)
		if err != nil {
			t.Fatalf("Approvals: %v", err)
		}
		for _, a := range page {
			seen[a.ID]++
		}
		if len(page) < q.Limit {
			break
		}
		q.After = store.CursorOf(page[len(page)-1])
	}
	wg.Wait()
	for i := 0; i < n; i += 2 {
		if id := fmt.Sprintf("a%02d", i); seen[id] != 1 {
			t.Errorf("approval %s pending throughout was listed %d times", id, seen[id])
		}
	}
	for id, k := range seen {
		if k > 1 {
			t.Errorf("approval %s listed %d times", id, k)
		}
	}
}

// testApprovalDelete: Delete of a thread removes its approvals and its
// child threads'; another thread's stay.
func testApprovalDelete(t *testing.T, s store.Store, as store.ApprovalStore) {
	ctx := context.Background()
	putWith(t, s, "t", 1, Approval("root", "t", 1, "*"))
	child := Checkpoint("t/sub@1", 1, true)
	child.ChildOf, child.Approvals = "t", []*store.Approval{Approval("child", "t/sub@1", 2, "*")}
	if err := s.Put(ctx, child); err != nil {
		t.Fatalf("Put of a child: %v", err)
	}
	putWith(t, s, "tx", 1, Approval("other", "tx", 3, "*"))
	if err := s.Delete(ctx, "t"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	got, err := as.Approvals(ctx, store.ApprovalQuery{Tenant: "acme"})
	if ids := approvalIDs(got); err != nil || ids != "other" {
		t.Errorf("after Delete(t): %q, %v; want other", ids, err)
	}
}

// approvalIDs joins the ids of as, in order.
func approvalIDs(as []*store.Approval) string {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.ID
	}
	return strings.Join(ids, "")
}

// testApprovalEscalation: approvals due to escalate are selected by
// EscalateBefore; of concurrent claims of one escalation exactly one
// wins, and moves it to the claim's end; a claim of another due time, or
// of an approval no longer pending, fails; the checkpoint that escalates
// an approval clears its EscalateAt.
func testApprovalEscalation(t *testing.T, s store.Store, as store.ApprovalStore) {
	ctx := context.Background()
	due := time.Unix(1_700_000_100, 5).UTC()
	a := Approval("a1", "t", 1, "role:ops")
	a.EscalateAt = due
	b := Approval("b1", "u", 2, "role:ops")
	b.EscalateAt, b.Status = due, store.ApprovalDecided
	putWith(t, s, "t", 1, a)
	putWith(t, s, "u", 1, b)
	q := store.ApprovalQuery{AllTenants: true, Status: store.ApprovalPending, EscalateBefore: due.Add(time.Nanosecond)}
	if got, err := as.Approvals(ctx, q); approvalIDs(got) != "a1" || err != nil {
		t.Fatalf("due to escalate: %q, %v; want a1", approvalIDs(got), err)
	}
	if got, _ := as.Approvals(ctx, store.ApprovalQuery{AllTenants: true, EscalateBefore: due}); len(got) != 0 {
		t.Errorf("due before its time: %q", approvalIDs(got))
	}
	until := due.Add(time.Minute)
	var wins sync.WaitGroup
	won := make(chan bool, 8)
	for range 8 {
		wins.Go(func() {
			ok, err := as.ClaimEscalation(ctx, "a1", due, until)
			if err != nil {
				t.Error(err)
			}
			won <- ok
		})
	}
	wins.Wait()
	close(won)
	n := 0
	for ok := range won {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d of 8 concurrent claims won, want 1", n)
	}
	if got, err := as.Approval(ctx, "a1"); err != nil || !got.EscalateAt.Equal(until) {
		t.Errorf("after the claim: %+v, %v; want it due at %s", got, err, until)
	}
	for _, c := range []struct {
		id  string
		due time.Time
	}{{"a1", due}, {"b1", due}, {"nope", due}} {
		if ok, err := as.ClaimEscalation(ctx, c.id, c.due, until); ok || err != nil {
			t.Errorf("ClaimEscalation(%s, %s) = %v, %v; want false", c.id, c.due, ok, err)
		}
	}
	a.EscalateAt = time.Time{} // escalated
	putWith(t, s, "t", 2, a)
	if got, err := as.Approval(ctx, "a1"); err != nil || !got.EscalateAt.IsZero() {
		t.Errorf("after the escalation: %+v, %v; want no EscalateAt", got, err)
	}
	if ok, _ := as.ClaimEscalation(ctx, "a1", until, until.Add(time.Minute)); ok {
		t.Error("an escalated approval was claimed again")
	}
}
