package store

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// memRuns is the memory store's RunStore: thread records, runs and event
// logs in maps under one mutex.
type memRuns struct {
	rmu     sync.Mutex
	records map[string]*ThreadRecord
	runs    map[string]*RunRecord
	events  map[string][]RunEvent
}

func newMemRuns() memRuns {
	return memRuns{records: map[string]*ThreadRecord{}, runs: map[string]*RunRecord{}, events: map[string][]RunEvent{}}
}

func (m *memRuns) CreateThread(_ context.Context, t *ThreadRecord) error {
	if err := CheckThreadRecord(t, time.Now()); err != nil {
		return err
	}
	m.rmu.Lock()
	defer m.rmu.Unlock()
	if m.records[t.ID] != nil {
		return ConflictRecord("thread", t.ID)
	}
	m.records[t.ID] = cloneThreadRecord(t)
	return nil
}

func (m *memRuns) Thread(_ context.Context, id string) (*ThreadRecord, error) {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	t := m.records[id]
	if t == nil {
		return nil, RecordNotFound("thread", id)
	}
	return cloneThreadRecord(t), nil
}

func (m *memRuns) UpdateThread(_ context.Context, t *ThreadRecord) error {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	old := m.records[t.ID]
	if old == nil {
		return RecordNotFound("thread", t.ID)
	}
	old.Metadata = cloneRaw(t.Metadata)
	old.UpdatedAt = cmp.Or(t.UpdatedAt, time.Now()).UTC()
	return nil
}

func (m *memRuns) DeleteThread(_ context.Context, id string) error {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	if m.records[id] == nil {
		return RecordNotFound("thread", id)
	}
	delete(m.records, id)
	for rid, r := range m.runs {
		if r.Thread == id {
			delete(m.runs, rid)
			delete(m.events, rid)
		}
	}
	return nil
}

func (m *memRuns) ThreadRecords(_ context.Context, tenant string) ([]ThreadRecord, error) {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	var out []ThreadRecord
	for _, t := range m.records {
		if t.Tenant == tenant {
			out = append(out, *cloneThreadRecord(t))
		}
	}
	slices.SortFunc(out, func(a, b ThreadRecord) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (m *memRuns) CreateRun(_ context.Context, r *RunRecord, thread *ThreadRecord) (*RunRecord, bool, error) {
	if err := CheckRunRecord(r, thread, time.Now()); err != nil {
		return nil, false, err
	}
	m.rmu.Lock()
	defer m.rmu.Unlock()
	if r.IdempotencyKey != "" {
		for _, old := range m.runs {
			if old.Tenant == r.Tenant && old.IdempotencyKey == r.IdempotencyKey {
				return cloneRunRecord(old), false, nil
			}
		}
	}
	switch {
	case m.runs[r.ID] != nil:
		return nil, false, ConflictRecord("run", r.ID)
	case thread != nil && m.records[thread.ID] != nil:
		return nil, false, ConflictRecord("thread", thread.ID)
	case thread != nil:
		m.records[thread.ID] = cloneThreadRecord(thread)
	}
	m.runs[r.ID] = cloneRunRecord(r)
	return cloneRunRecord(r), true, nil
}

func (m *memRuns) Run(_ context.Context, id string) (*RunRecord, error) {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	r := m.runs[id]
	if r == nil {
		return nil, RecordNotFound("run", id)
	}
	return cloneRunRecord(r), nil
}

func (m *memRuns) Runs(_ context.Context, thread string) ([]RunRecord, error) {
	return m.listRuns(func(r *RunRecord) bool { return r.Thread == thread }), nil
}

func (m *memRuns) RunsWithStatus(_ context.Context, statuses ...string) ([]RunRecord, error) {
	return m.listRuns(func(r *RunRecord) bool { return slices.Contains(statuses, r.Status) }), nil
}

// listRuns returns the runs keep accepts, oldest first.
func (m *memRuns) listRuns(keep func(*RunRecord) bool) []RunRecord {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	var out []RunRecord
	for _, r := range m.runs {
		if keep(r) {
			out = append(out, *cloneRunRecord(r))
		}
	}
	slices.SortFunc(out, func(a, b RunRecord) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}

func (m *memRuns) SetRunStatus(_ context.Context, id, status string) error {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	r := m.runs[id]
	if r == nil {
		return RecordNotFound("run", id)
	}
	r.Status, r.UpdatedAt = status, time.Now().UTC()
	return nil
}

func (m *memRuns) DeleteRun(_ context.Context, id string) error {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	if m.runs[id] == nil {
		return RecordNotFound("run", id)
	}
	delete(m.runs, id)
	delete(m.events, id)
	return nil
}

func (m *memRuns) AppendEvents(_ context.Context, run string, events []EventInput) (int64, error) {
	if len(events) == 0 {
		return 0, nil
	}
	m.rmu.Lock()
	defer m.rmu.Unlock()
	return m.appendLocked(run, events)
}

func (m *memRuns) EndRun(_ context.Context, id, status string, events []EventInput) error {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	if _, err := m.appendLocked(id, events); err != nil {
		return err
	}
	r := m.runs[id]
	r.Status, r.UpdatedAt = status, time.Now().UTC()
	return nil
}

// appendLocked appends events to run's; the caller holds rmu.
func (m *memRuns) appendLocked(run string, events []EventInput) (int64, error) {
	if m.runs[run] == nil {
		return 0, RecordNotFound("run", run)
	}
	now := time.Now().UTC()
	seq := int64(len(m.events[run]))
	for _, ev := range events {
		seq++
		m.events[run] = append(m.events[run], RunEvent{Run: run, Seq: seq, Event: ev.Event, Data: cloneRaw(ev.Data), CreatedAt: now})
	}
	return seq, nil
}

func (m *memRuns) Events(_ context.Context, run string, after int64) ([]RunEvent, error) {
	m.rmu.Lock()
	defer m.rmu.Unlock()
	evs := m.events[run]
	after = min(max(after, 0), int64(len(evs)))
	out := slices.Clone(evs[after:])
	for i := range out {
		out[i].Data = cloneRaw(out[i].Data)
	}
	return out, nil
}

func cloneThreadRecord(t *ThreadRecord) *ThreadRecord {
	c := *t
	c.Metadata = cloneRaw(t.Metadata)
	c.CreatedAt, c.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	return &c
}

func cloneRunRecord(r *RunRecord) *RunRecord {
	c := *r
	c.Kwargs, c.Metadata = cloneRaw(r.Kwargs), cloneRaw(r.Metadata)
	c.CreatedAt, c.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return &c
}
