package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/runner-dev/runner/runner/store"
)

func BenchmarkPut(b *testing.B) {
	b.Run("memory", func(b *testing.B) { benchPuts(b, store.NewMemory(), 1) })
	for _, opt := range []struct{ name, query string }{{"sqlite", ""}, {"sqlite-full", "?sync=full"}} {
		b.Run(opt.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "s.db")
			s := openBench(b, path+opt.query)
			wal := walBytesPerPut(b, s, path)
			benchPuts(b, s, walPuts+1)
			b.ReportMetric(wal, "wal-B/put")
		})
	}
}

// walPuts is how many Puts walBytesPerPut measures: few enough that the
// writer does not checkpoint the WAL in between (WALBytes).
const walPuts = 100

// walBytesPerPut Puts walPuts small checkpoints on thread t into an empty
// WAL and returns the WAL bytes each added.
func walBytesPerPut(b *testing.B, s store.Store, path string) float64 {
	n, err := WALBytes(path, func() {
		for id := int64(1); id <= walPuts; id++ {
			cp := &store.Checkpoint{Thread: "t", ID: id, Parent: id - 1, Node: "agent", Status: "running",
				Writes: smallWrites(), Pipeline: "bench", ConfigHash: "abc123"}
			if err := s.Put(context.Background(), cp); err != nil {
				b.Fatal(err)
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	return float64(n) / walPuts
}

// BenchmarkConcurrentPuts Puts from 32 writers at once, each on a thread
// of its own named by a random UUID, as an API's clients name threads; it
// reports the WAL written a Put, which the key order of the checkpoints
// decides (a key per thread in order: the writers' entries share pages).
func BenchmarkConcurrentPuts(b *testing.B) {
	const writers = 32
	path := filepath.Join(b.TempDir(), "s.db")
	s := openBench(b, path)
	threads := make([]string, writers)
	next := make([]atomic.Int64, writers)
	for i := range threads {
		threads[i] = uuid.NewString()
	}
	put := func(w int) {
		id := next[w].Add(1)
		cp := &store.Checkpoint{Thread: threads[w], ID: id, Parent: id - 1, Node: "agent", Status: "running",
			Writes: smallWrites(), Pipeline: "bench", ConfigHash: "abc123", CreatedAt: time.Now()}
		if err := s.Put(context.Background(), cp); err != nil {
			b.Error(err)
		}
	}
	together := func(perWriter int) {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for range perWriter {
					put(w)
				}
			})
		}
		wg.Wait()
	}
	together(4) // every thread has checkpoints, as in a running server
	const walRounds = 10
	n, err := WALBytes(path, func() { together(walRounds) })
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	together(max(1, b.N/writers))
	b.ReportMetric(float64(n)/(walRounds*writers), "wal-B/put")
}

// BenchmarkPutLargeState documents that a Put costs what the step wrote,
// not what the state holds: the thread starts with a large snapshot, then
// each Put carries small writes.
func BenchmarkPutLargeState(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("snapshot=%dKiB", size>>10), func(b *testing.B) {
			s := openBench(b, filepath.Join(b.TempDir(), "s.db"))
			snap := json.RawMessage(`"` + strings.Repeat("s", size) + `"`)
			first := &store.Checkpoint{Thread: "t", ID: 1, Writes: smallWrites(), Snapshot: snap}
			if err := s.Put(context.Background(), first); err != nil {
				b.Fatal(err)
			}
			benchPuts(b, s, 2)
		})
	}
}

// benchPuts Puts checkpoints with small writes on thread t from ID next on.
func benchPuts(b *testing.B, s store.Store, next int64) {
	ctx := context.Background()
	cp := &store.Checkpoint{Thread: "t", Node: "agent", Next: "tools", Status: "running",
		Writes: smallWrites(), Pipeline: "bench", ConfigHash: "abc123",
		CreatedAt: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		cp.ID, cp.Parent, cp.Step = next, next-1, int(next)
		if err := s.Put(ctx, cp); err != nil {
			b.Fatal(err)
		}
		next++
	}
}

// smallWrites is a ~200-byte Writes, the size of a typical step's update.
func smallWrites() json.RawMessage {
	return json.RawMessage(`{"messages":[{"role":"assistant","content":"` +
		strings.Repeat("x", 150) + `"}],"step":1}`)
}

// openBench opens dsn, closed when the benchmark ends.
func openBench(b *testing.B, dsn string) store.Store {
	s, err := Open(dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkItemRatio times, in each iteration one after the other, a
// checkpoint Put (the baseline), a put of a new item, a get of an item
// without a TTL and a get of an item with one (its refresh is a write),
// and reports the median of each and each item operation's ratio to the
// Put (the target is 1.5): on a shared machine, load that comes and goes
// weighs on all alike.
func BenchmarkItemRatio(b *testing.B) {
	s := openBench(b, filepath.Join(b.TempDir(), "s.db"))
	items := s.(store.ItemStore)
	ctx := context.Background()
	ns := []string{"user", "u1"}
	value := json.RawMessage(`{"fact":"` + strings.Repeat("x", 150) + `","kind":"note"}`)
	for _, key := range []string{"plain", "ttl"} {
		it := &store.Item{Namespace: ns, Key: key, Value: value}
		if key == "ttl" {
			it.TTL = time.Hour
		}
		if err := items.PutItem(ctx, "acme", it); err != nil {
			b.Fatal(err)
		}
	}
	cp := &store.Checkpoint{Thread: "t", Node: "agent", Next: "tools", Status: "running",
		Writes: smallWrites(), Pipeline: "bench", ConfigHash: "abc123", CreatedAt: time.Now()}
	timed := func(f func() error) time.Duration {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var puts, itemPuts, gets, refreshes []time.Duration
	n := 0
	for b.Loop() {
		n++
		cp.ID, cp.Parent, cp.Step = int64(n), int64(n-1), n
		puts = append(puts, timed(func() error { return s.Put(ctx, cp) }))
		itemPuts = append(itemPuts, timed(func() error {
			return items.PutItem(ctx, "acme", &store.Item{Namespace: ns, Key: fmt.Sprint("k", n), Value: value})
		}))
		gets = append(gets, timed(func() error { _, err := items.Item(ctx, "acme", ns, "plain", true); return err }))
		refreshes = append(refreshes, timed(func() error { _, err := items.Item(ctx, "acme", ns, "ttl", true); return err }))
	}
	put := median(puts)
	b.ReportMetric(float64(put.Microseconds()), "checkpoint-put-µs")
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"item-put", itemPuts}, {"item-get", gets}, {"item-get-refresh", refreshes}} {
		d := median(m.ds)
		b.ReportMetric(float64(d.Microseconds()), m.name+"-µs")
		b.ReportMetric(float64(d)/float64(put), m.name+"-ratio")
	}
}

// median returns the median of ds (which it sorts).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
