package runner_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// TestDurabilityModes: every mode ends a run in the same state, which the
// store rebuilds; sync and async write every step's checkpoint, in
// order, exit only the end (a snapshot).
func TestDurabilityModes(t *testing.T) {
	ctx := context.Background()
	want := map[string]int{runner.DurabilitySync: 21, runner.DurabilityAsync: 21, runner.DurabilityExit: 1}
	for mode, checkpoints := range want {
		t.Run(mode, func(t *testing.T) {
			st := newStore(t)
			e := &runner.Engine{Store: st, Durability: mode}
			res, err := e.Run(ctx, loopGraph(20, 0), "t", nil)
			if err != nil || res.Status != runner.StatusCompleted || res.State["n"] != int64(20) {
				t.Fatalf("run: %v %+v", err, res)
			}
			hist, err := st.History(ctx, "t")
			if err != nil || len(hist) != checkpoints || hist[len(hist)-1].Status != runner.StatusCompleted {
				t.Fatalf("history: %d checkpoints, %v; want %d, the last completed", len(hist), err, checkpoints)
			}
			ts, err := e.State(ctx, loopGraph(20, 0), "t", 0)
			if err != nil || !reflect.DeepEqual(ts.State, res.State) {
				t.Errorf("state from the store = %v, %v; want %v", ts.State, err, res.State)
			}
		})
	}
}

// TestDurabilityExitPauses: in exit mode an interrupt is written (a
// snapshot of the steps before it), and the thread resumes from it.
func TestDurabilityExitPauses(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	e := &runner.Engine{Store: st, Durability: runner.DurabilityExit}
	g := oneNode(approval, nil)
	res, err := e.Run(ctx, g, "t", nil)
	if err != nil || res.Status != runner.StatusInterrupted {
		t.Fatalf("run: %v %+v", err, res)
	}
	res, err = e.Resume(ctx, g, "t", runner.ResumeOptions{Value: map[string]any{"ok": true}})
	if err != nil || res.Status != runner.StatusCompleted || res.State["out"] != true {
		t.Fatalf("resume: %v %+v", err, res)
	}
	if hist, _ := st.History(ctx, "t"); len(hist) != 2 {
		t.Errorf("%d checkpoints, want 2: the pause and the end", len(hist))
	}
}

// failingStore fails every Put after the first ok.
type failingStore struct {
	store.Store
	ok int
}

var errDisk = errors.New("disk full")

func (s *failingStore) Put(ctx context.Context, cp *store.Checkpoint) error {
	if s.ok == 0 {
		return errDisk
	}
	s.ok--
	return s.Store.Put(ctx, cp)
}

// TestDurabilityAsyncFailure: a checkpoint that fails in the background
// fails the run, and nothing after it is written.
func TestDurabilityAsyncFailure(t *testing.T) {
	st := &failingStore{Store: newStore(t), ok: 3}
	e := &runner.Engine{Store: st, Durability: runner.DurabilityAsync}
	_, err := e.Run(context.Background(), loopGraph(20, 0), "t", nil)
	if err == nil || !strings.Contains(err.Error(), errDisk.Error()) {
		t.Fatalf("run err = %v, want the store's error", err)
	}
	if hist, _ := st.History(context.Background(), "t"); len(hist) != 3 {
		t.Errorf("%d checkpoints written, want the 3 before the failure", len(hist))
	}
}
