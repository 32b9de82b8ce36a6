package server_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store/sqlite"
	"github.com/runner-dev/runner/runner/store/storetest"
	"github.com/runner-dev/runner/server"
)

// TestFullDisk serves from a store on a small disk: a write that does
// not fit is refused 507 and /readyz turns 503; once room is made,
// /readyz turns 200 within 5 s and writes go on, without a restart.
func TestFullDisk(t *testing.T) {
	dir := storetest.SmallDisk(t, 4<<20)
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newEnv(t, func(c *server.Config) { c.Store = st })
	pad := map[string]any{"metadata": map[string]any{"pad": strings.Repeat("x", 200<<10)}}
	status := 200
	for n := 0; status == 200; n++ {
		if n == 100 {
			t.Fatal("100 threads of 200 KiB fit on a disk of 4 MiB")
		}
		resp := e.request("POST", "/threads", pad)
		resp.Body.Close()
		status = resp.StatusCode
	}
	if status != http.StatusInsufficientStorage {
		t.Fatalf("a thread that does not fit on the disk: %d, want 507", status)
	}
	e.waitReady(http.StatusServiceUnavailable)
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	e.waitReady(http.StatusOK)
	e.call("POST", "/threads", pad, 200)
}

// waitReady polls /readyz until it answers status, for at most 5 s.
func (e *env) waitReady(status int) {
	e.t.Helper()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(e.url + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == status {
				return
			}
		}
		if time.Now().After(end) {
			e.t.Fatalf("/readyz did not answer %d within 5 s", status)
		}
	}
}
