package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// RunWebhookStore runs the outbox suite on fresh stores from open, each
// a store.WebhookStore, closed by open's caller (use t.Cleanup).
func RunWebhookStore(t *testing.T, open func(t *testing.T) store.Store) {
	cases := []struct {
		name string
		run  func(t *testing.T, s store.Store, w store.WebhookStore)
	}{
		{"a claim takes due deliveries once until its ttl", testClaim},
		{"settle records an attempt", testSettle},
		{"the log filters by tenant and status, and pages", testDeliveryLog},
		{"concurrent claimers take each delivery once", testConcurrentClaims},
		{"a checkpoint's deliveries are enqueued with it, a refused one's not", testCheckpointDeliveries},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			tc.run(t, s, as[store.WebhookStore](t, s))
		})
	}
}

// outboxEpoch is the time the outbox tests start at.
var outboxEpoch = time.Unix(1_700_000_000, 0).UTC()

// Delivery is a pending delivery id of tenant, made and due at second sec
// past outboxEpoch.
func Delivery(id, tenant string, sec int) *store.Delivery {
	at := outboxEpoch.Add(time.Duration(sec) * time.Second)
	return &store.Delivery{ID: id, Tenant: tenant, Hook: "ops", Event: "run.completed", URL: "http://hooks.example/in",
		Body: json.RawMessage(fmt.Sprintf(`{"id":%q}`, id)), Status: store.DeliveryPending, NextAt: at, CreatedAt: at, UpdatedAt: at}
}

func enqueue(t *testing.T, w store.WebhookStore, ds ...*store.Delivery) {
	t.Helper()
	if err := w.Enqueue(context.Background(), ds...); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
}

func claimIDs(t *testing.T, w store.WebhookStore, at time.Time, limit int) []string {
	t.Helper()
	got, err := w.Claim(context.Background(), at, time.Minute, limit)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	ids := []string{}
	for _, d := range got {
		ids = append(ids, d.ID)
	}
	slices.Sort(ids)
	return ids
}

// testClaim: due deliveries are claimed oldest due first, up to the
// limit (in any order); a claimed one is not claimed again before its ttl, and is after.
func testClaim(t *testing.T, _ store.Store, w store.WebhookStore) {
	enqueue(t, w, Delivery("a", "acme", 1), Delivery("b", "acme", 2), Delivery("c", "", 3), Delivery("later", "acme", 100))
	now := outboxEpoch.Add(10 * time.Second)
	if got := claimIDs(t, w, now, 2); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("first claim = %v, want [a b]", got)
	}
	if got := claimIDs(t, w, now, 10); !reflect.DeepEqual(got, []string{"c"}) {
		t.Errorf("second claim = %v, want [c]", got)
	}
	if got := claimIDs(t, w, now.Add(time.Minute), 10); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("a claim after the ttl = %v, want [a b c] again", got)
	}
}

// testSettle: a delivered delivery is never claimed again, one to retry
// is claimed at its new NextAt, and the log shows the attempt.
func testSettle(t *testing.T, _ store.Store, w store.WebhookStore) {
	ctx := context.Background()
	enqueue(t, w, Delivery("a", "acme", 1), Delivery("b", "acme", 1))
	ds, err := w.Claim(ctx, outboxEpoch.Add(time.Second), time.Minute, 10)
	if err != nil || len(ds) != 2 {
		t.Fatalf("Claim = %v, %v", ds, err)
	}
	slices.SortFunc(ds, func(a, b *store.Delivery) int { return strings.Compare(a.ID, b.ID) })
	at := outboxEpoch.Add(2 * time.Second)
	ds[0].Status, ds[0].Attempts, ds[0].LastStatus, ds[0].UpdatedAt = store.DeliveryDelivered, 1, 204, at
	ds[1].Attempts, ds[1].LastStatus, ds[1].LastError, ds[1].NextAt, ds[1].UpdatedAt = 1, 503, "503 Service Unavailable", at.Add(5*time.Second), at
	for _, d := range ds {
		if err := w.Settle(ctx, d); err != nil {
			t.Fatalf("Settle: %v", err)
		}
	}
	if got := claimIDs(t, w, at.Add(4*time.Second), 10); len(got) != 0 {
		t.Errorf("claimed before its retry: %v", got)
	}
	if got := claimIDs(t, w, at.Add(5*time.Second), 10); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("claim at the retry = %v, want [b]", got)
	}
	log, err := w.Deliveries(ctx, store.DeliveryQuery{Tenant: "acme"})
	if err != nil || len(log) != 2 {
		t.Fatalf("Deliveries = %v, %v", log, err)
	}
	for _, d := range log {
		if d.ID == "a" && (d.Status != store.DeliveryDelivered || d.LastStatus != 204 || !d.UpdatedAt.Equal(at)) ||
			d.ID == "b" && (d.Status != store.DeliveryPending || d.LastError != "503 Service Unavailable" || d.Attempts != 1) {
			t.Errorf("logged %+v", d)
		}
	}
	if err := w.Settle(ctx, Delivery("nope", "", 1)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Settle of an unknown delivery = %v, want store.ErrNotFound", err)
	}
}

// testDeliveryLog: a tenant's deliveries, newest first, by status, paged.
func testDeliveryLog(t *testing.T, _ store.Store, w store.WebhookStore) {
	enqueue(t, w, Delivery("a", "acme", 1), Delivery("b", "acme", 2), Delivery("c", "globex", 3), Delivery("d", "acme", 4))
	d := Delivery("b", "acme", 2)
	d.Status = store.DeliveryFailed
	if err := w.Settle(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		q    store.DeliveryQuery
		want string
	}{
		{"a tenant's", store.DeliveryQuery{Tenant: "acme"}, "[d b a]"},
		{"by status", store.DeliveryQuery{Tenant: "acme", Status: store.DeliveryFailed}, "[b]"},
		{"every tenant's, limited", store.DeliveryQuery{AllTenants: true, Limit: 2}, "[d c]"},
		{"after a cursor", store.DeliveryQuery{Tenant: "acme", After: &store.Cursor{CreatedAt: outboxEpoch.Add(4 * time.Second), ID: "d"}}, "[b a]"},
	} {
		got, err := w.Deliveries(context.Background(), tc.q)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range got {
			ids = append(ids, d.ID)
		}
		if s := fmt.Sprint(ids); s != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, s, tc.want)
		}
	}
}

// testConcurrentClaims: claimers racing over 200 due deliveries take
// each exactly once.
func testConcurrentClaims(t *testing.T, _ store.Store, w store.WebhookStore) {
	var ds []*store.Delivery
	for i := range 200 {
		ds = append(ds, Delivery(fmt.Sprintf("d%03d", i), "acme", i%7))
	}
	enqueue(t, w, ds...)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				got, err := w.Claim(context.Background(), outboxEpoch.Add(time.Hour), time.Hour, 7)
				if err != nil {
					t.Errorf("Claim: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, d := range got {
					seen[d.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s claimed %d times", id, n)
		}
	}
	if len(seen) != 200 {
		t.Errorf("%d deliveries claimed, want 200", len(seen))
	}
}

// testCheckpointDeliveries: the deliveries of a Put are pending in the
// outbox once it is stored; a Put refused (not the next id) adds none.
func testCheckpointDeliveries(t *testing.T, s store.Store, w store.WebhookStore) {
	ctx := context.Background()
	cp := Checkpoint("/acme/t", 1, true)
	cp.Tenant, cp.Deliveries = "acme", []*store.Delivery{Delivery("msg_1", "acme", 1), Delivery("msg_2", "acme", 2)}
	if err := s.Put(ctx, cp); err != nil {
		t.Fatalf("Put: %v", err)
	}
	refused := Checkpoint("/acme/t", 1, true)
	refused.Tenant, refused.Deliveries = "acme", []*store.Delivery{Delivery("msg_lost", "acme", 3)}
	if err := s.Put(ctx, refused); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Put of a taken id = %v, want store.ErrConflict", err)
	}
	got, err := w.Deliveries(ctx, store.DeliveryQuery{Tenant: "acme"})
	if err != nil || len(got) != 2 || got[0].ID != "msg_2" || got[1].ID != "msg_1" || got[0].Status != store.DeliveryPending {
		t.Fatalf("Deliveries = %v, %v; want msg_2 and msg_1, pending", got, err)
	}
	if ids := claimIDs(t, w, outboxEpoch.Add(time.Hour), 10); len(ids) != 2 {
		t.Errorf("claimed %v, want the checkpoint's two", ids)
	}
}
