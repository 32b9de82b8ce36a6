package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
)

// memory is the in-process Store: a mutex and a map of threads, each the
// slice of its checkpoints (ID i at index i-1). Nothing survives the process.
type memory struct {
	mu      sync.RWMutex
	threads map[string][]*Checkpoint
}

// NewMemory returns an empty in-memory Store, for tests and benchmarks.
func NewMemory() Store {
	return &memory{threads: map[string][]*Checkpoint{}}
}

func (m *memory) Put(_ context.Context, cp *Checkpoint) error {
	if err := checkPut(cp); err != nil {
		return err
	}
	c := clone(cp, true)
	m.mu.Lock()
	defer m.mu.Unlock()
	cps := m.threads[cp.Thread]
	if last := int64(len(cps)); cp.ID != last+1 {
		return conflict(cp.Thread, cp.ID, last)
	}
	m.threads[cp.Thread] = append(cps, c)
	return nil
}

func (m *memory) Load(_ context.Context, thread string, id int64) ([]*Checkpoint, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	cps := m.threads[thread]
	if id == 0 {
		id = int64(len(cps))
	}
	if len(cps) == 0 || id < 1 || id > int64(len(cps)) {
		return nil, notFound(thread, id)
	}
	from := id - 1
	for from > 0 && len(cps[from].Snapshot) == 0 {
		from--
	}
	out := make([]*Checkpoint, 0, id-from)
	for _, c := range cps[from:id] {
		out = append(out, clone(c, true))
	}
	return out, nil
}

func (m *memory) History(_ context.Context, thread string) ([]*Checkpoint, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	cps := m.threads[thread]
	if len(cps) == 0 {
		return nil, notFound(thread, 0)
	}
	out := make([]*Checkpoint, len(cps))
	for i, c := range cps {
		out[i] = clone(c, false)
	}
	return out, nil
}

func (m *memory) Threads(_ context.Context, limit int) ([]Thread, error) {
	m.mu.RLock()
	out := make([]Thread, 0, len(m.threads))
	for id, cps := range m.threads {
		last := cps[len(cps)-1]
		out = append(out, Thread{ID: id, Pipeline: last.Pipeline, Status: last.Status,
			Steps: last.Step, UpdatedAt: last.CreatedAt})
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b Thread) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Close does nothing: the memory store stays usable until it is dropped.
func (m *memory) Close() error { return nil }

// clone deep-copies cp, with CreatedAt in UTC; without the Writes and
// Snapshot unless full.
func clone(cp *Checkpoint, full bool) *Checkpoint {
	c := *cp
	c.CreatedAt = cp.CreatedAt.UTC()
	c.Interrupt, c.Meta = cloneRaw(cp.Interrupt), cloneRaw(cp.Meta)
	c.Writes, c.Snapshot = nil, nil
	if full {
		c.Writes, c.Snapshot = cloneRaw(cp.Writes), cloneRaw(cp.Snapshot)
	}
	return &c
}

// cloneRaw copies b, turning an empty message into nil.
func cloneRaw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}
