package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/storetest"
)

// TestGroupCommitConflicts runs many writers at once, two on each thread
// Putting the same IDs: the writes are committed in groups, yet every ID
// is written exactly once, and a Put that lost the race fails alone with
// store.ErrConflict.
func TestGroupCommitConflicts(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "runner.db"))
	const threads, ids = 16, 20
	var won, lost atomic.Int64
	var wg sync.WaitGroup
	for th := range threads {
		for range 2 {
			wg.Go(func() {
				thread := fmt.Sprintf("t%d", th)
				for id := int64(1); id <= ids; id++ {
					err := s.Put(context.Background(), storetest.Checkpoint(thread, id, id == 1))
					switch {
					case err == nil:
						won.Add(1)
					case errors.Is(err, store.ErrConflict):
						lost.Add(1)
					default:
						t.Errorf("Put(%s, %d): %v", thread, id, err)
					}
				}
			})
		}
	}
	wg.Wait()
	if won.Load() != threads*ids || lost.Load() != threads*ids {
		t.Errorf("%d Puts won, %d lost; want %d each", won.Load(), lost.Load(), threads*ids)
	}
	for th := range threads {
		hist, err := s.History(context.Background(), fmt.Sprintf("t%d", th))
		if err != nil || len(hist) != ids {
			t.Errorf("thread t%d: %d checkpoints, %v; want %d", th, len(hist), err, ids)
		}
	}
}
