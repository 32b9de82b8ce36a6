package server_test

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/server"
)

// TestStreamMaxDuration ends a stream open longer than MaxStream with an
// error event naming the Last-Event-ID to rejoin with; the rejoined
// stream goes on to the run's end.
func TestStreamMaxDuration(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.MaxStream = 150 * time.Millisecond })
	e.call("POST", "/threads", map[string]any{"thread_id": "t1"}, 200)
	evs, _ := readSSE(t, e.request("POST", "/threads/t1/runs/stream", map[string]any{"assistant_id": "slow"}))
	last := evs[len(evs)-1]
	msg, _ := last.Data.(map[string]any)["message"].(string)
	if last.Event != "error" || last.Data.(map[string]any)["error"] != "stream_timeout" || !strings.HasSuffix(msg, "Last-Event-ID: "+evs[len(evs)-2].ID) {
		t.Fatalf("stream ended with %v", last)
	}
	run, after := evs[0].Data.(map[string]any)["run_id"].(string), evs[len(evs)-2].ID
	close(e.release)
	rest, _ := readSSE(t, e.request("GET", "/threads/t1/runs/"+run+"/stream", nil, "Last-Event-ID", after))
	if rest[len(rest)-1].Event != "end" || atoi(rest[0].ID) <= atoi(after) {
		t.Errorf("rejoined stream %v", rest)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestBodyLimit refuses a request body over MaxBody with a 413 problem.
func TestBodyLimit(t *testing.T) {
	e := newEnv(t, func(c *server.Config) { c.MaxBody = 1 << 10 })
	big := `{"metadata": {"pad": "` + strings.Repeat("x", 2<<10) + `"}}`
	req, _ := http.NewRequest("POST", e.url+"/threads", bytes.NewReader([]byte(big)))
	req.Header.Set("X-Api-Key", testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("oversized body: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	e.call("POST", "/threads", map[string]any{"metadata": map[string]any{"pad": "small"}}, 200)
}
