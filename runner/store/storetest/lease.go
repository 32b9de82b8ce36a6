package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// leaseCases are the suite's lease tests.
var leaseCases = []struct {
	name string
	run  func(t *testing.T, s store.Store)
}{
	{"acquire leases a thread", testAcquire},
	{"acquire of a leased thread fails, naming the holder", testAcquireConflict},
	{"an expired lease is taken over with a higher token", testLeaseExpiry},
	{"renew extends a lease until it is taken over", testRenew},
	{"release frees the thread at once", testRelease},
	{"a released lease is not renewed", testRenewReleased},
	{"put under a lease taken over is fenced", testFencedPut},
	{"a put that releases its lease frees the thread once stored", testPutRelease},
	{"concurrent acquirers: one wins", testConcurrentAcquire},
	{"delete ends the leases; tokens go on", testDeleteLeases},
}

// shortTTL is the lease time of tests that wait for a lease to expire.
const shortTTL = 100 * time.Millisecond

// acquire acquires thread for owner, failing the test on error.
func acquire(t *testing.T, s store.Store, thread, owner string, ttl time.Duration) store.Lease {
	t.Helper()
	l, err := s.Acquire(context.Background(), thread, owner, ttl)
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", thread, owner, err)
	}
	return l
}

func testAcquire(t *testing.T, s store.Store) {
	before := time.Now()
	l := acquire(t, s, "t", "a", time.Minute)
	if l.Thread != "t" || l.Owner != "a" || l.Token < 1 {
		t.Errorf("Acquire = %+v, want thread t, owner a, token >= 1", l)
	}
	if l.Expires.Before(before.Add(time.Minute-time.Second)) || l.Expires.After(time.Now().Add(time.Minute+time.Second)) {
		t.Errorf("Expires = %v, want about a minute from now", l.Expires)
	}
	for _, bad := range []struct{ thread, owner string }{{"", "a"}, {"u", ""}} {
		if _, err := s.Acquire(context.Background(), bad.thread, bad.owner, time.Minute); err == nil {
			t.Errorf("Acquire(%q, %q) succeeded, want an error", bad.thread, bad.owner)
		}
	}
	if _, err := s.Acquire(context.Background(), "u", "a", 0); err == nil {
		t.Error("Acquire with ttl 0 succeeded, want an error")
	}
}

func testAcquireConflict(t *testing.T, s store.Store) {
	l := acquire(t, s, "t", "owner-a", time.Minute)
	for _, owner := range []string{"owner-b", "owner-a"} {
		_, err := s.Acquire(context.Background(), "t", owner, time.Minute)
		if !errors.Is(err, store.ErrLeased) {
			t.Fatalf("Acquire by %s of a leased thread: err = %v, want store.ErrLeased", owner, err)
		}
		until := l.Expires.UTC().Format("2006-01-02T15:04:05")
		if msg := err.Error(); !strings.Contains(msg, "owner-a") || !strings.Contains(msg, until) {
			t.Errorf("err = %q, want it to name owner-a and the expiry %s", msg, until)
		}
	}
	acquire(t, s, "other", "owner-b", time.Minute) // other threads are free
}

func testLeaseExpiry(t *testing.T, s store.Store) {
	a := acquire(t, s, "t", "a", shortTTL)
	time.Sleep(2 * shortTTL)
	b := acquire(t, s, "t", "b", time.Minute)
	if b.Token <= a.Token || b.Owner != "b" {
		t.Errorf("takeover lease = %+v, want owner b and a token above %d", b, a.Token)
	}
}

func testRenew(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := acquire(t, s, "t", "a", shortTTL)
	r, err := s.Renew(ctx, a, time.Minute)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if r.Token != a.Token || !r.Expires.After(a.Expires) {
		t.Errorf("Renew = %+v, want token %d and a later expiry than %v", r, a.Token, a.Expires)
	}
	time.Sleep(2 * shortTTL)
	if _, err := s.Acquire(ctx, "t", "b", time.Minute); !errors.Is(err, store.ErrLeased) {
		t.Errorf("Acquire of a renewed lease: err = %v, want store.ErrLeased", err)
	}
	r, _ = s.Renew(ctx, r, shortTTL)
	time.Sleep(2 * shortTTL)
	acquire(t, s, "t", "b", time.Minute)
	if _, err := s.Renew(ctx, r, time.Minute); !errors.Is(err, store.ErrLeased) || !strings.Contains(err.Error(), "b") {
		t.Errorf("Renew of a lease taken over: err = %v, want store.ErrLeased naming b", err)
	}
}

func testRelease(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := acquire(t, s, "t", "a", time.Minute)
	if err := s.Release(ctx, a); err != nil {
		t.Fatalf("Release: %v", err)
	}
	b := acquire(t, s, "t", "b", time.Minute)
	if b.Token <= a.Token {
		t.Errorf("token after release = %d, want above %d", b.Token, a.Token)
	}
	if err := s.Release(ctx, a); !errors.Is(err, store.ErrLeased) {
		t.Errorf("Release of a lease taken over: err = %v, want store.ErrLeased", err)
	}
	if _, err := s.Renew(ctx, a, time.Minute); !errors.Is(err, store.ErrLeased) {
		t.Errorf("Renew of a released lease: err = %v, want store.ErrLeased", err)
	}
}

func testRenewReleased(t *testing.T, s store.Store) {
	ctx := context.Background()
	PutAll(t, s, "t", 1)
	for _, end := range []struct {
		name string
		f    func(store.Lease) error
	}{
		{"Release", func(l store.Lease) error { return s.Release(ctx, l) }},
		{"Delete", func(store.Lease) error { return s.Delete(ctx, "t") }},
	} {
		a := acquire(t, s, "t", "a", time.Minute)
		if err := end.f(a); err != nil {
			t.Fatalf("%s: %v", end.name, err)
		}
		_, err := s.Renew(ctx, a, time.Minute)
		if !errors.Is(err, store.ErrLeased) || !strings.Contains(err.Error(), "released") {
			t.Errorf("Renew after %s: err = %v, want store.ErrLeased saying the lease was released", end.name, err)
		}
		b := acquire(t, s, "t", "b", time.Minute) // the Renew did not bring a back
		if err := s.Release(ctx, b); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
}

func testFencedPut(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := acquire(t, s, "t", "a", shortTTL)
	put := func(id, lease int64) error {
		cp := Checkpoint("t", id, false)
		cp.Lease = lease
		return s.Put(ctx, cp)
	}
	if err := put(1, a.Token); err != nil {
		t.Fatalf("Put under the lease: %v", err)
	}
	time.Sleep(2 * shortTTL)
	b := acquire(t, s, "t", "b", time.Minute)
	if err := put(2, a.Token); !errors.Is(err, store.ErrFenced) {
		t.Errorf("Put under a lease taken over: err = %v, want store.ErrFenced", err)
	}
	if err := put(2, b.Token); err != nil {
		t.Fatalf("Put under the new lease: %v", err)
	}
	if err := put(3, b.Token+1); !errors.Is(err, store.ErrFenced) {
		t.Errorf("Put under a token the thread never had: err = %v, want store.ErrFenced", err)
	}
	if err := put(3, 0); err != nil {
		t.Errorf("Put without a lease: %v", err)
	}
	hist, err := s.History(ctx, "t")
	if err != nil || len(hist) != 3 {
		t.Errorf("History = %v, %v; want ids 1..3", IDs(hist), err)
	}
}

func testPutRelease(t *testing.T, s store.Store) {
	ctx := context.Background()
	put := func(id, lease int64) error {
		cp := Checkpoint("t", id, false)
		cp.Lease, cp.Release = lease, true
		return s.Put(ctx, cp)
	}
	a := acquire(t, s, "t", "a", time.Minute)
	PutAll(t, s, "t", 1)
	if err := put(3, a.Token); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Put of a checkpoint not next: err = %v, want store.ErrConflict", err)
	}
	if _, err := s.Acquire(ctx, "t", "b", time.Minute); !errors.Is(err, store.ErrLeased) {
		t.Errorf("Acquire after a releasing Put that was refused: err = %v, want store.ErrLeased (still a's)", err)
	}
	if err := put(2, a.Token); err != nil {
		t.Fatalf("Put that releases: %v", err)
	}
	if _, err := s.Renew(ctx, a, time.Minute); !errors.Is(err, store.ErrLeased) || !strings.Contains(err.Error(), "released") {
		t.Errorf("Renew after a releasing Put: err = %v, want store.ErrLeased saying the lease was released", err)
	}
	b := acquire(t, s, "t", "b", time.Minute)
	if b.Token <= a.Token {
		t.Errorf("token after a releasing Put = %d, want above %d", b.Token, a.Token)
	}
	if err := put(3, a.Token); !errors.Is(err, store.ErrFenced) {
		t.Errorf("releasing Put under a lease taken over: err = %v, want store.ErrFenced", err)
	}
	if _, err := s.Acquire(ctx, "t", "c", time.Minute); !errors.Is(err, store.ErrLeased) {
		t.Errorf("Acquire after a fenced releasing Put: err = %v, want store.ErrLeased (still b's)", err)
	}
	if err := put(3, 0); err == nil {
		t.Error("Put that releases no lease (Lease 0) succeeded, want an error")
	}
	hist, err := s.History(ctx, "t")
	if err != nil || len(hist) != 2 {
		t.Fatalf("History = %v, %v; want ids 1..2", IDs(hist), err)
	}
	if last := hist[1]; last.Lease != 0 || last.Release {
		t.Errorf("stored checkpoint has Lease %d, Release %v; want neither stored", last.Lease, last.Release)
	}
}

func testConcurrentAcquire(t *testing.T, s store.Store) {
	const acquirers = 8
	errs := make([]error, acquirers)
	var wg sync.WaitGroup
	for i := range acquirers {
		wg.Go(func() {
			_, errs[i] = s.Acquire(context.Background(), "t", fmt.Sprintf("owner%d", i), time.Minute)
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrLeased):
			t.Errorf("acquirer %d: err = %v, want nil or store.ErrLeased", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d acquirers won the lease, want exactly 1", won)
	}
}

func testDeleteLeases(t *testing.T, s store.Store) {
	ctx := context.Background()
	PutAll(t, s, "t", 1)
	child := Checkpoint("t/child", 1, false)
	child.ChildOf = "t"
	if err := s.Put(ctx, child); err != nil {
		t.Fatal(err)
	}
	a := acquire(t, s, "t", "a", time.Minute)
	acquire(t, s, "t/child", "a", time.Minute)
	if err := s.Delete(ctx, "t"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	for _, th := range []string{"t", "t/child"} {
		b, err := s.Acquire(ctx, th, "b", time.Minute)
		if err != nil || b.Token <= a.Token {
			t.Errorf("Acquire(%s) after Delete = %+v, %v; want a token above %d", th, b, err, a.Token)
		}
	}
	if err := s.Release(ctx, a); !errors.Is(err, store.ErrLeased) {
		t.Errorf("Release of a lease of a deleted thread: err = %v, want store.ErrLeased", err)
	}
}
