package store

import (
	"runtime"
	"slices"
	"sync"
)

// Group is the group commit of concurrent writers, for a backend whose
// commit costs far more than a write: the first writer to come leads,
// committing its write and those that queued meanwhile, up to Max, by
// one call of Commit, and answering each; then it hands the lead to the
// first writer still waiting, if any. A lone writer commits its own at
// once. Commit must answer each write with what that write alone would
// have: a backend whose group transaction fails commits its writes one
// by one.
type Group[W any] struct {
	// Commit commits ws and returns the result of each, in order.
	Commit func(ws []W) []Result
	// Max is the most writes one Commit takes.
	Max int

	mu      sync.Mutex
	leading bool
	pending []*groupReq[W]
	last    int // the size of the previous group
}

// Result is a write's answer: a count (rows changed, a returned value)
// and its error.
type Result struct {
	N   int64
	Err error
}

type groupReq[W any] struct {
	w    W
	done chan groupAnswer
}

type groupAnswer struct {
	Result
	// lead hands the write's writer the lead of the next group, which
	// holds its write.
	lead bool
}

// Do commits w, in a group, and waits for its commit. It does not give
// up while waiting: a write that returns an error has written nothing.
func (g *Group[W]) Do(w W) Result {
	req := &groupReq[W]{w: w, done: make(chan groupAnswer, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, req)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	for {
		if lead {
			g.lead()
		}
		ans := <-req.done
		if !ans.lead {
			return ans.Result
		}
		lead = true
	}
}

// lead commits the next group of the writes pending, then hands the lead
// to the first writer still waiting. When the previous group was larger
// than what is pending, it yields once first, so that writers answered
// together come back together.
func (g *Group[W]) lead() {
	g.mu.Lock()
	if len(g.pending) < g.last {
		g.mu.Unlock()
		runtime.Gosched()
		g.mu.Lock()
	}
	n := min(len(g.pending), max(g.Max, 1))
	batch := slices.Clone(g.pending[:n])
	g.pending = slices.Delete(g.pending, 0, n)
	g.last = n
	g.mu.Unlock()
	ws := make([]W, n)
	for i, req := range batch {
		ws[i] = req.w
	}
	for i, res := range g.Commit(ws) {
		batch[i].done <- groupAnswer{Result: res}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) == 0 {
		g.leading = false
		return
	}
	g.pending[0].done <- groupAnswer{lead: true}
}
