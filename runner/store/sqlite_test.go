package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, dsn, wantErr string
	}{
		{"memory", "memory:", ""},
		{"sqlite", "sqlite:" + filepath.Join(dir, "x", "a.db"), ""},
		{"sqlite sync full", "sqlite:" + filepath.Join(dir, "b.db") + "?sync=full", ""},
		{"sqlite sync normal, busy timeout", "sqlite:" + filepath.Join(dir, "c.db") + "?sync=NORMAL&busy_timeout=2s", ""},
		{"no scheme", "runner.db", "no scheme; want memory: or sqlite:PATH"},
		{"unknown scheme", "postgres://x", `unknown scheme "postgres"; want memory: or sqlite:PATH`},
		{"memory with a path", "memory:x", "takes no path"},
		{"sqlite without a path", "sqlite:", "needs a path"},
		{"sqlite in memory", "sqlite::memory:", "use memory:"},
		{"sqlite bad sync", "sqlite:" + filepath.Join(dir, "d.db") + "?sync=off", "want normal or full"},
		{"sqlite bad timeout", "sqlite:" + filepath.Join(dir, "d.db") + "?busy_timeout=x", "want a duration"},
		{"sqlite unknown option", "sqlite:" + filepath.Join(dir, "d.db") + "?cache=shared", `unknown option "cache"; want sync or busy_timeout`},
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
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "runner.db")
	s, err := Open(dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	putAll(t, s, "t", 5, 3)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = openTest(t, dsn)
	got, err := s.Load(context.Background(), "t", 0)
	if err != nil {
		t.Fatalf("Load after reopen: %v", err)
	}
	if want := []int64{3, 4, 5}; !slices.Equal(ids(got), want) {
		t.Errorf("Load after reopen ids = %v, want %v", ids(got), want)
	}
	if err := s.Put(context.Background(), checkpoint("t", 6, false)); err != nil {
		t.Errorf("Put after reopen: %v", err)
	}
	if err := s.Put(context.Background(), checkpoint("t", 6, false)); !errors.Is(err, ErrConflict) {
		t.Errorf("duplicate Put after reopen err = %v, want ErrConflict", err)
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
	s, err := Open("sqlite:" + path)
	if err == nil {
		s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "schema version 99 is newer") {
		t.Errorf("Open of a newer schema err = %v, want a schema version error", err)
	}
}
