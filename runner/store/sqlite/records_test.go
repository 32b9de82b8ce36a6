package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/runner-dev/runner/runner/store"
)

// TestGroupedRecordWrites: thread records and runs written concurrently
// share group commits, and each write gets its own answer: a thread or
// run created twice is a conflict for the second writer alone, a status
// set on an unknown run is not found, and every other write lands.
func TestGroupedRecordWrites(t *testing.T) {
	rs := openTest(t, filepath.Join(t.TempDir(), "runner.db")).(store.RunStore)
	ctx := context.Background()
	const n = 64
	var wg sync.WaitGroup
	errs := make([][3]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			thread := fmt.Sprintf("t%d", i/2) // two writers a thread
			errs[i][0] = rs.CreateThread(ctx, &store.ThreadRecord{ID: thread, Tenant: "acme"})
			_, _, errs[i][1] = rs.CreateRun(ctx, &store.RunRecord{ID: fmt.Sprintf("r%d", i), Thread: thread, Status: store.RunPending}, nil)
			run := fmt.Sprintf("r%d", i)
			if i%4 == 3 {
				run = "unknown"
			}
			errs[i][2] = rs.SetRunStatus(ctx, run, store.RunRunning)
		}()
	}
	wg.Wait()
	for i := 0; i < n; i += 2 {
		a, b := errs[i][0], errs[i+1][0]
		if (a == nil) == (b == nil) || !errors.Is(errors.Join(a, b), store.ErrConflict) {
			t.Errorf("thread t%d created twice: errors %v and %v, want one conflict", i/2, a, b)
		}
	}
	for i := range n {
		if errs[i][1] != nil {
			t.Errorf("CreateRun r%d: %v", i, errs[i][1])
		}
		if wantNotFound := i%4 == 3; errors.Is(errs[i][2], store.ErrNotFound) != wantNotFound || !wantNotFound && errs[i][2] != nil {
			t.Errorf("SetRunStatus of writer %d: %v", i, errs[i][2])
		}
	}
	if _, _, err := rs.CreateRun(ctx, &store.RunRecord{ID: "r0", Thread: "t0", Status: store.RunPending}, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateRun r0 again: %v, want a conflict", err)
	}
	if r, err := rs.Run(ctx, "r1"); err != nil || r.Status != store.RunRunning {
		t.Errorf("run r1 = %+v, %v; want running", r, err)
	}
	if err := rs.UpdateThread(ctx, &store.ThreadRecord{ID: "none"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateThread of an unknown thread: %v, want not found", err)
	}
}
