package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// ThreadState is a thread at one checkpoint as a person reads it: the
// state rebuilt through the graph's reducers, where it stands (status,
// the node that ran and the one to run next) and the interrupt it waits
// on, if any.
type ThreadState struct {
	Thread     string     `json:"thread"`
	Checkpoint int64      `json:"id"`
	Parent     int64      `json:"parent"` // the checkpoint it follows (an earlier one after a replay)
	Step       int        `json:"step"`
	Node       string     `json:"node,omitempty"`
	Next       string     `json:"next,omitempty"`
	Status     string     `json:"status"`
	Interrupt  *Interrupt `json:"interrupt,omitempty"`
	State      State      `json:"state"`
	Tenant     string     `json:"tenant,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
}

// State returns a thread of g at checkpoint id (0: the newest).
func (e *Engine) State(ctx context.Context, g *Graph, thread string, id int64) (*ThreadState, error) {
	if e.Store == nil {
		return nil, errors.New("a thread's state needs a store")
	}
	cps, err := e.Store.Load(ctx, thread, id)
	if err != nil {
		return nil, err
	}
	state, meta, err := rebuild(g, cps)
	if err != nil {
		return nil, err
	}
	cp := cps[len(cps)-1]
	return &ThreadState{Thread: thread, Checkpoint: cp.ID, Parent: cp.Parent, Step: cp.Step, Node: cp.Node, Next: cp.Next, Status: cp.Status,
		Interrupt: pendingInterrupt(cp), State: state, Tenant: meta.Tenant, CreatedAt: cp.CreatedAt}, nil
}

// Retention says how much history a thread keeps: its newest Keep
// checkpoints (0: all of them) and those younger than MaxAge (0: all).
// What rebuilding its newest state needs — from its newest snapshot on —
// is always kept, so a pruned thread resumes and continues as before.
type Retention struct {
	Keep   int           `yaml:"keep" json:"keep,omitempty"`
	MaxAge time.Duration `yaml:"max_age" json:"max_age,omitempty"`
}

// Prune drops a thread of g's history beyond ret and returns how many
// checkpoints it removed. When the newest snapshot is older than what ret
// keeps, a thread that is not running first gets a compaction checkpoint:
// the same status, next node, pending interrupt and time as its newest,
// with the whole state rebuilt through g's reducers (with g nil, the
// history from the newest snapshot on is kept instead). A thread whose
// newest checkpoint is all its state needs is not compacted again.
func (e *Engine) Prune(ctx context.Context, g *Graph, thread string, ret Retention) (int, error) {
	return e.prune(ctx, g, thread, ret, 0)
}

// prune is Prune writing a compaction under lease token lease (0: none).
func (e *Engine) prune(ctx context.Context, g *Graph, thread string, ret Retention, lease int64) (int, error) {
	if e.Store == nil {
		return 0, errors.New("pruning needs a store")
	}
	hist, err := e.Store.History(ctx, thread)
	if err != nil {
		return 0, err
	}
	keepFrom := e.keepFrom(hist, ret)
	needed, err := e.Store.Load(ctx, thread, 0)
	if err != nil {
		return 0, err
	}
	from, last := needed[0].ID, needed[len(needed)-1]
	if from < keepFrom && len(needed) > 1 && last.Status != StatusRunning && g != nil {
		if from, err = e.compact(ctx, g, needed, lease); err != nil {
			return 0, err
		}
		if ret.Keep > 0 { // the compaction is one of the newest kept
			keepFrom = max(keepFrom, from-int64(ret.Keep)+1)
		}
	}
	return e.Store.Prune(ctx, thread, min(keepFrom, from))
}

// keepFrom returns the first ID of a thread's history hist that ret
// keeps; past the newest when ret keeps none of it.
func (e *Engine) keepFrom(hist []*store.Checkpoint, ret Retention) int64 {
	keepFrom := hist[0].ID
	if ret.Keep > 0 {
		keepFrom = max(keepFrom, hist[len(hist)-1].ID-int64(ret.Keep)+1)
	}
	if ret.MaxAge > 0 {
		cutoff := e.clock().Now().Add(-ret.MaxAge)
		for _, cp := range hist {
			if cp.CreatedAt.Before(cutoff) {
				keepFrom = max(keepFrom, cp.ID+1)
			}
		}
	}
	return keepFrom
}

// compact writes, under lease token lease, the thread's newest state as
// a snapshot checkpoint that stands where, and is as old as, its newest
// checkpoint, and returns its ID.
func (e *Engine) compact(ctx context.Context, g *Graph, cps []*store.Checkpoint, lease int64) (int64, error) {
	last := cps[len(cps)-1]
	var lm meta
	if err := decodeInto(last.Meta, &lm); err != nil {
		return 0, err
	}
	state, m, err := rebuild(g, cps)
	if err != nil {
		return 0, err
	}
	m.Error = lm.Error
	snap, err := json.Marshal(state)
	if err != nil {
		return 0, err
	}
	metaJSON, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	cp := *last
	cp.ID, cp.Parent, cp.Node, cp.Writes, cp.Snapshot, cp.Meta, cp.Lease = last.ID+1, last.ID, "", nil, snap, metaJSON, lease
	return cp.ID, e.Store.Put(ctx, &cp)
}

// clock returns the engine's clock.
func (e *Engine) clock() Clock {
	if e.Clock != nil {
		return e.Clock
	}
	return RealClock{}
}

// StatusUpdated is a thread whose state was edited (Engine.Update): it
// stands at its next node, and a resume continues from there.
const StatusUpdated = "updated"

// Update writes values to a thread of g as if node asNode had returned
// them: they go through the fields' reducers, and the thread then stands
// at the node asNode's routes choose (END: it is completed). With asNode
// empty the thread stays where it stands: a paused thread keeps waiting,
// with the edited state. A running thread cannot be edited.
func (e *Engine) Update(ctx context.Context, g *Graph, thread string, values Update, asNode string) (*ThreadState, error) {
	r, last, state, values, err := e.edit(ctx, g, thread, values)
	if err != nil {
		return nil, err
	}
	rec := cpRecord{node: last.Node, next: last.Next, status: last.Status, writes: values, state: state}
	if asNode == "" { // it stays where it stands: a paused step keeps its interrupt and its journal
		rec.interrupt = pendingInterrupt(last)
	} else {
		r.calls, r.sideUpd = nil, nil // the step it stood in is left
		s := g.Nodes[asNode]
		if s == nil {
			return nil, fmt.Errorf("%w: pipeline %s has no node %q", ErrInput, g.Name, asNode)
		}
		r.vars = map[string]any{"input": r.input, "budget": map[string]any{}, "run": r.runVar(), "config": r.config}
		if rec.next, _, err = r.route(s, state); err != nil {
			return nil, err
		}
		rec.node, rec.status = asNode, StatusUpdated
		if rec.next == End {
			rec.status = StatusCompleted
		}
		// what follows is a run of its own: limits count from here
		r.turn, rec.snapshot = last.Step, true
	}
	if err := r.checkpoint(ctx, rec); err != nil {
		return nil, err
	}
	return e.State(ctx, g, thread, 0)
}

// Goto writes values to a thread of g through the fields' reducers and
// makes node the next to run (LangGraph's Command goto): the thread
// leaves the step it stood in, a pending interrupt with it, and a resume
// runs node. Goto End ends the thread there, completed: nothing of the
// step it left runs (a gated call stays uncalled). A running thread
// cannot be moved; a node g does not have is refused with an error
// wrapping ErrInput.
func (e *Engine) Goto(ctx context.Context, g *Graph, thread string, values Update, node string) (*ThreadState, error) {
	if g.Nodes[node] == nil && node != End {
		return nil, fmt.Errorf("%w: pipeline %s has no node %q; its nodes are: %v", ErrInput, g.Name, node, nodeNames(g))
	}
	r, last, state, values, err := e.edit(ctx, g, thread, values)
	if err != nil {
		return nil, err
	}
	r.calls, r.sideUpd = nil, nil
	r.turn = last.Step // what follows is a run of its own: limits count from here
	rec := cpRecord{node: last.Node, next: node, status: StatusUpdated, writes: values, state: state, snapshot: true}
	if node == End {
		rec.status = StatusCompleted
	}
	if err := r.checkpoint(ctx, rec); err != nil {
		return nil, err
	}
	return e.State(ctx, g, thread, 0)
}

// edit reopens a thread of g that is not running, with values merged
// into its state through the reducers; it returns the thread's newest
// checkpoint and the values normalised.
func (e *Engine) edit(ctx context.Context, g *Graph, thread string, values Update) (*Run, *store.Checkpoint, State, Update, error) {
	if e.Store == nil {
		return nil, nil, nil, nil, errors.New("updating a thread needs a store")
	}
	cps, err := e.Store.Load(ctx, thread, 0)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	last := cps[len(cps)-1]
	if last.Status == StatusRunning {
		return nil, nil, nil, nil, fmt.Errorf("%w: thread %s is running (or crashed mid-step); resume it before editing it", ErrThreadBusy, thread)
	}
	state, m, err := rebuild(g, cps)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if values, err = g.CheckValues(values); err != nil {
		return nil, nil, nil, nil, err
	}
	if state, err = merge(g, state, values); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("%w: %v", ErrInput, err)
	}
	return e.reopen(g, thread, cps, m), last, state, values, nil
}

// Rewind makes an earlier checkpoint id of thread its newest again: a new
// checkpoint stands where id stood — the same state, node, next node,
// status and pending interrupt — so the next run or resume replays the
// thread from there (LangGraph's run from a checkpoint_id). The new
// checkpoint's parent is id: a new branch; the history keeps the old one.
func (e *Engine) Rewind(ctx context.Context, g *Graph, thread string, id int64) (*ThreadState, error) {
	if e.Store == nil {
		return nil, errors.New("rewinding a thread needs a store")
	}
	newest, err := e.Store.Load(ctx, thread, 0)
	if err != nil {
		return nil, err
	}
	return e.standAt(ctx, g, thread, id, thread, newest[len(newest)-1].ID, id)
}

// Fork starts thread to as a copy of thread from at its checkpoint id (0:
// the newest): the same state, standing at the same node with the same
// pending interrupt, its own history from there. The original is not
// changed.
func (e *Engine) Fork(ctx context.Context, g *Graph, from string, id int64, to string) (*ThreadState, error) {
	if e.Store == nil {
		return nil, errors.New("forking a thread needs a store")
	}
	if _, err := e.Store.History(ctx, to); err == nil {
		return nil, fmt.Errorf("%w: thread %s already exists", ErrThreadBusy, to)
	}
	return e.standAt(ctx, g, from, id, to, 0, 0)
}

// standAt writes, after checkpoint last of thread to, a checkpoint that
// stands where checkpoint id of thread from stood: its state, node, next
// node, status and pending interrupt (a step it paused or cut short goes
// on from there); branchFrom, when > 0, is its parent.
func (e *Engine) standAt(ctx context.Context, g *Graph, from string, id int64, to string, last, branchFrom int64) (*ThreadState, error) {
	cps, err := e.Store.Load(ctx, from, id)
	if err != nil {
		return nil, err
	}
	at := cps[len(cps)-1]
	state, m, err := rebuild(g, cps)
	if err != nil {
		return nil, err
	}
	r := e.reopen(g, to, cps, m)
	r.id, r.snapSize, r.sinceSnap = last, 0, 0
	rec := cpRecord{node: at.Node, next: at.Next, status: at.Status, state: state, snapshot: true, interrupt: pendingInterrupt(at),
		branchFrom: branchFrom}
	if err := r.checkpoint(ctx, rec); err != nil {
		return nil, err
	}
	return e.State(ctx, g, to, 0)
}
