// Package storetest is the conformance suite every store.Store backend
// runs: checkpoints, history, threads, concurrent writers, delete, prune
// and thread leases behave the same on each.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// as is s as the store interface I a suite tests, failing the test when
// the backend does not implement it.
func as[I any](t *testing.T, s store.Store) I {
	t.Helper()
	i, ok := s.(I)
	if !ok {
		t.Fatalf("%T is not a %s", s, reflect.TypeFor[I]())
	}
	return i
}

// Run runs the suite on fresh stores from open, each closed by open's
// caller (use t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	cases := []struct {
		name string
		run  func(t *testing.T, s store.Store)
	}{
		{"load rebuilds from the newest snapshot", testLoad},
		{"a branch from an earlier checkpoint", testBranch},
		{"load without any snapshot starts at the first", testLoadNoSnapshot},
		{"unknown thread or id is not found", testNotFound},
		{"put rejects ids that are not next", testPutRejects},
		{"put rejects invalid checkpoints", testPutInvalid},
		{"fields round-trip", testRoundTrip},
		{"put copies what it stores", testPutCopies},
		{"put stamps a zero created_at", testStamp},
		{"history omits writes and snapshot", testHistory},
		{"threads are newest first, limited", testThreads},
		{"a running thread shows its newest step", testThreadsRunning},
		{"threads after a cursor page by id", testThreadsAfter},
		{"concurrent puts to different threads", testConcurrentThreads},
		{"concurrent puts of one id: one wins", testConcurrentConflict},
		{"racing writers on many threads: each id once", testRacingWriters},
		{"delete removes a thread and its own children, by record", testDelete},
		{"prune keeps the newest; ids go on", testPrune},
		{"a probe writes beside puts", testProbe},
	}
	for _, tc := range append(cases, leaseCases...) {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
	}
}

// testProbe: every store can tell it can be written (store.Prober),
// again and again, between and beside Puts.
func testProbe(t *testing.T, s store.Store) {
	p, ok := s.(store.Prober)
	if !ok {
		t.Fatalf("%T is not a store.Prober", s)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for id := int64(1); id <= 5; id++ {
				if err := s.Put(ctx, Checkpoint(fmt.Sprintf("probed-%d", i), id, false)); err != nil {
					t.Errorf("Put: %v", err)
				}
			}
		})
	}
	for range 10 {
		if err := p.Probe(ctx); err != nil {
			t.Fatalf("Probe: %v", err)
		}
	}
	wg.Wait()
}

// Checkpoint returns checkpoint id of thread with small writes and, when
// snap, a snapshot.
func Checkpoint(thread string, id int64, snap bool) *store.Checkpoint {
	cp := &store.Checkpoint{Thread: thread, ID: id, Parent: id - 1, Step: int(id),
		Node: "node", Next: "next", Status: "running", Pipeline: "pipe",
		ConfigHash: "hash", CreatedAt: time.Unix(1700000000, id).UTC(),
		Writes: json.RawMessage(fmt.Sprintf(`{"n":%d}`, id))}
	if snap {
		cp.Snapshot = json.RawMessage(fmt.Sprintf(`{"total":%d}`, id))
	}
	return cp
}

// PutAll puts checkpoints 1..n of thread, with snapshots at the ids in snaps.
func PutAll(t *testing.T, s store.Store, thread string, n int64, snaps ...int64) {
	t.Helper()
	for id := int64(1); id <= n; id++ {
		if err := s.Put(context.Background(), Checkpoint(thread, id, slices.Contains(snaps, id))); err != nil {
			t.Fatalf("Put(%s/%d): %v", thread, id, err)
		}
	}
}

// IDs returns the IDs of cps.
func IDs(cps []*store.Checkpoint) []int64 {
	out := make([]int64, len(cps))
	for i, cp := range cps {
		out[i] = cp.ID
	}
	return out
}

// testBranch puts a branch: checkpoint 5 replays from 2 (with a
// snapshot), 6 follows it; each branch loads on its own, and History
// keeps both with their parents.
func testBranch(t *testing.T, s store.Store) {
	ctx := context.Background()
	PutAll(t, s, "t", 4, 1)
	branch := Checkpoint("t", 5, true)
	branch.Parent = 2
	if err := s.Put(ctx, branch); err != nil {
		t.Fatalf("Put of a branch: %v", err)
	}
	if err := s.Put(ctx, Checkpoint("t", 6, false)); err != nil {
		t.Fatalf("Put after a branch: %v", err)
	}
	for id, want := range map[int64][]int64{6: {5, 6}, 5: {5}, 4: {1, 2, 3, 4}, 0: {5, 6}} {
		got, err := s.Load(ctx, "t", id)
		if err != nil || !slices.Equal(IDs(got), want) {
			t.Errorf("Load(t, %d) = %v, %v; want %v", id, IDs(got), err, want)
		}
	}
	hist, err := s.History(ctx, "t")
	var parents []int64
	for _, cp := range hist {
		parents = append(parents, cp.Parent)
	}
	if err != nil || !slices.Equal(parents, []int64{0, 1, 2, 3, 2, 5}) {
		t.Errorf("History parents = %v, %v; want [0 1 2 3 2 5]", parents, err)
	}
}

func testLoad(t *testing.T, s store.Store) {
	PutAll(t, s, "t", 6, 2, 4)
	for _, tc := range []struct {
		id   int64
		want []int64
	}{
		{0, []int64{4, 5, 6}},
		{6, []int64{4, 5, 6}},
		{5, []int64{4, 5}},
		{4, []int64{4}},
		{3, []int64{2, 3}},
		{2, []int64{2}},
		{1, []int64{1}},
	} {
		got, err := s.Load(context.Background(), "t", tc.id)
		if err != nil {
			t.Fatalf("Load(t, %d): %v", tc.id, err)
		}
		if !slices.Equal(IDs(got), tc.want) {
			t.Errorf("Load(t, %d) ids = %v, want %v", tc.id, IDs(got), tc.want)
		}
		for _, cp := range got {
			if diff := diffCheckpoint(cp, Checkpoint("t", cp.ID, cp.ID == 2 || cp.ID == 4)); diff != "" {
				t.Errorf("Load(t, %d) checkpoint %d: %s", tc.id, cp.ID, diff)
			}
		}
	}
}

func testLoadNoSnapshot(t *testing.T, s store.Store) {
	PutAll(t, s, "t", 3)
	got, err := s.Load(context.Background(), "t", 0)
	if err != nil {
		t.Fatalf("Load(t, 0): %v", err)
	}
	if want := []int64{1, 2, 3}; !slices.Equal(IDs(got), want) {
		t.Errorf("Load(t, 0) ids = %v, want %v", IDs(got), want)
	}
}

func testNotFound(t *testing.T, s store.Store) {
	PutAll(t, s, "t", 2)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"load unknown thread", func() error { _, err := s.Load(ctx, "nope", 0); return err }, `"nope"`},
		{"load unknown thread at id", func() error { _, err := s.Load(ctx, "nope", 1); return err }, `"nope" checkpoint 1`},
		{"load id past the last", func() error { _, err := s.Load(ctx, "t", 3); return err }, `"t" checkpoint 3`},
		{"load negative id", func() error { _, err := s.Load(ctx, "t", -1); return err }, `"t"`},
		{"history unknown thread", func() error { _, err := s.History(ctx, "nope"); return err }, `"nope"`},
	} {
		err := tc.call()
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: err = %v, want store.ErrNotFound", tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %q, want it to mention %s", tc.name, err, tc.want)
		}
	}
}

func testPutRejects(t *testing.T, s store.Store) {
	PutAll(t, s, "t", 3)
	for _, tc := range []struct {
		name string
		cp   *store.Checkpoint
	}{
		{"duplicate of the last", Checkpoint("t", 3, false)},
		{"duplicate of an older", Checkpoint("t", 1, false)},
		{"gap", Checkpoint("t", 5, false)},
		{"new thread not at 1", Checkpoint("u", 2, false)},
	} {
		err := s.Put(context.Background(), tc.cp)
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("%s: Put(%s/%d) err = %v, want store.ErrConflict", tc.name, tc.cp.Thread, tc.cp.ID, err)
		}
	}
	hist, err := s.History(context.Background(), "t")
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if want := []int64{1, 2, 3}; !slices.Equal(IDs(hist), want) {
		t.Errorf("History ids after rejects = %v, want %v", IDs(hist), want)
	}
	if _, err := s.History(context.Background(), "u"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("History(u) err = %v, want store.ErrNotFound: a rejected first Put must not create the thread", err)
	}
}

func testPutInvalid(t *testing.T, s store.Store) {
	bad := func(edit func(cp *store.Checkpoint)) *store.Checkpoint {
		cp := Checkpoint("t", 1, false)
		edit(cp)
		return cp
	}
	for _, tc := range []struct {
		name string
		cp   *store.Checkpoint
		want string
	}{
		{"nil", nil, "nil checkpoint"},
		{"empty thread", bad(func(cp *store.Checkpoint) { cp.Thread = "" }), "empty thread"},
		{"zero id", bad(func(cp *store.Checkpoint) { cp.ID, cp.Parent = 0, -1 }), "want >= 1"},
		{"wrong parent", bad(func(cp *store.Checkpoint) { cp.Parent = 7 }), "parent 7, want an earlier checkpoint"},
		{"branch without a snapshot", func() *store.Checkpoint { cp := Checkpoint("b", 3, false); cp.Parent = 1; return cp }(),
			"branches from 1 without a snapshot"},
	} {
		err := s.Put(context.Background(), tc.cp)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Put err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func testRoundTrip(t *testing.T, s store.Store) {
	want := Checkpoint("t", 1, true)
	want.Writes = json.RawMessage(`{"messages":[{"role":"user","content":"héllo \"x\" \u00e9"}],"n":1.5e3,"ok":true,"nil":null}`)
	want.Interrupt = json.RawMessage(`{"kind":"approval","payload":[1,2,3]}`)
	want.Meta = json.RawMessage(`{"tokens":12345,"error":""}`)
	want.Tenant, want.Status, want.Next = "acme", "interrupted", ""
	want.CreatedAt = time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.FixedZone("X", 3600))
	if err := s.Put(context.Background(), want); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := s.Load(context.Background(), "t", 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("Load = %d checkpoints, %v; want 1", len(got), err)
	}
	if diff := diffCheckpoint(got[0], want); diff != "" {
		t.Error(diff)
	}
}

func testPutCopies(t *testing.T, s store.Store) {
	cp := Checkpoint("t", 1, true)
	if err := s.Put(context.Background(), cp); err != nil {
		t.Fatalf("Put: %v", err)
	}
	copy(cp.Writes, `{"n":9}`)
	copy(cp.Snapshot, `{"total":9}`)
	cp.Status = "mutated"
	got, err := s.Load(context.Background(), "t", 0)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if diff := diffCheckpoint(got[0], Checkpoint("t", 1, true)); diff != "" {
		t.Errorf("after mutating the Put argument: %s", diff)
	}
	copy(got[0].Writes, `{"n":8}`)
	again, _ := s.Load(context.Background(), "t", 0)
	if diff := diffCheckpoint(again[0], Checkpoint("t", 1, true)); diff != "" {
		t.Errorf("after mutating a Load result: %s", diff)
	}
}

func testStamp(t *testing.T, s store.Store) {
	cp := Checkpoint("t", 1, false)
	cp.CreatedAt = time.Time{}
	before := time.Now()
	if err := s.Put(context.Background(), cp); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if cp.CreatedAt.Before(before) || cp.CreatedAt.After(time.Now()) {
		t.Errorf("CreatedAt = %v, want the time of the Put", cp.CreatedAt)
	}
	got, _ := s.Load(context.Background(), "t", 0)
	if !got[0].CreatedAt.Equal(cp.CreatedAt) {
		t.Errorf("stored CreatedAt = %v, want %v", got[0].CreatedAt, cp.CreatedAt)
	}
}

func testHistory(t *testing.T, s store.Store) {
	PutAll(t, s, "t", 4, 2)
	hist, err := s.History(context.Background(), "t")
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if want := []int64{1, 2, 3, 4}; !slices.Equal(IDs(hist), want) {
		t.Fatalf("History ids = %v, want %v", IDs(hist), want)
	}
	for _, cp := range hist {
		want := Checkpoint("t", cp.ID, false)
		want.Writes = nil
		if diff := diffCheckpoint(cp, want); diff != "" {
			t.Errorf("History checkpoint %d: %s", cp.ID, diff)
		}
	}
}

func testThreads(t *testing.T, s store.Store) {
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(thread string, id int64, at time.Duration, status string) {
		cp := Checkpoint(thread, id, false)
		cp.CreatedAt, cp.Status, cp.Pipeline = base.Add(at), status, "p-"+thread
		if err := s.Put(context.Background(), cp); err != nil {
			t.Fatalf("Put(%s/%d): %v", thread, id, err)
		}
	}
	put("a", 1, 1*time.Second, "running")
	put("b", 1, 2*time.Second, "running")
	put("c", 1, 3*time.Second, "running")
	put("a", 2, 4*time.Second, "completed")
	put("d", 1, 3*time.Second, "failed") // ties with c: by ID
	all := []store.Thread{
		{ID: "a", Pipeline: "p-a", Status: "completed", Steps: 2, UpdatedAt: base.Add(4 * time.Second)},
		{ID: "c", Pipeline: "p-c", Status: "running", Steps: 1, UpdatedAt: base.Add(3 * time.Second)},
		{ID: "d", Pipeline: "p-d", Status: "failed", Steps: 1, UpdatedAt: base.Add(3 * time.Second)},
		{ID: "b", Pipeline: "p-b", Status: "running", Steps: 1, UpdatedAt: base.Add(2 * time.Second)},
	}
	for _, tc := range []struct {
		limit int
		want  []store.Thread
	}{{0, all}, {-1, all}, {10, all}, {2, all[:2]}, {1, all[:1]}} {
		got, err := s.Threads(context.Background(), tc.limit)
		if err != nil {
			t.Fatalf("Threads(%d): %v", tc.limit, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Threads(%d) =\n%+v\nwant\n%+v", tc.limit, got, tc.want)
		}
	}
}

// testThreadsRunning: a thread's summary follows each step of a run,
// in Threads' order and in ThreadsAfter, whether or not its status
// changed.
func testThreadsRunning(t *testing.T, s store.Store) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(thread string, id int64, at time.Duration, status string) {
		cp := Checkpoint(thread, id, id == 1)
		cp.CreatedAt, cp.Status = base.Add(at), status
		if err := s.Put(ctx, cp); err != nil {
			t.Fatalf("Put(%s/%d): %v", thread, id, err)
		}
	}
	summary := func(id, status string, steps int, at time.Duration) store.Thread {
		return store.Thread{ID: id, Pipeline: "pipe", Status: status, Steps: steps, UpdatedAt: base.Add(at)}
	}
	put("x", 1, 1*time.Second, "running")
	put("y", 1, 2*time.Second, "running")
	put("x", 2, 3*time.Second, "running")
	put("z", 1, 4*time.Second, "completed")
	put("x", 3, 5*time.Second, "running")
	x, y, z := summary("x", "running", 3, 5*time.Second), summary("y", "running", 1, 2*time.Second), summary("z", "completed", 1, 4*time.Second)
	for limit, want := range map[int][]store.Thread{0: {x, z, y}, 1: {x}, 2: {x, z}} {
		if got, err := s.Threads(ctx, limit); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Threads(%d) =\n%+v, %v\nwant\n%+v", limit, got, err, want)
		}
	}
	if got, err := s.ThreadsAfter(ctx, "", 0); err != nil || !reflect.DeepEqual(got, []store.Thread{x, y, z}) {
		t.Errorf("ThreadsAfter = %+v, %v; want %+v", got, err, []store.Thread{x, y, z})
	}
	put("x", 4, 6*time.Second, "completed")
	put("y", 2, 7*time.Second, "running")
	want := []store.Thread{summary("y", "running", 2, 7*time.Second), summary("x", "completed", 4, 6*time.Second), z}
	if got, err := s.Threads(ctx, 0); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("after x completed, Threads =\n%+v, %v\nwant\n%+v", got, err, want)
	}
}

func testThreadsAfter(t *testing.T, s store.Store) {
	ctx := context.Background()
	var ids []string
	for i := range 7 {
		ids = append(ids, fmt.Sprintf("t%02d", 6-i)) // put in reverse order
		PutAll(t, s, ids[i], 2)
	}
	slices.Sort(ids)
	if got, err := s.ThreadsAfter(ctx, "", 0); err != nil || len(got) != len(ids) || got[0].ID != ids[0] {
		t.Fatalf("ThreadsAfter(\"\", 0) = %+v, %v; want all %d threads from %s", got, err, len(ids), ids[0])
	}
	first, _ := s.ThreadsAfter(ctx, "", 1)
	if want := (store.Thread{ID: "t00", Pipeline: "pipe", Status: "running", Steps: 2,
		UpdatedAt: time.Unix(1700000000, 2).UTC()}); len(first) != 1 || first[0] != want {
		t.Errorf("ThreadsAfter(\"\", 1) = %+v, want [%+v]", first, want)
	}
	for _, limit := range []int{1, 3, 7, 10} {
		if got := pageAll(t, s, limit, nil); !slices.Equal(got, ids) {
			t.Errorf("paging by %d = %v, want %v", limit, got, ids)
		}
	}
	// a thread deleted or added behind the cursor while paging: every
	// thread that exists throughout is visited once
	got := pageAll(t, s, 2, func(page int) {
		if page == 1 {
			_ = s.Delete(ctx, "t00")
			PutAll(t, s, "t00a", 1)
			PutAll(t, s, "t99", 1)
		}
	})
	if want := append(slices.Clone(ids), "t99"); !slices.Equal(got, want) {
		t.Errorf("paging while writing = %v, want %v", got, want)
	}
	if got, err := s.ThreadsAfter(ctx, "t99", 5); err != nil || len(got) != 0 {
		t.Errorf("ThreadsAfter(last) = %v, %v; want none", got, err)
	}
}

// pageAll pages through s's threads limit at a time, calling between (if
// set) after each page, and returns the IDs in the order visited.
func pageAll(t *testing.T, s store.Store, limit int, between func(page int)) []string {
	t.Helper()
	var out []string
	for page, after := 1, ""; ; page++ {
		got, err := s.ThreadsAfter(context.Background(), after, limit)
		if err != nil {
			t.Fatalf("ThreadsAfter(%q, %d): %v", after, limit, err)
		}
		if len(got) > limit {
			t.Fatalf("ThreadsAfter(%q, %d) returned %d threads", after, limit, len(got))
		}
		if len(got) == 0 {
			return out
		}
		for _, th := range got {
			out = append(out, th.ID)
		}
		after = got[len(got)-1].ID
		if between != nil {
			between(page)
		}
	}
}

func testConcurrentThreads(t *testing.T, s store.Store) {
	const writers, puts = 8, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			thread := fmt.Sprintf("w%d", w)
			for id := int64(1); id <= puts; id++ {
				if err := s.Put(context.Background(), Checkpoint(thread, id, id%10 == 0)); err != nil {
					t.Errorf("Put(%s/%d): %v", thread, id, err)
					return
				}
				if _, err := s.Load(context.Background(), thread, 0); err != nil {
					t.Errorf("Load(%s): %v", thread, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for w := range writers {
		hist, err := s.History(context.Background(), fmt.Sprintf("w%d", w))
		if err != nil || len(hist) != puts || hist[puts-1].ID != puts {
			t.Errorf("History(w%d) = %d checkpoints, %v; want %d", w, len(hist), err, puts)
		}
	}
	if ths, err := s.Threads(context.Background(), 0); err != nil || len(ths) != writers {
		t.Errorf("Threads = %d, %v; want %d", len(ths), err, writers)
	}
}

func testConcurrentConflict(t *testing.T, s store.Store) {
	const writers = 8
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			cp := Checkpoint("t", 1, false)
			cp.Node = fmt.Sprintf("writer%d", w)
			errs[w] = s.Put(context.Background(), cp)
		})
	}
	wg.Wait()
	won := 0
	for w, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("writer %d: err = %v, want nil or store.ErrConflict", w, err)
		}
	}
	if won != 1 {
		t.Errorf("%d writers won the Put of id 1, want exactly 1", won)
	}
}

// testRacingWriters runs two writers on each of many threads, Putting the
// same IDs at once: where a backend commits concurrent writes in groups,
// every ID is still written exactly once, and a Put that lost its race
// fails alone with store.ErrConflict.
func testRacingWriters(t *testing.T, s store.Store) {
	const threads, ids = 16, 20
	var won, lost atomic.Int64
	var wg sync.WaitGroup
	for th := range threads {
		for range 2 {
			wg.Go(func() {
				thread := fmt.Sprintf("t%d", th)
				for id := int64(1); id <= ids; id++ {
					err := s.Put(context.Background(), Checkpoint(thread, id, id == 1))
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

// diffCheckpoint describes how got differs from want, "" if it does not:
// JSON fields compare decoded, CreatedAt as an instant.
func diffCheckpoint(got, want *store.Checkpoint) string {
	var diffs []string
	raw := func(name string, g, w json.RawMessage) {
		if d := diffJSON(g, w); d != "" {
			diffs = append(diffs, name+": "+d)
		}
	}
	raw("Writes", got.Writes, want.Writes)
	raw("Snapshot", got.Snapshot, want.Snapshot)
	raw("Interrupt", got.Interrupt, want.Interrupt)
	raw("Meta", got.Meta, want.Meta)
	if !got.CreatedAt.Equal(want.CreatedAt) {
		diffs = append(diffs, fmt.Sprintf("CreatedAt = %v, want %v", got.CreatedAt, want.CreatedAt))
	}
	g, w := *got, *want
	g.Writes, g.Snapshot, g.Interrupt, g.Meta, g.CreatedAt = nil, nil, nil, nil, time.Time{}
	w.Writes, w.Snapshot, w.Interrupt, w.Meta, w.CreatedAt = nil, nil, nil, nil, time.Time{}
	if !reflect.DeepEqual(g, w) {
		diffs = append(diffs, fmt.Sprintf("fields = %+v, want %+v", g, w))
	}
	return strings.Join(diffs, "; ")
}

// diffJSON describes how JSON got differs from want, decoded; empty and
// absent are the same.
func diffJSON(got, want json.RawMessage) string {
	if len(got) == 0 || len(want) == 0 {
		if len(got) != len(want) {
			return fmt.Sprintf("got %q, want %q", got, want)
		}
		return ""
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Sprintf("got %q: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Sprintf("want %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		return fmt.Sprintf("got %s, want %s", got, want)
	}
	return ""
}

// testDelete: Delete removes a thread with the child threads recorded as
// its own, theirs too, and no other thread — not one whose id only begins
// with the thread's (another tenant's, say), nor its parent.
func testDelete(t *testing.T, s store.Store) {
	ctx := context.Background()
	for _, th := range []struct{ id, childOf string }{
		{"t", ""}, {"t/sub@1", "t"}, {"t/sub@1/leaf@2", "t/sub@1"}, {"t/branch@3", "t"},
		{"t/stranger", ""}, {"t/stranger/sub@1", "t/stranger"}, {"tx", ""}, {"other", ""}, {"other/sub@1", "other"},
	} {
		first := Checkpoint(th.id, 1, true)
		first.ChildOf = th.childOf
		if err := s.Put(ctx, first); err != nil {
			t.Fatalf("Put(%s/1): %v", th.id, err)
		}
		if err := s.Put(ctx, Checkpoint(th.id, 2, false)); err != nil {
			t.Fatalf("Put(%s/2): %v", th.id, err)
		}
	}
	if err := s.Delete(ctx, "t"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := s.Delete(ctx, "other/sub@1"); err != nil { // a child alone: its parent stays
		t.Fatalf("Delete of a child thread: %v", err)
	}
	gone := map[string]bool{"t": true, "t/sub@1": true, "t/sub@1/leaf@2": true, "t/branch@3": true, "other/sub@1": true,
		"t/stranger": false, "t/stranger/sub@1": false, "tx": false, "other": false}
	for th, gone := range gone {
		if _, err := s.History(ctx, th); errors.Is(err, store.ErrNotFound) != gone {
			t.Errorf("after Delete(t): History(%s) = %v, want gone %v", th, err, gone)
		}
	}
	if threads, _ := s.Threads(ctx, 0); len(threads) != 4 {
		t.Errorf("Threads after Delete: %v", threads)
	}
	if err := s.Delete(ctx, "t"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete of a deleted thread = %v, want store.ErrNotFound", err)
	}
	PutAll(t, s, "t", 1) // made again, without its children
	if err := s.Delete(ctx, "t"); err != nil {
		t.Errorf("Delete of a thread made again: %v", err)
	}
	if _, err := s.History(ctx, "t/stranger"); err != nil {
		t.Errorf("t/stranger after the second Delete(t): %v", err)
	}
}

func testPrune(t *testing.T, s store.Store) {
	ctx := context.Background()
	PutAll(t, s, "t", 6, 1, 4)
	n, err := s.Prune(ctx, "t", 4)
	if err != nil || n != 3 {
		t.Fatalf("Prune(4) = %d, %v; want 3 removed", n, err)
	}
	hist, _ := s.History(ctx, "t")
	if want := []int64{4, 5, 6}; !slices.Equal(IDs(hist), want) {
		t.Fatalf("History after Prune = %v, want %v", IDs(hist), want)
	}
	cps, err := s.Load(ctx, "t", 0)
	if err != nil || !slices.Equal(IDs(cps), []int64{4, 5, 6}) {
		t.Fatalf("Load after Prune = %v, %v", IDs(cps), err)
	}
	if _, err := s.Load(ctx, "t", 2); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Load of a pruned id = %v, want store.ErrNotFound", err)
	}
	if err := s.Put(ctx, Checkpoint("t", 7, false)); err != nil {
		t.Fatalf("Put after Prune: %v", err)
	}
	if n, _ := s.Prune(ctx, "t", 100); n != 3 {
		t.Errorf("Prune past the newest removed %d, want 3 (the newest stays)", n)
	}
	if hist, _ := s.History(ctx, "t"); !slices.Equal(IDs(hist), []int64{7}) {
		t.Errorf("History = %v, want [7]", IDs(hist))
	}
	if _, err := s.Prune(ctx, "nope", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Prune of an unknown thread = %v", err)
	}
}
