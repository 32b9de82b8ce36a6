package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/server"
)

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRetentionSweep leaves a thread in the store with more history than
// the retention keeps and no run to come, and a thread whose run holds
// it: the background sweep prunes the first, skips the second while it
// runs, logs each sweep and counts them.
func TestRetentionSweep(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, func(c *server.Config) {
		c.Retention, c.RetentionEvery = runner.Retention{Keep: 1}, 20*time.Millisecond
		c.Log = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ctx := context.Background()
	if _, err := (&runner.Engine{Store: e.store}).Run(ctx, stepsGraph(), "idle", nil); err != nil {
		t.Fatal(err)
	}
	e.call("POST", "/threads", map[string]any{"thread_id": "busy"}, 200)
	run := e.call("POST", "/threads/busy/runs", map[string]any{"assistant_id": "hold", "input": map[string]any{"block": true}}, 200)["run_id"].(string)
	e.waitStatus("busy", run, "running")
	busy, _ := e.store.History(ctx, "busy")

	deadline := time.Now().Add(10 * time.Second)
	for hist, _ := e.store.History(ctx, "idle"); len(hist) > 1; hist, _ = e.store.History(ctx, "idle") {
		if time.Now().After(deadline) {
			t.Fatalf("idle thread still has %d checkpoints after 10s of sweeps; logs:\n%s", len(hist), logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts, err := (&runner.Engine{Store: e.store}).State(ctx, stepsGraph(), "idle", 0)
	if want := []any{"a", "b", "c"}; err != nil || !reflect.DeepEqual(ts.State["path"], want) {
		t.Errorf("idle thread after the sweep = %+v, %v; want path %v", ts, err, want)
	}
	if hist, _ := e.store.History(ctx, "busy"); len(hist) < len(busy) {
		t.Errorf("running thread has %d checkpoints after a sweep, want at least its %d", len(hist), len(busy))
	}
	// the sweep that pruned the idle thread records its figures when it
	// has visited every thread: wait for them
	for {
		m := e.scrape()
		pruned, ok := sample(m, "runner_retention_pruned_checkpoints_total"), sample(m, `runner_retention_sweeps_total{result="ok"}`)
		logged := strings.Contains(logs.String(), `msg="retention sweep" threads=2`) && strings.Contains(logs.String(), "skipped=1")
		if pruned >= 3 && ok >= 1 && logged { // start, a, b: c stays
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the sweep: runner_retention_pruned_checkpoints_total = %v (want the idle thread's 3 or more), "+
				`runner_retention_sweeps_total{result="ok"} = %v (want >= 1), a logged sweep of 2 threads that skipped the running one: %v; logs:\n%s`,
				pruned, ok, logged, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(e.release)
	e.waitStatus("busy", run, "success")
}
