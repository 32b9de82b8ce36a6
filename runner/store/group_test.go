package store

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestGroup answers every write with its own result, in commits of at
// most Max writes, fewer commits than writes when writers overlap.
func TestGroup(t *testing.T) {
	var commits, biggest, first atomic.Int64
	release := make(chan struct{})
	g := &Group[int]{Max: 8, Commit: func(ws []int) []Result {
		if commits.Add(1) == 1 {
			first.Store(int64(len(ws)))
			<-release // the first commit waits for the others to queue
		}
		biggest.Store(max(biggest.Load(), int64(len(ws))))
		res := make([]Result, len(ws))
		for i, w := range ws {
			res[i].N = int64(w * 10)
		}
		return res
	}}
	const writers = 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			if res := g.Do(w); res.N != int64(w*10) || res.Err != nil {
				t.Errorf("Do(%d) = %+v, want N %d", w, res, w*10)
			}
		})
	}
	for first.Load() == 0 || int(first.Load())+g.queued() < writers { // all queue behind the first commit
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	if n := commits.Load(); n >= writers {
		t.Errorf("%d commits for %d writers, want fewer", n, writers)
	}
	if b := biggest.Load(); b > 8 {
		t.Errorf("a commit of %d writes, want at most Max 8", b)
	}
}

// queued is the number of writes waiting for a commit.
func (g *Group[W]) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending)
}
