package server_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/google/uuid"
)

// TestPausedThreadsHoldNoMemory pauses a thousand threads: once their runs
// have ended, the server holds nothing of them (each run's context used
// to stay registered with the server's, about 500 bytes a run).
func TestPausedThreadsHoldNoMemory(t *testing.T) {
	e := newEnv(t)
	pause := func(prefix string, i int) {
		thread := uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "%s/%d", prefix, i)).String()
		out := e.call("POST", "/threads/"+thread+"/runs/wait",
			map[string]any{"assistant_id": "approval", "if_not_exists": "create", "input": map[string]any{}}, 200)
		if out["__interrupt__"] == nil {
			t.Fatalf("thread %d did not pause: %v", i, out)
		}
	}
	for i := range 50 { // warm up: caches, connections, pools
		pause("warm", i)
	}
	before := heapAfterGC()
	const threads = 1000
	for i := range threads {
		pause("paused", i)
	}
	if grown := (int64(heapAfterGC()) - int64(before)) / threads; grown > 200 {
		t.Errorf("the heap grew by %d bytes a paused thread, want under 200", grown)
	}
}

// heapAfterGC is the live heap after a collection.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
