package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// RunRunStore runs the RunStore suite on fresh stores from open, each
// closed by open's caller (use t.Cleanup).
func RunRunStore(t *testing.T, open func(t *testing.T) store.RunStore) {
	cases := []struct {
		name string
		run  func(t *testing.T, s store.RunStore)
	}{
		{"thread records: create, read, update, conflict", testThreadRecords},
		{"thread records are listed per tenant, newest first", testThreadRecordList},
		{"runs: create, read, list, status", testRuns},
		{"an idempotency key gives back the first run", testIdempotency},
		{"a run created with its thread: both or neither", testCreateRunThread},
		{"events are numbered from 1 and read after an id", testEvents},
		{"a batch larger than one statement keeps its order", testLargeBatch},
		{"concurrent batches get distinct ids, each batch unsplit", testConcurrentEvents},
		{"a run's end sets its status with its last events", testEndRun},
		{"deleting a thread record removes its runs and events", testDeleteThreadRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
	}
}

var ctx = context.Background()

func testThreadRecords(t *testing.T, s store.RunStore) {
	created := time.Unix(1700000000, 5).UTC()
	rec := &store.ThreadRecord{ID: "t1", Tenant: "acme", Metadata: json.RawMessage(`{"a":1}`), CreatedAt: created}
	if err := s.CreateThread(ctx, rec); err != nil {
		t.Fatalf("CreateThread: %v", err)
	}
	if err := s.CreateThread(ctx, &store.ThreadRecord{ID: "t1"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second CreateThread err = %v, want ErrConflict", err)
	}
	got, err := s.Thread(ctx, "t1")
	if err != nil {
		t.Fatalf("Thread: %v", err)
	}
	if got.Tenant != "acme" || string(got.Metadata) != `{"a":1}` || !got.CreatedAt.Equal(created) || !got.UpdatedAt.Equal(created) {
		t.Errorf("Thread = %+v", got)
	}
	later := created.Add(time.Hour)
	if err := s.UpdateThread(ctx, &store.ThreadRecord{ID: "t1", Metadata: json.RawMessage(`{"b":2}`), UpdatedAt: later}); err != nil {
		t.Fatalf("UpdateThread: %v", err)
	}
	got, _ = s.Thread(ctx, "t1")
	if string(got.Metadata) != `{"b":2}` || !got.UpdatedAt.Equal(later) || got.Tenant != "acme" {
		t.Errorf("after UpdateThread = %+v", got)
	}
	for name, err := range map[string]error{
		"Thread":       second(s.Thread(ctx, "nope")),
		"UpdateThread": s.UpdateThread(ctx, &store.ThreadRecord{ID: "nope"}),
		"DeleteThread": s.DeleteThread(ctx, "nope"),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of an unknown thread err = %v, want ErrNotFound", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func testThreadRecordList(t *testing.T, s store.RunStore) {
	for i, tenant := range []string{"a", "b", "a"} {
		rec := &store.ThreadRecord{ID: fmt.Sprint("t", i), Tenant: tenant, CreatedAt: time.Unix(1700000000+int64(i), 0)}
		if err := s.CreateThread(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ThreadRecords(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"t2", "t0"}) {
		t.Errorf("ThreadRecords(a) = %v, want [t2 t0]", ids)
	}
}

// newRun is run id on thread, created at second i.
func newRun(id, thread string, i int64) *store.RunRecord {
	return &store.RunRecord{ID: id, Thread: thread, Tenant: "acme", Assistant: "graph", Status: store.RunPending,
		MultitaskStrategy: "reject", Kwargs: json.RawMessage(`{"input":{"x":1}}`), Metadata: json.RawMessage(`{"m":true}`),
		CreatedAt: time.Unix(1700000000+i, 0).UTC()}
}

func testRuns(t *testing.T, s store.RunStore) {
	for i, id := range []string{"r2", "r1", "r3"} {
		thread := "t"
		if id == "r3" {
			thread = "u"
		}
		if _, created, err := s.CreateRun(ctx, newRun(id, thread, int64(i)), nil); err != nil || !created {
			t.Fatalf("CreateRun(%s) = %v, %v", id, created, err)
		}
	}
	if _, _, err := s.CreateRun(ctx, newRun("r1", "t", 9), nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateRun of an existing id err = %v, want ErrConflict", err)
	}
	got, err := s.Run(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if want := newRun("r1", "t", 1); got.Assistant != want.Assistant || got.Status != want.Status || got.Tenant != want.Tenant ||
		string(got.Kwargs) != string(want.Kwargs) || string(got.Metadata) != string(want.Metadata) ||
		got.MultitaskStrategy != "reject" || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
	runs, _ := s.Runs(ctx, "t")
	if ids := runIDs(runs); !slices.Equal(ids, []string{"r2", "r1"}) {
		t.Errorf("Runs(t) = %v, want [r2 r1]", ids)
	}
	if err := s.SetRunStatus(ctx, "r1", store.RunRunning); err != nil {
		t.Fatal(err)
	}
	running, _ := s.RunsWithStatus(ctx, store.RunRunning, store.RunError)
	if ids := runIDs(running); !slices.Equal(ids, []string{"r1"}) {
		t.Errorf("RunsWithStatus(running) = %v, want [r1]", ids)
	}
	if err := s.DeleteRun(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Run":          second(s.Run(ctx, "r1")),
		"SetRunStatus": s.SetRunStatus(ctx, "r1", store.RunError),
		"DeleteRun":    s.DeleteRun(ctx, "r1"),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of a deleted run err = %v, want ErrNotFound", name, err)
		}
	}
}

func runIDs(runs []store.RunRecord) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func testIdempotency(t *testing.T, s store.RunStore) {
	a := newRun("r1", "t", 0)
	a.IdempotencyKey = "k"
	if _, created, err := s.CreateRun(ctx, a, nil); err != nil || !created {
		t.Fatalf("CreateRun = %v, %v", created, err)
	}
	b := newRun("r2", "t", 1)
	b.IdempotencyKey = "k"
	got, created, err := s.CreateRun(ctx, b, nil)
	if err != nil || created || got.ID != "r1" {
		t.Errorf("CreateRun with the same key = %v, %v, %v; want r1, false", got, created, err)
	}
	c := newRun("r3", "t", 2)
	c.IdempotencyKey, c.Tenant = "k", "other"
	if _, created, err := s.CreateRun(ctx, c, nil); err != nil || !created {
		t.Errorf("CreateRun with the key of another tenant = %v, %v; want created", created, err)
	}
}

func testCreateRunThread(t *testing.T, s store.RunStore) {
	if _, _, err := s.CreateRun(ctx, newRun("r0", "t0", 0), &store.ThreadRecord{ID: "other"}); err == nil {
		t.Error("CreateRun with the record of another thread succeeded, want an error")
	}
	for _, key := range []string{"", "k"} { // the group commit's path and the key's
		t.Run("key "+key, func(t *testing.T) {
			id := func(name string) string { return name + key }
			run := func(name, thread string, i int64) *store.RunRecord {
				r := newRun(id(name), id(thread), i)
				r.IdempotencyKey = key
				return r
			}
			thread := func(name string) *store.ThreadRecord {
				return &store.ThreadRecord{ID: id(name), Tenant: "acme", Metadata: json.RawMessage(`{"graph_id":"g"}`)}
			}
			if _, created, err := s.CreateRun(ctx, run("r1", "t", 0), thread("t")); err != nil || !created {
				t.Fatalf("CreateRun with its thread = %v, %v", created, err)
			}
			if got, err := s.Thread(ctx, id("t")); err != nil || got.Tenant != "acme" || string(got.Metadata) != `{"graph_id":"g"}` {
				t.Errorf("Thread = %+v, %v; want the record created with the run", got, err)
			}
			r2 := run("r2", "t", 1)
			r2.IdempotencyKey = ""
			_, _, err := s.CreateRun(ctx, r2, thread("t"))
			if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "thread") {
				t.Errorf("CreateRun with a thread that exists: err = %v, want ErrConflict naming the thread", err)
			}
			if _, err := s.Run(ctx, id("r2")); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Run(r2) err = %v: written though its thread existed", err)
			}
			r1 := run("r1", "u", 2)
			r1.IdempotencyKey = ""
			if _, _, err := s.CreateRun(ctx, r1, thread("u")); !errors.Is(err, store.ErrConflict) {
				t.Errorf("CreateRun of a run ID taken: err = %v, want ErrConflict", err)
			}
			if _, err := s.Thread(ctx, id("u")); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Thread(u) err = %v: written though its run's ID was taken", err)
			}
			if key == "" {
				return
			}
			got, created, err := s.CreateRun(ctx, run("r3", "v", 3), thread("v"))
			if err != nil || created || got.ID != id("r1") {
				t.Errorf("CreateRun with a key replayed = %v, %v, %v; want r1, not created", got, created, err)
			}
			if _, err := s.Thread(ctx, id("v")); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Thread(v) err = %v: written for a key replayed", err)
			}
		})
	}
}

// batch is n events named event, with data {"i":from}, {"i":from+1}…
func batch(event string, from, n int) []store.EventInput {
	out := make([]store.EventInput, n)
	for i := range out {
		out[i] = store.EventInput{Event: event, Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, from+i))}
	}
	return out
}

func testEvents(t *testing.T, s store.RunStore) {
	if _, _, err := s.CreateRun(ctx, newRun("r", "t", 0), nil); err != nil {
		t.Fatal(err)
	}
	if seq, err := s.AppendEvents(ctx, "r", batch("values", 1, 1)); err != nil || seq != 1 {
		t.Fatalf("AppendEvents of one = %d, %v; want 1", seq, err)
	}
	if seq, err := s.AppendEvents(ctx, "r", batch("values", 2, 2)); err != nil || seq != 3 {
		t.Fatalf("AppendEvents of two = %d, %v; want 3", seq, err)
	}
	evs, err := s.Events(ctx, "r", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Seq != 2 || string(evs[1].Data) != `{"i":3}` || evs[1].Event != "values" || evs[0].Run != "r" {
		t.Errorf("Events after 1 = %+v", evs)
	}
	if evs, _ := s.Events(ctx, "r", 2); len(evs) != 1 || evs[0].Seq != 3 || string(evs[0].Data) != `{"i":3}` {
		t.Errorf("Events after 2, within the batch of two = %+v, want the third alone", evs)
	}
	if evs, _ := s.Events(ctx, "r", 3); len(evs) != 0 {
		t.Errorf("Events after the last = %+v, want none", evs)
	}
	if seq, err := s.AppendEvents(ctx, "r", nil); err != nil || seq != 0 {
		t.Errorf("AppendEvents of none = %d, %v; want 0, nil", seq, err)
	}
	if evs, _ := s.Events(ctx, "r", 0); len(evs) != 3 {
		t.Errorf("%d events after an empty batch, want 3", len(evs))
	}
	if _, err := s.AppendEvents(ctx, "nope", batch("values", 1, 1)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AppendEvents to an unknown run err = %v, want ErrNotFound", err)
	}
}

func testLargeBatch(t *testing.T, s store.RunStore) {
	if _, _, err := s.CreateRun(ctx, newRun("r", "t", 0), nil); err != nil {
		t.Fatal(err)
	}
	const n = 1234
	if seq, err := s.AppendEvents(ctx, "r", batch("debug", 1, n)); err != nil || seq != n {
		t.Fatalf("AppendEvents of %d = %d, %v", n, seq, err)
	}
	evs, err := s.Events(ctx, "r", 0)
	if err != nil || len(evs) != n {
		t.Fatalf("Events = %d events, %v; want %d", len(evs), err, n)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) || string(ev.Data) != fmt.Sprintf(`{"i":%d}`, i+1) {
			t.Fatalf("event %d = %d %s", i, ev.Seq, ev.Data)
		}
	}
}

func testConcurrentEvents(t *testing.T, s store.RunStore) {
	if _, _, err := s.CreateRun(ctx, newRun("r", "t", 0), nil); err != nil {
		t.Fatal(err)
	}
	const writers, batches, size = 8, 5, 3
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				if _, err := s.AppendEvents(ctx, "r", batch("debug", (w*batches+b)*size, size)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	evs, _ := s.Events(ctx, "r", 0)
	if len(evs) != writers*batches*size {
		t.Fatalf("%d events, want %d", len(evs), writers*batches*size)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		if first := i%size == 0; first != (dataIndex(t, ev)%size == 0) {
			t.Fatalf("event %d is %s, at a batch's %s: a batch was split", ev.Seq, ev.Data, map[bool]string{true: "start", false: "middle"}[first])
		} else if !first && dataIndex(t, ev) != dataIndex(t, evs[i-1])+1 {
			t.Fatalf("event %d is %s after %s: a batch was split", ev.Seq, ev.Data, evs[i-1].Data)
		}
	}
}

// dataIndex is i of an event whose data is {"i":i}.
func dataIndex(t *testing.T, ev store.RunEvent) int {
	var d struct{ I int }
	if err := json.Unmarshal(ev.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d.I
}

func testDeleteThreadRecord(t *testing.T, s store.RunStore) {
	if err := s.CreateThread(ctx, &store.ThreadRecord{ID: "t"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r1", "r2"} {
		if _, _, err := s.CreateRun(ctx, newRun(id, "t", 0), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendEvents(ctx, id, batch("values", 1, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteThread(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if runs, _ := s.Runs(ctx, "t"); len(runs) != 0 {
		t.Errorf("runs after DeleteThread: %v", runIDs(runs))
	}
	if evs, _ := s.Events(ctx, "r1", 0); len(evs) != 0 {
		t.Errorf("events after DeleteThread: %+v", evs)
	}
}

// testEndRun: a run's end sets its status and appends its last events;
// an unknown run is not found, and nothing is written for it; without
// events it only sets the status.
func testEndRun(t *testing.T, s store.RunStore) {
	if _, _, err := s.CreateRun(ctx, newRun("r", "t", 0), nil); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Run(ctx, "r")
	if _, err := s.AppendEvents(ctx, "r", batch("values", 1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRun(ctx, "r", store.RunSuccess, append(batch("values", 3, 1), store.EventInput{Event: "end"})); err != nil {
		t.Fatalf("EndRun: %v", err)
	}
	got, err := s.Run(ctx, "r")
	if err != nil || got.Status != store.RunSuccess || !got.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("run after EndRun = %+v, %v; want success, updated", got, err)
	}
	evs, _ := s.Events(ctx, "r", 0)
	if len(evs) != 4 || evs[2].Seq != 3 || evs[3].Event != "end" {
		t.Errorf("events after EndRun = %+v, want 2 + values and end", evs)
	}
	if evs, _ := s.Events(ctx, "r", 3); len(evs) != 1 || evs[0].Seq != 4 || evs[0].Event != "end" || evs[0].Data != nil {
		t.Errorf("events after 3, within the end's = %+v, want the end alone", evs)
	}
	if err := s.EndRun(ctx, "nope", store.RunSuccess, batch("end", 1, 1)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("EndRun of an unknown run err = %v, want ErrNotFound", err)
	}
	if evs, _ := s.Events(ctx, "nope", 0); len(evs) != 0 {
		t.Errorf("events of an unknown run after EndRun = %+v", evs)
	}
	if err := s.EndRun(ctx, "r", store.RunError, nil); err != nil {
		t.Fatalf("EndRun without events: %v", err)
	}
	if got, _ := s.Run(ctx, "r"); got.Status != store.RunError {
		t.Errorf("status after EndRun without events = %s, want error", got.Status)
	}
	const n = 1234 // more than one statement's batch
	if err := s.EndRun(ctx, "r", store.RunSuccess, batch("debug", 1, n)); err != nil {
		t.Fatalf("EndRun of %d events: %v", n, err)
	}
	if got, _ := s.Run(ctx, "r"); got.Status != store.RunSuccess {
		t.Errorf("status after a large EndRun = %s, want success", got.Status)
	}
	evs, _ = s.Events(ctx, "r", 0)
	if len(evs) != 4+n {
		t.Fatalf("%d events after a large EndRun, want %d", len(evs), 4+n)
	}
	for i, ev := range evs[4:] {
		if ev.Seq != int64(5+i) || string(ev.Data) != fmt.Sprintf(`{"i":%d}`, 1+i) {
			t.Fatalf("event %d of the second end = %d %s", i, ev.Seq, ev.Data)
		}
	}
}
