package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// BenchmarkPut measures a durable Put of a step's small writes to the
// server in RUNNER_TEST_POSTGRES, with and without a lease token (the
// fenced Put reads the lease row too).
func BenchmarkPut(b *testing.B) {
	b.Run("postgres", func(b *testing.B) { benchPuts(b, newTestDB(b).open(b), 0) })
	b.Run("postgres-leased", func(b *testing.B) {
		s := newTestDB(b).open(b)
		l, err := s.Acquire(context.Background(), "t", "bench", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		benchPuts(b, s, l.Token)
	})
}

// benchPuts Puts checkpoints with small writes on thread t under lease.
func benchPuts(b *testing.B, s store.Store, lease int64) {
	ctx := context.Background()
	writes := json.RawMessage(`{"messages":[{"role":"assistant","content":"` +
		strings.Repeat("x", 150) + `"}],"step":1}`)
	cp := &store.Checkpoint{Thread: "t", Node: "agent", Next: "tools", Status: "running",
		Writes: writes, Pipeline: "bench", ConfigHash: "abc123", CreatedAt: time.Now(), Lease: lease}
	b.ReportAllocs()
	next := int64(1)
	for b.Loop() {
		cp.ID, cp.Parent, cp.Step = next, next-1, int(next)
		if err := s.Put(ctx, cp); err != nil {
			b.Fatal(err)
		}
		next++
	}
}
