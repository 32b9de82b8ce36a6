package sqlite

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/storetest"
)

// files are the database file at path and its log and shared memory.
func files(path string) []string { return []string{path, path + "-wal", path + "-shm"} }

// TestUnwritableAtOpen: a store opened on a file it cannot write reads
// (SQLite opens the file read-only), and its probe fails as
// store.ErrUnavailable, naming the file and what to check; repaired, it
// writes, without being opened again.
func TestUnwritableAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runner.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	storetest.PutAll(t, s, "t", 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	repair := storetest.Unwritable(t, files(path)...)
	s = openTest(t, path)
	ctx := context.Background()
	if h, err := s.History(ctx, "t"); err != nil || len(h) != 3 {
		t.Errorf("History of a store that cannot be written: %d checkpoints, %v", len(h), err)
	}
	err = s.(store.Prober).Probe(ctx)
	if msg := fmt.Sprint(err); !errors.Is(err, store.ErrUnavailable) || !strings.Contains(msg, "store: sqlite "+path+": ") ||
		!strings.Contains(msg, "writable by this process's user") {
		t.Errorf("Probe of a store that cannot be written: %v", err)
	}
	repair()
	if err := s.(store.Prober).Probe(ctx); err != nil {
		t.Errorf("Probe after the repair: %v", err)
	}
	if err := s.Put(ctx, storetest.Checkpoint("t", 4, false)); err != nil {
		t.Errorf("Put after the repair: %v", err)
	}
}

// TestWriterHeals: a writer's connection opened while the database file
// cannot be written is read-only for good (SQLite opens the file
// read-only when it cannot open it for writing); the pool opens one when
// it replaced the last, as it does one whose statement was interrupted.
// Its writes and probes fail as store.ErrUnavailable; once the file can
// be written again, the next write succeeds.
func TestWriterHeals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runner.db")
	s := openTest(t, path).(*sqliteStore)
	ctx := context.Background()
	storetest.PutAll(t, s, "t", 2)
	repair := storetest.Unwritable(t, path)
	dropWriter(t, s)
	for range 2 {
		if err := s.Put(ctx, storetest.Checkpoint("t", 3, false)); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Put to an unwritable file: %v", err)
		}
		if err := s.Probe(ctx); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Probe of an unwritable file: %v", err)
		}
	}
	repair()
	if err := s.Probe(ctx); err != nil {
		t.Errorf("Probe after the repair: %v", err)
	}
	if err := s.Put(ctx, storetest.Checkpoint("t", 3, false)); err != nil {
		t.Errorf("Put after the repair: %v", err)
	}
}

// dropWriter has the pool close the writer's connection, as it does one
// whose statement was interrupted (a request's context ending during a
// Delete, say); the next write opens another.
func dropWriter(t *testing.T, s *sqliteStore) {
	conn, err := s.w.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
}

// TestFullDisk fills a small disk: the write that does not fit fails as
// store.ErrFull, and so does a probe; the log was checkpointed as the
// disk filled, so the database, not the log, holds what was written.
// Once room is made, the store writes again, and the room goes to new
// checkpoints: the log, truncated, does not take it.
func TestFullDisk(t *testing.T) {
	const disk, room, step = 8 << 20, 2 << 20, 20 << 10
	dir := storetest.SmallDisk(t, disk)
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, room), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "runner.db")
	s := openTest(t, path)
	ctx := context.Background()
	writes := json.RawMessage(`"` + strings.Repeat("x", step) + `"`)
	id := int64(0)
	fill := func() (int, error) { // Puts at a server's pace until one fails
		for n := 0; ; n++ {
			cp := storetest.Checkpoint("t", id+1, false)
			cp.Writes = writes
			if err := s.Put(ctx, cp); err != nil {
				return n, err
			}
			id++
			time.Sleep(2 * time.Millisecond)
		}
	}
	size := func(name string) int64 {
		fi, err := os.Stat(name)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	if _, err := fill(); !errors.Is(err, store.ErrFull) {
		t.Fatalf("Put on a full disk: %v, want store.ErrFull", err)
	}
	if wal := size(path + "-wal"); wal > disk/10 {
		t.Errorf("the disk is full with a log of %d bytes beside a database of %d", wal, size(path))
	}
	if err := s.(store.Prober).Probe(ctx); !errors.Is(err, store.ErrFull) {
		t.Errorf("Probe on a full disk: %v, want store.ErrFull", err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if err := s.(store.Prober).Probe(ctx); err != nil {
		t.Errorf("Probe once there is room: %v", err)
	}
	n, err := fill()
	if want := room / step * 9 / 10; n < want || !errors.Is(err, store.ErrFull) {
		t.Errorf("%d Puts of %d bytes in the %d bytes made free, want %d or more; then %v", n, step, room, want, err)
	}
}
