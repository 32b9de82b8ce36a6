package runner

import (
	"context"
	"fmt"
	"sync"

	"github.com/runner-dev/runner/runner/store"
)

// Durability modes: when a run's step checkpoints reach the store.
const (
	// DurabilitySync (the default) writes a step's checkpoint before the
	// next step starts: a crash loses at most the step running.
	DurabilitySync = "sync"
	// DurabilityAsync writes a step's checkpoint in the background while
	// the next step runs, in order: a crash may lose the last steps, never
	// corrupting the thread or writing a step twice.
	DurabilityAsync = "async"
	// DurabilityExit writes only when the run pauses or ends: a crash
	// loses the steps since the last durable checkpoint (the whole run if
	// none was written).
	DurabilityExit = "exit"
)

// CheckDurability returns an error for an unknown durability mode ("" is
// the default).
func CheckDurability(mode string) error {
	switch mode {
	case "", DurabilitySync, DurabilityAsync, DurabilityExit:
		return nil
	}
	return fmt.Errorf("durability %q: want sync, async or exit", mode)
}

// durability is the run's mode: the engine's, else the graph's, else
// sync.
func (r *Run) durability() string {
	if d := r.engine.Durability; d != "" {
		return d
	}
	if d := r.Graph.Durability; d != "" {
		return d
	}
	return DurabilitySync
}

// defers reports whether the checkpoint of c need not be in the store
// before the run goes on: a step's checkpoint of a running thread, in
// async or exit mode. Interrupts, the end of a run, a step's journaled
// calls (approvals, mutating calls) and edits of a thread are written
// synchronously in every mode.
func (r *Run) defers(c cpRecord) bool {
	return c.step && c.status == StatusRunning && r.durability() != DurabilitySync
}

// asyncPuts writes a run's checkpoints in the background, in order, on one
// goroutine. After a Put fails it writes no more (the next would not be
// next), and the run fails at its next checkpoint or its end.
type asyncPuts struct {
	ch   chan *store.Checkpoint
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// asyncDepth is how many checkpoints a run may have queued.
const asyncDepth = 64

// putAsync queues cp to be written in the background; it returns the error
// of a background Put that failed before.
func (r *Run) putAsync(ctx context.Context, cp *store.Checkpoint) error {
	a := r.async
	if a == nil {
		a = &asyncPuts{ch: make(chan *store.Checkpoint, asyncDepth), done: make(chan struct{})}
		r.async = a
		go a.run(context.WithoutCancel(ctx), r.engine.Store)
	}
	if err := a.failed(); err != nil {
		return err
	}
	a.ch <- cp
	return nil
}

func (a *asyncPuts) run(ctx context.Context, st store.Store) {
	defer close(a.done)
	for cp := range a.ch {
		if a.failed() != nil {
			continue
		}
		if err := st.Put(ctx, cp); err != nil {
			a.mu.Lock()
			a.err = err
			a.mu.Unlock()
		}
	}
}

func (a *asyncPuts) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// flush waits until the checkpoints queued are written and returns the
// error of one that failed.
func (r *Run) flush() error {
	a := r.async
	if a == nil {
		return nil
	}
	r.async = nil
	close(a.ch)
	<-a.done
	return a.err
}
