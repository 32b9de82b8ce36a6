package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/storetest"
)

// urlEnv names the variable holding the URL of the server to test against.
const urlEnv = "RUNNER_TEST_POSTGRES"

// serverURL is the URL in urlEnv; without one the test is skipped, or
// fails under CI, which must run these tests.
func serverURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(urlEnv)
	switch {
	case u != "":
		return u
	case os.Getenv("CI") != "":
		t.Fatalf("%s is not set: CI must run the PostgreSQL tests (.ci/run starts a server)", urlEnv)
	default:
		t.Skipf("set %s=postgres://user@host:port/db?sslmode=disable to run the PostgreSQL tests", urlEnv)
	}
	return ""
}

// testDB is a schema of its own on the test server, dropped when the test
// ends: url opens the store in it, admin is a second connection.
type testDB struct {
	url    string
	name   string
	admin  *pgx.Conn
	server string
}

// newTestDB creates a uniquely named schema and a URL whose search_path
// and application_name are that schema.
func newTestDB(t testing.TB) *testDB {
	t.Helper()
	server := serverURL(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("connect to %s: %v", urlEnv, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	db := &testDB{name: "runner_test_" + hex.EncodeToString(b), admin: admin, server: server}
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+db.name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, `DROP SCHEMA `+db.name+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", db.name, err)
		}
		admin.Close(ctx)
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("%s: %v", urlEnv, err)
	}
	q := u.Query()
	q.Set("search_path", db.name)
	q.Set("application_name", db.name)
	u.RawQuery = q.Encode()
	db.url = u.String()
	return db
}

// open opens the store in db, closed when the test ends.
func (db *testDB) open(t testing.TB) store.Store {
	t.Helper()
	s, err := Open(db.url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// terminate ends the backends of the store's connections, as a server
// restart or an administrator would, and returns how many it ended.
func (db *testDB) terminate(t *testing.T) int {
	t.Helper()
	var n int
	err := db.admin.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE datname = current_database()
		AND pid <> pg_backend_pid() AND application_name = $1`, db.name).Scan(&n)
	if err != nil {
		t.Errorf("terminate backends: %v", err)
	}
	return n
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newTestDB(t).open(t) })
}

func TestReopen(t *testing.T) {
	db := newTestDB(t)
	s := db.open(t)
	storetest.PutAll(t, s, "t", 3, 2)
	s.Close()
	s = db.open(t)
	if err := s.Put(context.Background(), storetest.Checkpoint("t", 4, false)); err != nil {
		t.Fatalf("Put after reopen: %v", err)
	}
	got, err := s.Load(context.Background(), "t", 0)
	if err != nil || len(got) != 3 || got[0].ID != 2 {
		t.Errorf("Load after reopen = %v, %v; want ids 2..4", storetest.IDs(got), err)
	}
}

func TestNewerSchema(t *testing.T) {
	db := newTestDB(t)
	db.open(t).Close()
	if _, err := db.admin.Exec(context.Background(), `UPDATE `+db.name+`.schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	s, err := Open(db.url)
	if err == nil {
		s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "schema version 99 is newer") {
		t.Errorf("Open of a newer schema err = %v, want a schema version error", err)
	}
}

func TestOpenBadURL(t *testing.T) {
	s, err := Open("postgres://nobody:secret@127.0.0.1:1/x?connect_timeout=2")
	if err == nil {
		s.Close()
		t.Fatal("Open of a server that is not there succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "nobody@127.0.0.1:1/x") || strings.Contains(msg, "secret") {
		t.Errorf("err = %q, want it to name the server without the password", msg)
	}
}

// TestTerminatedConnections ends the store's backends between Puts: the
// pool reconnects, and a Put that lost its connection has either
// committed or not, so the thread's ids stay contiguous, none lost or
// doubled.
func TestTerminatedConnections(t *testing.T) {
	db := newTestDB(t)
	s := db.open(t)
	ctx := context.Background()
	const puts = 60
	killed := 0
	for id := int64(1); id <= puts; id++ {
		if id%5 == 0 {
			killed += db.terminate(t)
		}
		if err := putOnce(t, s, "t", id); err != nil {
			t.Fatal(err)
		}
		if id%7 == 0 {
			if _, err := s.Load(ctx, "t", 0); err != nil {
				t.Fatalf("Load after %d: %v", id, err)
			}
		}
	}
	if killed == 0 {
		t.Fatal("no backend was terminated: the test did not test anything")
	}
	t.Logf("terminated %d backends", killed)
	contiguous(t, s, "t", puts)
}

// TestTerminatedGroupCommits ends the store's backends while concurrent
// writers' Puts commit in groups: a group whose connection died has
// committed all its Puts or none, and each writer's thread keeps
// contiguous ids, none lost or doubled. The backends are ended every
// 20 ms once a Put has gone through since the last time, so a host whose
// new connections take longer than that still makes progress.
func TestTerminatedGroupCommits(t *testing.T) {
	db := newTestDB(t)
	s := db.open(t)
	const writers, puts = 16, 60
	done := make(chan struct{})
	var killed, progress atomic.Int64
	var killer sync.WaitGroup
	killer.Go(func() {
		seen := int64(-1)
		for {
			if n := progress.Load(); n != seen {
				seen = n
				killed.Add(int64(db.terminate(t)))
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for id := int64(1); id <= puts; id++ {
				if err := putOnce(t, s, fmt.Sprintf("w%d", w), id); err != nil {
					t.Error(err)
					return
				}
				progress.Add(1)
			}
		})
	}
	wg.Wait()
	close(done)
	killer.Wait() // before the cleanup uses the admin connection
	if killed.Load() == 0 {
		t.Fatal("no backend was terminated: the test did not test anything")
	}
	t.Logf("terminated %d backends", killed.Load())
	for w := range writers {
		contiguous(t, s, fmt.Sprintf("w%d", w), puts)
	}
}

// contiguous checks that thread has checkpoints 1..n.
func contiguous(t *testing.T, s store.Store, thread string, n int) {
	t.Helper()
	hist, err := s.History(context.Background(), thread)
	if err != nil {
		t.Fatalf("History(%s): %v", thread, err)
	}
	for i, cp := range hist {
		if cp.ID != int64(i+1) {
			t.Fatalf("History(%s)[%d].ID = %d: ids are not contiguous", thread, i, cp.ID)
		}
	}
	if len(hist) != n {
		t.Errorf("History(%s) has %d checkpoints, want %d", thread, len(hist), n)
	}
}

// putOnce puts checkpoint id of thread; each time Put fails it asks the
// store whether the Put committed and, if not, puts it again.
func putOnce(t *testing.T, s store.Store, thread string, id int64) error {
	t.Helper()
	ctx := context.Background()
	for range 10 {
		err := s.Put(ctx, storetest.Checkpoint(thread, id, id%10 == 0))
		if err == nil || errors.Is(err, store.ErrConflict) {
			return err
		}
		t.Logf("Put(%s, %d): %v", thread, id, err)
		last, err := lastID(s, thread)
		switch {
		case err != nil:
			return err
		case last == id: // committed before the connection died
			return nil
		case last != id-1:
			return fmt.Errorf("after a failed Put(%s, %d) the last id is %d", thread, id, last)
		}
	}
	return fmt.Errorf("Put(%s, %d) failed 10 times", thread, id)
}

// lastID is thread's newest checkpoint id, asked until the store answers.
func lastID(s store.Store, thread string) (int64, error) {
	var err error
	for range 10 {
		var cps []*store.Checkpoint
		cps, err = s.Load(context.Background(), thread, 0)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return 0, nil
		case err == nil:
			return cps[len(cps)-1].ID, nil
		}
	}
	return 0, err
}

func TestRunStoreConformance(t *testing.T) {
	storetest.RunRunStore(t, func(t *testing.T) store.RunStore {
		return newTestDB(t).open(t).(store.RunStore)
	})
}

func TestAssistantStoreConformance(t *testing.T) {
	storetest.RunAssistantStore(t, func(t *testing.T) store.AssistantStore {
		return newTestDB(t).open(t).(store.AssistantStore)
	})
}

func TestApprovalStoreConformance(t *testing.T) {
	storetest.RunApprovalStore(t, func(t *testing.T) store.Store { return newTestDB(t).open(t) })
}

func TestAuditStoreConformance(t *testing.T) {
	storetest.RunAuditStore(t, func(t *testing.T) store.Store { return newTestDB(t).open(t) })
}

// TestAuditReplicas: two replicas on one database appending to one
// tenant's ledger at once, with checkpoints and alone, keep one chain
// holding every record.
func TestAuditReplicas(t *testing.T) {
	db := newTestDB(t)
	replicas := []store.Store{db.open(t), db.open(t)}
	ctx := context.Background()
	const each = 40
	var wg sync.WaitGroup
	for i, s := range replicas {
		wg.Go(func() {
			thread := fmt.Sprintf("/acme/r%d", i)
			for n := range each {
				r := storetest.Audit("acme", thread, fmt.Sprint(n), int64(n))
				var err error
				if n%2 == 0 {
					cp := storetest.Checkpoint(thread, int64(n/2+1), n == 0)
					cp.Tenant, cp.Audit = "acme", []*store.AuditRecord{r, storetest.Audit("acme", thread, fmt.Sprint(n, "b"), int64(n))}
					err = s.Put(ctx, cp)
				} else {
					err = s.(store.AuditStore).AppendAudit(ctx, r)
				}
				if err != nil {
					t.Errorf("replica %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	if n := storetest.Verify(t, replicas[1].(store.AuditStore)); n != 2*each*3/2 {
		t.Errorf("the ledger holds %d records, want %d", n, 2*each*3/2)
	}
}

func TestWebhookStoreConformance(t *testing.T) {
	storetest.RunWebhookStore(t, func(t *testing.T) store.Store { return newTestDB(t).open(t) })
}

func TestItemStoreConformance(t *testing.T) {
	storetest.RunItemStore(t, func(t *testing.T) store.ItemStore {
		return newTestDB(t).open(t).(store.ItemStore)
	})
}

func TestCronStoreConformance(t *testing.T) {
	storetest.RunCronStore(t, func(t *testing.T) store.CronStore {
		return newTestDB(t).open(t).(store.CronStore)
	})
}

// TestRunStoreTerminatedConnections ends the store's backends between
// appends and run changes: each call goes through on a new connection,
// and the run's events stay numbered 1..n, none lost or doubled.
func TestRunStoreTerminatedConnections(t *testing.T) {
	db := newTestDB(t)
	s := db.open(t).(store.RunStore)
	ctx := context.Background()
	if _, _, err := s.CreateRun(ctx, &store.RunRecord{ID: "r", Thread: "t", Status: store.RunPending}, nil); err != nil {
		t.Fatal(err)
	}
	const appends = 30
	killed := 0
	for i := 1; i <= appends; i++ {
		if i%3 == 0 {
			killed += db.terminate(t)
		}
		evs := []store.EventInput{{Event: "updates", Data: json.RawMessage(`{}`)}, {Event: "values", Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}}
		if seq, err := s.AppendEvents(ctx, "r", evs); err != nil || seq != int64(2*i) {
			t.Fatalf("AppendEvents %d = %d, %v", i, seq, err)
		}
		if i%5 == 0 {
			killed += db.terminate(t)
			if err := s.SetRunStatus(ctx, "r", store.RunRunning); err != nil {
				t.Fatalf("SetRunStatus after a terminated connection: %v", err)
			}
		}
	}
	if killed == 0 {
		t.Fatal("no backend was terminated: the test did not test anything")
	}
	evs, err := s.Events(ctx, "r", 0)
	if err != nil || len(evs) != 2*appends {
		t.Fatalf("Events = %d events, %v; want %d", len(evs), err, 2*appends)
	}
}

// TestDeletePruneTerminated ends the store's backends before a Prune and
// a Delete: each goes through on a new connection.
func TestDeletePruneTerminated(t *testing.T) {
	db := newTestDB(t)
	s := db.open(t)
	ctx := context.Background()
	storetest.PutAll(t, s, "t", 5)
	if db.terminate(t) == 0 {
		t.Fatal("no backend was terminated: the test did not test anything")
	}
	if n, err := s.Prune(ctx, "t", 4); err != nil || n != 3 {
		t.Fatalf("Prune after a terminated connection = %d, %v; want 3", n, err)
	}
	db.terminate(t)
	if err := s.Delete(ctx, "t"); err != nil {
		t.Fatalf("Delete after a terminated connection: %v", err)
	}
	if _, err := s.History(ctx, "t"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("History after Delete err = %v, want ErrNotFound", err)
	}
}
