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
	last    int       // the recent groups' size: the last, or the one before less a quarter
	free    sync.Pool // *groupReq[W] whose writes were answered
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
	req, _ := g.free.Get().(*groupReq[W])
	if req == nil {
		req = &groupReq[W]{done: make(chan groupAnswer, 1)}
	}
	req.w = w
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
		if !ans.lead { // the write's last answer: req is free again
			var zero W
			req.w = zero
			g.free.Put(req)
			return ans.Result
		}
		lead = true
	}
}

// maxYields is how many times a leader yields, at most, for the writers
// of the last groups to come back.
const maxYields = 8

// lead commits the next group of the writes pending, then hands the lead
// to the first writer still waiting. While fewer writes are pending than
// the recent groups held, it yields first (up to maxYields times), so that
// writers answered together come back together: yielding once, a leader
// found the writers it had just answered still at their next step, and
// committed alone, a group in five under 32 runs. The recent size decays
// by a quarter a group, so a burst does not make quieter times wait.
func (g *Group[W]) lead() {
	g.mu.Lock()
	for i := 0; i < maxYields && len(g.pending) < g.last; i++ {
		g.mu.Unlock()
		runtime.Gosched()
		g.mu.Lock()
	}
	n := min(len(g.pending), max(g.Max, 1))
	batch := slices.Clone(g.pending[:n])
	g.pending = slices.Delete(g.pending, 0, n)
	g.last = max(n, g.last-g.last/4)
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
