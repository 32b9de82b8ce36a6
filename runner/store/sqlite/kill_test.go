package sqlite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store/storetest"
)

// helperEnv names the database a TestHelperWriter child writes to.
const helperEnv = "STORE_TEST_HELPER_DB"

// killAfter is how many reported Puts the parent waits for before the kill.
const killAfter = 200

// TestHelperWriter is not a test: run by TestSQLiteSurvivesKill as a child
// process, it Puts checkpoints until killed, printing each ID once Put has
// returned. It stops by itself after a minute in case the parent is gone.
func TestHelperWriter(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("only run as a child of TestSQLiteSurvivesKill")
	}
	s, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	deadline := time.Now().Add(time.Minute)
	for id := int64(1); time.Now().Before(deadline); id++ {
		if err := s.Put(context.Background(), storetest.Checkpoint("t", id, id%25 == 0)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Println(id) // one write(2) on the unbuffered os.Stdout
	}
}

// TestSQLiteSurvivesKill SIGKILLs a child in the middle of its Puts and
// checks that every checkpoint it reported is there, contiguous and whole.
func TestSQLiteSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	path := filepath.Join(t.TempDir(), "runner.db")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reported := readIDs(t, bufio.NewScanner(out), cmd.Process)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("child exited cleanly after %d puts, want it killed", reported)
	}
	if reported < killAfter {
		t.Fatalf("child reported %d puts before it died, want %d", reported, killAfter)
	}
	checkContiguous(t, path, reported)
}

// readIDs reads the child's IDs, kills it after killAfter of them, then
// drains what it printed before dying; it returns the last ID reported.
func readIDs(t *testing.T, lines *bufio.Scanner, child *os.Process) int64 {
	t.Helper()
	var last int64
	killed := false
	for lines.Scan() {
		id, err := strconv.ParseInt(lines.Text(), 10, 64)
		if err != nil {
			continue // test framework output
		}
		if id != last+1 {
			t.Fatalf("child reported id %d after %d", id, last)
		}
		last = id
		if !killed && last >= killAfter {
			if err := child.Kill(); err != nil {
				t.Fatalf("kill: %v", err)
			}
			killed = true
		}
	}
	return last
}

// checkContiguous reopens the store and checks that thread t holds IDs
// 1..n or more, without gaps, each with its writes intact and loadable.
func checkContiguous(t *testing.T, dsn string, reported int64) {
	t.Helper()
	s := openTest(t, dsn)
	hist, err := s.History(context.Background(), "t")
	if err != nil {
		t.Fatalf("History after kill: %v", err)
	}
	if int64(len(hist)) < reported {
		t.Fatalf("after kill: %d checkpoints, want at least the %d reported", len(hist), reported)
	}
	t.Logf("child reported %d puts; the store holds %d", reported, len(hist))
	for i, cp := range hist {
		if cp.ID != int64(i+1) || cp.Parent != int64(i) {
			t.Fatalf("after kill: checkpoint %d has id %d parent %d, want %d %d", i, cp.ID, cp.Parent, i+1, i)
		}
	}
	for id := int64(1); id <= int64(len(hist)); id++ {
		cps, err := s.Load(context.Background(), "t", id)
		if err != nil {
			t.Fatalf("Load(t, %d) after kill: %v", id, err)
		}
		last := cps[len(cps)-1]
		var w struct{ N int64 }
		if err := json.Unmarshal(last.Writes, &w); err != nil || w.N != id {
			t.Fatalf("Load(t, %d) after kill: writes %q, want n=%d", id, last.Writes, id)
		}
	}
}
