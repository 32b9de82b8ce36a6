package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// CheckOwnersMigrated checks a store opened on the data each backend's
// test of its owners migration (child threads' parents, named tenants' id
// spaces) writes in the schema before it:
//
//   - "conv": a thread record of tenant acme with its run "r1", its
//     checkpoints of acme, a lease of token 3 that has expired;
//   - "conv/sub@1" and "conv/sub@1/leaf@2": its child thread and that
//     one's, of acme;
//   - "conv/other@1": a thread of tenant other whose id looks like one of
//     conv's child threads;
//   - "exec-t": checkpoints of acme without a record (runner exec);
//   - "plain": checkpoints of the default tenant;
//   - "rec-only": a record of acme without checkpoints.
//
// Each named tenant's thread is now "/<tenant>/<id>", with its children,
// run and record; the default tenant's stays; deleting conv deletes its
// children, not other's thread.
func CheckOwnersMigrated(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	for id, exists := range map[string]bool{"/acme/conv": true, "/acme/conv/sub@1": true, "/acme/conv/sub@1/leaf@2": true,
		"/other/conv/other@1": true, "/acme/exec-t": true, "plain": true, "conv": false, "conv/sub@1": false, "exec-t": false, "conv/other@1": false} {
		if _, err := s.History(ctx, id); (err == nil) != exists {
			t.Errorf("History(%s) after the migration: %v, want it there %v", id, err, exists)
		}
	}
	rs := s.(store.RunStore)
	for _, id := range []string{"/acme/conv", "/acme/rec-only"} {
		if rec, err := rs.Thread(ctx, id); err != nil || rec.Tenant != "acme" {
			t.Errorf("thread record %s after the migration: %+v, %v", id, rec, err)
		}
	}
	if runs, err := rs.Runs(ctx, "/acme/conv"); err != nil || len(runs) != 1 || runs[0].ID != "r1" {
		t.Errorf("runs of /acme/conv after the migration: %+v, %v", runs, err)
	}
	if l, err := s.Acquire(ctx, "/acme/conv", "o", time.Minute); err != nil || l.Token <= 3 {
		t.Errorf("Acquire(/acme/conv) after the migration = %+v, %v; want a token above 3", l, err)
	} else if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "/acme/conv"); err != nil {
		t.Fatal(err)
	}
	for id, gone := range map[string]bool{"/acme/conv/sub@1": true, "/acme/conv/sub@1/leaf@2": true, "/other/conv/other@1": false} {
		if _, err := s.History(ctx, id); errors.Is(err, store.ErrNotFound) != gone {
			t.Errorf("History(%s) after Delete(/acme/conv): %v, want gone %v", id, err, gone)
		}
	}
}
