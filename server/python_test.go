package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The Python SDK's ways, checked without it: booleans in queries as
// true/false, an empty stream_mode meaning every mode, problem details,
// keep-alive bytes on runs/wait and join, chunked SSE with heartbeats.

// TestQueryBooleans: wait=true and cancel_on_disconnect=true are taken
// as 1 is; anything else but false/0 is a 422.
func TestQueryBooleans(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	run := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "slow"}, 200)["run_id"].(string)
	e.waitStatus(id, run, "running")
	e.call("POST", "/threads/"+id+"/runs/"+run+"/cancel?wait=maybe", nil, 422)
	e.call("POST", "/threads/"+id+"/runs/"+run+"/cancel?wait=true&action=interrupt", nil, 204)
	if got := e.call("GET", "/threads/"+id+"/runs/"+run, nil, 200)["status"]; got != "interrupted" {
		t.Errorf("after cancel?wait=true the run is %v", got)
	}

	run = e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "slow"}, 200)["run_id"].(string)
	e.waitStatus(id, run, "running")
	_, stop := e.openStream("/threads/" + id + "/runs/" + run + "/stream?cancel_on_disconnect=true")
	time.Sleep(20 * time.Millisecond)
	stop()
	e.waitStatus(id, run, "interrupted")
}

// TestJoinStreamModes: a join's stream_mode keeps those modes' events
// (with metadata and end); empty, every mode.
func TestJoinStreamModes(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	run := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "steps", "stream_mode": []string{"values", "updates"}}, 200)["run_id"].(string)
	e.call("GET", "/threads/"+id+"/runs/"+run+"/join", nil, 200)
	count := func(query string) map[string]int {
		evs, _ := readSSE(t, e.request("GET", "/threads/"+id+"/runs/"+run+"/stream"+query, nil))
		n := map[string]int{}
		for _, ev := range evs {
			n[ev.Event]++
		}
		return n
	}
	all := count("")
	if all["values"] == 0 || all["updates"] != 3 {
		t.Fatalf("events of the run: %v", all)
	}
	for query, want := range map[string]map[string]int{
		"?stream_mode=":                              all,
		"?stream_mode=updates":                       {"metadata": 1, "updates": 3, "end": 1},
		"?stream_mode=values&stream_mode=updates":    all,
		"?stream_mode=messages-tuple&stream_mode=":   {"metadata": 1, "end": 1},
		"?stream_mode=updates&cancel_on_disconnect=": {"metadata": 1, "updates": 3, "end": 1},
	} {
		if got := count(query); len(got) != len(want) || got["updates"] != want["updates"] || got["values"] != want["values"] {
			t.Errorf("stream%s: %v, want %v", query, got, want)
		}
	}
}

// TestProblemDetails: every error is an RFC 9457 problem with type,
// title, status and detail.
func TestProblemDetails(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"GET", "/threads/missing", nil, 404},
		{"POST", "/threads/missing/runs", map[string]any{}, 422},
		{"POST", "/runs/wait", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": 1}}, 409},
		{"GET", "/nowhere", nil, 404},
	} {
		resp := e.request(tc.method, tc.path, tc.body)
		var p map[string]any
		err := json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/problem+json" ||
			p["status"] != float64(tc.status) || p["title"] == "" || p["type"] == nil || p["detail"] == "" || p["detail"] == nil {
			t.Errorf("%s %s = %d %v, want a %d problem with a detail", tc.method, tc.path, resp.StatusCode, p, tc.status)
		}
	}
}

// TestWaitKeepAlive: runs/wait and join on a run longer than a heartbeat
// answer 200 at once and send a newline every beat, then the JSON.
func TestWaitKeepAlive(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	type answer struct {
		resp *http.Response
		body []byte
	}
	get := func(method, path string, body any) <-chan answer {
		out := make(chan answer, 1)
		go func() {
			resp := e.request(method, path, body)
			out <- answer{resp: resp}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out <- answer{body: b}
		}()
		return out
	}
	waited := get("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "slow"})
	var head answer
	select {
	case head = <-waited: // the headers, before the run ends
	case <-time.After(2 * time.Second):
		t.Fatal("runs/wait sent no headers while the run went on")
	}
	runID := strings.TrimPrefix(head.resp.Header.Get("Content-Location"), "/threads/"+id+"/runs/")
	joined := get("GET", "/threads/"+id+"/runs/"+runID+"/join", nil)
	<-joined
	time.Sleep(150 * time.Millisecond)
	close(e.release)
	for name, ch := range map[string]<-chan answer{"runs/wait": waited, "join": joined} {
		body := (<-ch).body
		var out map[string]any
		if !bytes.HasPrefix(body, []byte("\n\n")) || json.Unmarshal(body, &out) != nil || out["n"] != 1.0 {
			t.Errorf("%s answered %q, want newlines, then the values", name, body)
		}
	}
}

// TestChunkedSSE: a stream is chunked, with heartbeat comments while the
// run is quiet.
func TestChunkedSSE(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		time.Sleep(200 * time.Millisecond)
		close(e.release)
	}()
	b, _ := json.Marshal(map[string]any{"assistant_id": "slow"})
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/runs/stream", bytes.NewReader(b))
	req.Header.Set("X-Api-Key", e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Errorf("Transfer-Encoding %v, want chunked", resp.TransferEncoding)
	}
	evs, beats := readSSE(t, resp)
	if beats == 0 || evs[len(evs)-1].Event != "end" {
		t.Errorf("%d heartbeats, events %v", beats, evs)
	}
}
