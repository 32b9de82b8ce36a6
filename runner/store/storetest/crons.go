package storetest

import (
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// RunCronStore runs the cron store's suite on fresh stores from open.
func RunCronStore(t *testing.T, open func(t *testing.T) store.CronStore) {
	cases := []struct {
		name string
		run  func(t *testing.T, s store.CronStore)
	}{
		{"put, get, replace and list a tenant's crons", testCronRoundTrip},
		{"delete removes a cron; unknown ones are not found", testCronDelete},
		{"due crons: enabled, with a tick at or before now, earliest first", testCronDue},
		{"of concurrent claims of one tick, one wins", testCronClaim},
		{"invalid crons are refused", testCronInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
	}
}

// epoch is the time the suite's crons are created at.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// cron is a cron of tenant acme whose next tick is minutes after epoch.
func cron(id string, minutes int) *store.Cron {
	return &store.Cron{ID: id, Tenant: "acme", Assistant: "agent", Schedule: "* * * * *", Timezone: "Europe/Paris",
		Payload: []byte(`{"input":{"n":1}}`), Metadata: []byte(`{"team":"ops"}`), OnRunCompleted: "keep",
		Enabled: true, UserID: "ann", EndTime: epoch.Add(time.Hour),
		NextRun: epoch.Add(time.Duration(minutes) * time.Minute), CreatedAt: epoch, UpdatedAt: epoch}
}

func mustPutCron(t *testing.T, s store.CronStore, c *store.Cron) {
	t.Helper()
	if err := s.PutCron(ctx, c); err != nil {
		t.Fatalf("put cron %s: %v", c.ID, err)
	}
}

func testCronRoundTrip(t *testing.T, s store.CronStore) {
	want := cron("c1", 1)
	mustPutCron(t, s, want)
	got, err := s.Cron(ctx, "acme", "c1")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Cron = %+v, %v; want %+v", got, err, want)
	}
	if _, err := s.Cron(ctx, "other", "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's read of c1: %v, want ErrNotFound", err)
	}
	again := cron("c1", 5)
	again.Schedule, again.Enabled, again.Payload = "0 * * * *", false, nil
	again.CreatedAt, again.UpdatedAt = epoch.Add(time.Minute), epoch.Add(time.Minute)
	mustPutCron(t, s, again)
	got, _ = s.Cron(ctx, "acme", "c1")
	if got.Schedule != "0 * * * *" || got.Enabled || got.Payload != nil || !got.NextRun.Equal(again.NextRun) ||
		!got.CreatedAt.Equal(epoch) || !got.UpdatedAt.Equal(again.UpdatedAt) {
		t.Errorf("replaced = %+v; want the new fields, created at %v", got, epoch)
	}
	second := cron("c0", 1)
	second.CreatedAt = epoch.Add(time.Second)
	mustPutCron(t, s, second)
	other := cron("c2", 1)
	other.Tenant = "other"
	mustPutCron(t, s, other)
	list, err := s.Crons(ctx, "acme")
	if err != nil || len(list) != 2 || list[0].ID != "c1" || list[1].ID != "c0" {
		t.Errorf("Crons = %+v, %v; want c1 then c0 (oldest first), not other's c2", list, err)
	}
}

func testCronDelete(t *testing.T, s store.CronStore) {
	mustPutCron(t, s, cron("c1", 1))
	if err := s.DeleteCron(ctx, "other", "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant's delete: %v, want ErrNotFound", err)
	}
	if err := s.DeleteCron(ctx, "acme", "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cron(ctx, "acme", "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("read after delete: %v, want ErrNotFound", err)
	}
	if err := s.DeleteCron(ctx, "acme", "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
}

func testCronDue(t *testing.T, s store.CronStore) {
	mustPutCron(t, s, cron("later", 10))
	mustPutCron(t, s, cron("second", 2))
	first := cron("first", 1)
	first.Tenant = "other"
	mustPutCron(t, s, first)
	off := cron("off", 1)
	off.Enabled = false
	mustPutCron(t, s, off)
	ended := cron("ended", 0)
	ended.NextRun = time.Time{}
	mustPutCron(t, s, ended)
	due, err := s.DueCrons(ctx, epoch.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range due {
		ids = append(ids, c.ID)
	}
	if !reflect.DeepEqual(ids, []string{"first", "second"}) {
		t.Errorf("due at +2m = %v, want [first second]", ids)
	}
}

func testCronClaim(t *testing.T, s store.CronStore) {
	c := cron("c1", 1)
	mustPutCron(t, s, c)
	tick, next := c.NextRun, c.NextRun.Add(time.Minute)
	var won atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ok, err := s.ClaimTick(ctx, "acme", "c1", tick, next)
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d of 8 claims of one tick won, want 1", won.Load())
	}
	if got, _ := s.Cron(ctx, "acme", "c1"); !got.NextRun.Equal(next) {
		t.Errorf("next run after the claim = %v, want %v", got.NextRun, next)
	}
	if ok, err := s.ClaimTick(ctx, "acme", "c1", tick, next.Add(time.Minute)); ok || err != nil {
		t.Errorf("a claim of the tick already claimed = %v, %v; want false", ok, err)
	}
	if ok, err := s.ClaimTick(ctx, "acme", "c1", next, time.Time{}); !ok || err != nil {
		t.Errorf("a claim of the last tick = %v, %v; want true", ok, err)
	}
	if due, _ := s.DueCrons(ctx, next.Add(time.Hour)); len(due) != 0 {
		t.Errorf("a cron with no next tick is due: %+v", due)
	}
}

func testCronInvalid(t *testing.T, s store.CronStore) {
	for name, c := range map[string]*store.Cron{
		"no id":        {Assistant: "a", Schedule: "* * * * *"},
		"no assistant": {ID: "c", Schedule: "* * * * *"},
		"no schedule":  {ID: "c", Assistant: "a"},
		"payload":      {ID: "c", Assistant: "a", Schedule: "* * * * *", Payload: []byte(`[1]`)},
	} {
		if err := s.PutCron(ctx, c); err == nil {
			t.Errorf("%s: put = nil, want an error", name)
		}
	}
}
