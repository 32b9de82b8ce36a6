package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openTest(t, filepath.Join(t.TempDir(), "a", "b", "runner.db"))
	})
}

// openTest opens dsn, closed when the test ends.
func openTest(t *testing.T, dsn string) store.Store {
	t.Helper()
	s, err := Open(dsn)
	if err != nil {
		t.Fatalf("Open(%q): %v", dsn, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, dsn, wantErr string
	}{
		{"path", filepath.Join(dir, "x", "a.db"), ""},
		{"sync full", filepath.Join(dir, "b.db") + "?sync=full", ""},
		{"sync normal, busy timeout", filepath.Join(dir, "c.db") + "?sync=NORMAL&busy_timeout=2s", ""},
		{"no path", "", "needs a path"},
		{"in memory", ":memory:", "use memory:"},
		{"bad sync", filepath.Join(dir, "d.db") + "?sync=off", "want normal or full"},
		{"bad timeout", filepath.Join(dir, "d.db") + "?busy_timeout=x", "want a duration"},
		{"unknown option", filepath.Join(dir, "d.db") + "?cache=shared", `unknown option "cache"; want sync or busy_timeout`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.dsn)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Open(%q): %v", tc.dsn, err)
				}
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Open(%q) err = %v, want one containing %q", tc.dsn, err, tc.wantErr)
			}
		})
	}
}

func TestSQLiteReopen(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "runner.db")
	s, err := Open(dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	storetest.PutAll(t, s, "t", 5, 3)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = openTest(t, dsn)
	got, err := s.Load(context.Background(), "t", 0)
	if err != nil {
		t.Fatalf("Load after reopen: %v", err)
	}
	if want := []int64{3, 4, 5}; !slices.Equal(storetest.IDs(got), want) {
		t.Errorf("Load after reopen ids = %v, want %v", storetest.IDs(got), want)
	}
	if err := s.Put(context.Background(), storetest.Checkpoint("t", 6, false)); err != nil {
		t.Errorf("Put after reopen: %v", err)
	}
	if err := s.Put(context.Background(), storetest.Checkpoint("t", 6, false)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate Put after reopen err = %v, want store.ErrConflict", err)
	}
}

func TestSQLiteNewerSchema(t *testing.T) {
	path := oldFile(t, `PRAGMA user_version = 99`)
	s, err := Open(path)
	if err == nil {
		s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "schema version 99 is newer") {
		t.Errorf("Open of a newer schema err = %v, want a schema version error", err)
	}
}

// oldFile makes a database file as an older (or newer) build left it:
// queries run on a plain connection, without the store's migrations.
func oldFile(t *testing.T, queries ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runner.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range queries {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return path
}

func TestRunStoreConformance(t *testing.T) {
	storetest.RunRunStore(t, func(t *testing.T) store.RunStore {
		return openTest(t, filepath.Join(t.TempDir(), "runner.db")).(store.RunStore)
	})
}

func TestAssistantStoreConformance(t *testing.T) {
	storetest.RunAssistantStore(t, func(t *testing.T) store.AssistantStore {
		return openTest(t, filepath.Join(t.TempDir(), "runner.db")).(store.AssistantStore)
	})
}

func TestApprovalStoreConformance(t *testing.T) {
	storetest.RunApprovalStore(t, func(t *testing.T) store.Store {
		return openTest(t, filepath.Join(t.TempDir(), "runner.db"))
	})
}

func TestAuditStoreConformance(t *testing.T) {
	storetest.RunAuditStore(t, func(t *testing.T) store.Store {
		return openTest(t, filepath.Join(t.TempDir(), "runner.db"))
	})
}

func TestWebhookStoreConformance(t *testing.T) {
	storetest.RunWebhookStore(t, func(t *testing.T) store.Store {
		return openTest(t, filepath.Join(t.TempDir(), "runner.db"))
	})
}

func TestItemStoreConformance(t *testing.T) {
	storetest.RunItemStore(t, func(t *testing.T) store.ItemStore {
		return openTest(t, filepath.Join(t.TempDir(), "runner.db")).(store.ItemStore)
	})
}

func TestCronStoreConformance(t *testing.T) {
	storetest.RunCronStore(t, func(t *testing.T) store.CronStore {
		return openTest(t, filepath.Join(t.TempDir(), "runner.db")).(store.CronStore)
	})
}

// TestSQLiteMigrateV1 opens a file of schema version 1 holding a
// checkpoint: it is migrated (to a rowid checkpoints table since version
// 4), keeps the checkpoint and the thread's summary, refuses a repeated
// id, and takes run records and leases.
func TestSQLiteMigrateV1(t *testing.T) {
	path := oldFile(t, sqliteMigrations[0], `PRAGMA user_version = 1`,
		`INSERT INTO checkpoints VALUES ('t', 1, 0, 1, 'n', 'm', 'running', 'p', 'h', '', 1700000000000000000, NULL, NULL, '{"n":1}', NULL)`)
	s := openTest(t, path)
	ctx := context.Background()
	if cps, err := s.Load(ctx, "t", 0); err != nil || len(cps) != 1 || string(cps[0].Writes) != `{"n":1}` {
		t.Fatalf("Load of the version 1 checkpoint = %v, %v", cps, err)
	}
	if ts, err := s.Threads(ctx, 0); err != nil || len(ts) != 1 || ts[0].ID != "t" || ts[0].Steps != 1 {
		t.Errorf("Threads after migration = %+v, %v", ts, err)
	}
	if err := s.Put(ctx, storetest.Checkpoint("t", 1, false)); !errors.Is(err, store.ErrConflict) {
		t.Errorf("Put of id 1 again after migration err = %v, want store.ErrConflict", err)
	}
	l, err := s.Acquire(ctx, "t", "me", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after migration: %v", err)
	}
	cp := storetest.Checkpoint("t", 2, false)
	cp.Lease = l.Token
	if err := s.Put(ctx, cp); err != nil {
		t.Fatalf("Put under a lease after migration: %v", err)
	}
	if err := s.(store.RunStore).CreateThread(ctx, &store.ThreadRecord{ID: "new"}); err != nil {
		t.Errorf("CreateThread after migration: %v", err)
	}
	var version int
	if err := s.(*sqliteStore).w.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != len(sqliteMigrations) {
		t.Errorf("user_version = %d, %v; want %d", version, err, len(sqliteMigrations))
	}
}

// TestWALCheckpointedInBackground: with sync=normal the store's
// checkpointer copies the log into the database file as writes go on,
// before the log reaches the 16,000 pages at which the writer checkpoints
// (2*walPages small Puts are some 10,000 pages, four times walPages), and
// the log restarts instead of growing (6*walPages make a 125 MB log
// without checkpoints).
func TestWALCheckpointedInBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runner.db")
	s := openTest(t, path)
	size := func(name string) int64 {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	empty := size(path)
	ctx := context.Background()
	put := func(from, to int) {
		for i := from; i <= to; i++ {
			if err := s.Put(ctx, storetest.Checkpoint("t", int64(i), false)); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(1, 2*walPages)
	for deadline := time.Now().Add(10 * time.Second); size(path) < empty+64<<10; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the database file holds %d bytes after %d Puts, %d before: no checkpoint copied the log into it", size(path), 2*walPages, empty)
		}
	}
	put(2*walPages+1, 6*walPages)
	if wal := size(path + "-wal"); wal > 70<<20 {
		t.Errorf("the log is %d bytes, want it restarted within 16,000 pages (< 70 MB)", wal)
	}
}

// TestPutAfterClose: a Put that comes after the store closed fails; it
// does not bring the process down.
func TestPutAfterClose(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "runner.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 100; i++ {
		if err := s.Put(context.Background(), storetest.Checkpoint("t", int64(i), false)); err == nil {
			t.Fatalf("Put %d after Close: no error", i)
		}
	}
}

// TestThreadKeysInOrder: threads get their keys in the order of their
// first checkpoints (or leases), whatever their ids (so the key entries of threads
// running at once sit together); a deleted thread's key goes with it,
// and the thread started again gets a new one, after the others.
func TestThreadKeysInOrder(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "runner.db"))
	ctx := context.Background()
	keyOrder := func() []string {
		rows, err := s.(*sqliteStore).r.Query(`SELECT id FROM thread_keys ORDER BY key`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	for _, id := range []string{"zz", "aa", "mm"} {
		if err := s.Put(ctx, storetest.Checkpoint(id, 1, false)); err != nil {
			t.Fatal(err)
		}
	}
	if got := keyOrder(); !slices.Equal(got, []string{"zz", "aa", "mm"}) {
		t.Fatalf("keys in the order %v, want the order of the first checkpoints", got)
	}
	if err := s.Delete(ctx, "aa"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, storetest.Checkpoint("aa", 1, false)); err != nil {
		t.Fatal(err)
	}
	if got := keyOrder(); !slices.Equal(got, []string{"zz", "mm", "aa"}) {
		t.Fatalf("keys after a delete and a new start: %v, want [zz mm aa]", got)
	}
}

// TestPutWithoutTempTable checks that a Put's statement inserts its row
// directly: an INSERT … SELECT into checkpoints (a table with a trigger)
// goes through a temporary table, copying the blobs twice, which made a
// served run's Puts a sixth slower.
func TestPutWithoutTempTable(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "runner.db")).(*sqliteStore)
	if ops := opcodes(t, s.r, sqlitePut, 16); slices.Contains(ops, "OpenEphemeral") {
		t.Errorf("the Put's statement opens a temporary table: %v", ops)
	}
}

// opcodes are the opcodes SQLite compiles query, of n parameters, into.
func opcodes(t *testing.T, db *sql.DB, query string, n int) []string {
	t.Helper()
	rows, err := db.Query("EXPLAIN "+query, make([]any, n)...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ops []string
	for rows.Next() {
		var addr int
		var op string
		var p1, p2, p3, p4, p5, comment any
		if err := rows.Scan(&addr, &op, &p1, &p2, &p3, &p4, &p5, &comment); err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ops
}

// TestAppendWithoutTempTable checks that an append of events inserts its
// rows directly, without a temporary table or a sort.
func TestAppendWithoutTempTable(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "runner.db")).(*sqliteStore)
	for _, op := range opcodes(t, s.r, sqliteAppend, 4) {
		if op == "OpenEphemeral" || op == "SorterOpen" {
			t.Errorf("the append's statement runs %s", op)
		}
	}
}

// TestSQLiteMigrateV7 opens a file of schema version 7 holding a run with
// two events: an append numbers its events after them.
func TestSQLiteMigrateV7(t *testing.T) {
	path := oldFile(t, append(slices.Clone(sqliteMigrations[:7]), `PRAGMA user_version = 7`,
		`INSERT INTO runs VALUES ('r', 't', '', 'a', 'running', 'reject', '', NULL, NULL, 1, 1)`,
		`INSERT INTO run_events VALUES ('r', 1, 'metadata', NULL, 1), ('r', 2, 'values', NULL, 1)`)...)
	s := openTest(t, path).(store.RunStore)
	ctx := context.Background()
	if seq, err := s.AppendEvents(ctx, "r", []store.EventInput{{Event: "end"}}); err != nil || seq != 3 {
		t.Fatalf("AppendEvents after migration = %d, %v; want 3", seq, err)
	}
	if evs, err := s.Events(ctx, "r", 0); err != nil || len(evs) != 3 || evs[2].Event != "end" {
		t.Errorf("Events after migration = %+v, %v", evs, err)
	}
}

// TestSQLiteMigrateV9 opens a file of schema version 9 holding a run's
// first two events, one row each: the events appended after them, one
// row for the append, follow them in one log, from any event on, and
// the run's deletion removes both.
func TestSQLiteMigrateV9(t *testing.T) {
	path := oldFile(t, append(slices.Clone(sqliteMigrations[:9]), `PRAGMA user_version = 9`,
		`INSERT INTO runs VALUES ('r', 't', '', 'a', 'running', 'reject', '', NULL, NULL, 1, 1, 2)`,
		`INSERT INTO run_events VALUES ('r', 1, 'metadata', '{"m":1}', 1), ('r', 2, 'values', NULL, 1)`)...)
	s := openTest(t, path).(store.RunStore)
	ctx := context.Background()
	if seq, err := s.AppendEvents(ctx, "r", []store.EventInput{{Event: "values", Data: json.RawMessage(`{"v":3}`)}, {Event: "end"}}); err != nil || seq != 4 {
		t.Fatalf("AppendEvents after migration = %d, %v; want 4", seq, err)
	}
	var rows, batches int
	if err := s.(*sqliteStore).r.QueryRow(`SELECT (SELECT count(*) FROM run_events), (SELECT count(*) FROM run_event_batches)`).Scan(&rows, &batches); err != nil || rows != 2 || batches != 1 {
		t.Errorf("after the append: %d event rows and %d batches (%v); want the old 2 and one batch for the append", rows, batches, err)
	}
	var got []string
	for after := range int64(5) {
		evs, err := s.Events(ctx, "r", after)
		if err != nil {
			t.Fatalf("Events after %d: %v", after, err)
		}
		var line []string
		for _, ev := range evs {
			line = append(line, fmt.Sprintf("%d %s %s", ev.Seq, ev.Event, ev.Data))
		}
		got = append(got, strings.Join(line, ", "))
	}
	want := []string{`1 metadata {"m":1}, 2 values , 3 values {"v":3}, 4 end `,
		`2 values , 3 values {"v":3}, 4 end `, `3 values {"v":3}, 4 end `, `4 end `, ``}
	if !slices.Equal(got, want) {
		t.Errorf("Events after 0 to 4:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := s.EndRun(ctx, "r", store.RunSuccess, []store.EventInput{{Event: "end"}}); err != nil {
		t.Fatal(err)
	}
	if evs, err := s.Events(ctx, "r", 3); err != nil || len(evs) != 2 || evs[1].Seq != 5 {
		t.Errorf("Events after 3, after the run's end = %+v, %v; want 4 and 5", evs, err)
	}
	if err := s.DeleteRun(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.(*sqliteStore).r.QueryRow(`SELECT (SELECT count(*) FROM run_events) + (SELECT count(*) FROM run_event_batches)`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d events left after the run's deletion (%v)", left, err)
	}
}

// TestEventBatchEncoding round-trips batches through encodeEvents and
// decodeEvents, and checks that a batch cut short or too long is an
// error, not a panic or a wrong event.
func TestEventBatchEncoding(t *testing.T) {
	events := []store.EventInput{{Event: "metadata", Data: json.RawMessage(`{"run_id":"r"}`)},
		{Event: ""}, {Event: "values", Data: json.RawMessage(strings.Repeat("x", 300))}, {Event: "end"}}
	b := encodeEvents(events)
	at := time.Unix(0, 7).UTC()
	out, err := decodeEvents(nil, "r", 5, 8, 0, b, at)
	if err != nil || len(out) != len(events) {
		t.Fatalf("decode = %+v, %v", out, err)
	}
	for i, ev := range out {
		if ev.Seq != int64(5+i) || ev.Event != events[i].Event || string(ev.Data) != string(events[i].Data) || ev.Run != "r" || !ev.CreatedAt.Equal(at) {
			t.Errorf("event %d = %+v, want %+v", i, ev, events[i])
		}
	}
	kept := slices.Clone(b)
	if out[0].Data = append(out[0].Data, 'z'); !slices.Equal(b, kept) {
		t.Errorf("appending to an event's data wrote over the batch")
	}
	if out, err := decodeEvents(nil, "r", 5, 8, 7, b, at); err != nil || len(out) != 1 || out[0].Seq != 8 {
		t.Errorf("decode after 7 = %+v, %v; want event 8 alone", out, err)
	}
	alike := make([]store.EventInput, 16)
	for i := range alike {
		alike[i] = store.EventInput{Event: "values@checkpoint", Data: json.RawMessage(fmt.Sprintf(`{"thread":"t-0123456789","checkpoint":%d,"assistant":"a"}`, i+1))}
	}
	if ab := encodeEvents(alike); len(ab) > 100+16*8 {
		t.Errorf("16 events alike but for a number take %d bytes", len(ab))
	} else if out, err := decodeEvents(nil, "r", 1, 16, 0, ab, at); err != nil || string(out[15].Data) != string(alike[15].Data) || out[15].Event != alike[15].Event {
		t.Errorf("decode of events alike = %v, %v", out, err)
	}
	for _, bad := range []struct {
		b           []byte
		first, last int64
	}{{b[:len(b)-1], 5, 8}, {b, 5, 9}, {b, 5, 7}, {[]byte{0xff}, 1, 1}, {nil, 1, 1}} {
		if _, err := decodeEvents(nil, "r", bad.first, bad.last, 0, bad.b, at); err == nil {
			t.Errorf("decode of %d bytes as events %d to %d: no error", len(bad.b), bad.first, bad.last)
		}
	}
}

// TestSQLiteMigrateV8 opens a file of schema version 8 holding two
// leases, one of a thread with checkpoints and one of a thread without:
// both keep their holder and token, a Put under the lease is taken, and
// the released lease's next token follows on.
func TestSQLiteMigrateV8(t *testing.T) {
	future := time.Now().Add(time.Hour).UnixNano()
	path := oldFile(t, append(slices.Clone(sqliteMigrations[:8]), `PRAGMA user_version = 8`,
		`INSERT INTO thread_keys (id) VALUES ('a')`,
		`INSERT INTO checkpoints (tkey, thread, id, parent, step, node, next, status, pipeline, config_hash, tenant, created_at)
			VALUES (1, 'a', 1, 0, 1, 'n', 'm', 'running', 'p', 'h', '', 1)`,
		fmt.Sprintf(`INSERT INTO leases VALUES ('a', 'x', 3, %d), ('b', 'y', 5, %d)`, future, future))...)
	s := openTest(t, path)
	ctx := context.Background()
	for th, want := range map[string]string{"a": "x", "b": "y"} {
		if _, err := s.Acquire(ctx, th, "z", time.Minute); !errors.Is(err, store.ErrLeased) || !strings.Contains(err.Error(), want) {
			t.Errorf("Acquire(%s) after migration: err = %v, want store.ErrLeased naming %s", th, err, want)
		}
	}
	cp := storetest.Checkpoint("a", 2, false)
	cp.Lease = 3
	if err := s.Put(ctx, cp); err != nil {
		t.Errorf("Put under the migrated lease: %v", err)
	}
	if err := s.Release(ctx, store.Lease{Thread: "b", Owner: "y", Token: 5}); err != nil {
		t.Errorf("Release of the migrated lease of a thread without checkpoints: %v", err)
	}
	if l, err := s.Acquire(ctx, "b", "z", time.Minute); err != nil || l.Token != 6 {
		t.Errorf("Acquire(b) after its release = %+v, %v; want token 6", l, err)
	}
}

// TestWritesFailWhole checks that every statement of the group commit
// fails as a whole transaction (OR ROLLBACK) or not at all (OR IGNORE),
// so SQLite keeps no statement journal for it (see putReq).
func TestWritesFailWhole(t *testing.T) {
	for _, q := range []string{sqlitePut, sqliteAddKey, sqliteAddChild, sqliteAcquire, sqliteRenew, sqliteCreateThread,
		sqliteUpdateThread, sqliteCreateRun, sqliteSetRunStatus, sqliteAppend, sqliteAppended, sqliteEnded} {
		if !strings.Contains(q, " OR ROLLBACK ") && !strings.Contains(q, " OR IGNORE ") {
			t.Errorf("no OR ROLLBACK or OR IGNORE in %s", q)
		}
	}
}
