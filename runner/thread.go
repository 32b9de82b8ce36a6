package runner

import (
	"context"
	"errors"
	"time"
)

// ThreadState is a thread at one checkpoint as a person reads it: the
// state rebuilt through the graph's reducers, where it stands (status,
// the node that ran and the one to run next) and the interrupt it waits
// on, if any.
type ThreadState struct {
	Thread     string     `json:"thread"`
	Checkpoint int64      `json:"id"`
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
	return &ThreadState{Thread: thread, Checkpoint: cp.ID, Step: cp.Step, Node: cp.Node, Next: cp.Next, Status: cp.Status,
		Interrupt: pendingInterrupt(cp), State: state, Tenant: meta.Tenant, CreatedAt: cp.CreatedAt}, nil
}
