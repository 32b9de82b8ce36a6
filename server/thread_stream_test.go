package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// openStream starts a GET of a stream that does not end by itself; its
// events arrive on the channel until cancel.
func (e *env) openStream(path string, header ...string) (<-chan sse, context.CancelFunc) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+path, nil)
	req.Header.Set("X-Api-Key", e.key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		e.t.Fatalf("GET %s: %v %v", path, err, resp)
	}
	out := make(chan sse, 100)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "" && cur.Event != "":
				out <- cur
				cur = sse{}
			case strings.HasPrefix(line, "id: "):
				cur.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				cur.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(line[6:]), &cur.Data)
			}
		}
	}()
	e.t.Cleanup(cancel)
	return out, cancel
}

// untilEnds collects a stream's events until n runs have ended.
func (e *env) untilEnds(evs <-chan sse, n int) []sse {
	e.t.Helper()
	var got []sse
	for n > 0 {
		select {
		case ev, ok := <-evs:
			if !ok {
				e.t.Fatalf("the stream closed after %v", got)
			}
			got = append(got, ev)
			if ev.Event == "end" {
				n--
			}
		case <-time.After(5 * time.Second):
			e.t.Fatalf("no end after %v", got)
		}
	}
	return got
}

// TestThreadStream joins a thread's runs one after another, ids run:seq;
// Last-Event-ID resumes after an event, into the runs that followed.
func TestThreadStream(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	evs, stop := e.openStream("/threads/" + id + "/stream")
	var runs []string
	for range 2 {
		run := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "steps", "stream_mode": "updates"}, 200)["run_id"].(string)
		e.call("GET", "/threads/"+id+"/runs/"+run+"/join", nil, 200)
		runs = append(runs, run)
	}
	got := e.untilEnds(evs, 2)
	stop()
	if got[0].Event != "metadata" || got[0].Data.(map[string]any)["run_id"] != runs[0] || got[0].ID != runs[0]+":1" {
		t.Fatalf("first event %v, want run %s's metadata", got[0], runs[0])
	}
	var updates int
	for _, ev := range got {
		if ev.Event == "updates" {
			updates++
		}
	}
	if updates != 6 || !strings.HasPrefix(got[len(got)-1].ID, runs[1]+":") {
		t.Errorf("thread stream %v: want 3 updates of each run, the second run last", got)
	}
	rest, _ := e.openStream("/threads/"+id+"/stream", "Last-Event-ID", got[1].ID)
	if again := e.untilEnds(rest, 2); len(again) != len(got)-2 || again[0].ID != got[2].ID {
		t.Errorf("resumed after %s: %v, want %v", got[1].ID, again, got[2:])
	}
	e.call("GET", "/threads/"+id+"/stream?stream_mode=lifecycle", nil, 422)
}

// TestThreadStreamFollowsEveryRun starts runs one after another while a
// thread stream reads: it relays each from its metadata to its end, even
// one it finds created but not yet admitted (the relay then follows it
// live once it is).
func TestThreadStreamFollowsEveryRun(t *testing.T) {
	e := newEnv(t)
	id := e.call("POST", "/threads", nil, 200)["thread_id"].(string)
	evs, stop := e.openStream("/threads/" + id + "/stream")
	const runs = 20
	for range runs {
		run := e.call("POST", "/threads/"+id+"/runs", map[string]any{"assistant_id": "steps", "stream_mode": "updates"}, 200)["run_id"].(string)
		e.call("GET", "/threads/"+id+"/runs/"+run+"/join", nil, 200)
	}
	got := e.untilEnds(evs, runs)
	stop()
	if n := len(got); n != runs*5 {
		t.Errorf("%d events, want %d: metadata, 3 updates and the end of each run", n, runs*5)
	}
}
