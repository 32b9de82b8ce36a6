package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
	path := filepath.Join(t.TempDir(), "runner.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(path)
	if err == nil {
		s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "schema version 99 is newer") {
		t.Errorf("Open of a newer schema err = %v, want a schema version error", err)
	}
}

func TestRunStoreConformance(t *testing.T) {
	storetest.RunRunStore(t, func(t *testing.T) store.RunStore {
		return openTest(t, filepath.Join(t.TempDir(), "runner.db")).(store.RunStore)
	})
}

// TestSQLiteMigrateV1 opens a version 1 file: its checkpoints stay and
// the run tables are added.
func TestSQLiteMigrateV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runner.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(sqliteSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO checkpoints (thread, id, parent, step, node, next, status, pipeline, config_hash, tenant, created_at)
		VALUES ('old', 1, 0, 0, '', 'a', 'running', 'p', 'h', '', 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := openTest(t, path)
	if cps, err := s.Load(context.Background(), "old", 0); err != nil || len(cps) != 1 {
		t.Errorf("Load of a version 1 thread = %v, %v", cps, err)
	}
	rs := s.(store.RunStore)
	if err := rs.CreateThread(context.Background(), &store.ThreadRecord{ID: "new"}); err != nil {
		t.Errorf("CreateThread after migration: %v", err)
	}
}
