package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"
)

// memory is the in-process Store: a mutex, a map of threads, each the
// slice of its checkpoints from ID first on (ID i at index i-first), and
// a map of leases. Nothing survives the process.
type memory struct {
	mu      sync.RWMutex
	threads map[string]*memThread
	memRuns
	memAssistants
	memApprovals
	memItems
	memCrons
	memAudit
	memWebhooks
	leases map[string]Lease
}

type memThread struct {
	first  int64
	cps    []*Checkpoint
	parent string // the thread it is a child thread of (Checkpoint.ChildOf)
}

// last is the thread's newest checkpoint ID.
func (t *memThread) last() int64 { return t.first + int64(len(t.cps)) - 1 }

// summary is the thread id's summary, from its newest checkpoint.
func (t *memThread) summary(id string) Thread {
	last := t.cps[len(t.cps)-1]
	return Thread{ID: id, Pipeline: last.Pipeline, Status: last.Status, Steps: last.Step, UpdatedAt: last.CreatedAt}
}

// NewMemory returns an empty in-memory Store, for tests and benchmarks.
// It is a RunStore, an AssistantStore, an ApprovalStore, an ItemStore, a
// CronStore, an AuditStore and a WebhookStore too.
func NewMemory() Store {
	return &memory{threads: map[string]*memThread{}, leases: map[string]Lease{}, memRuns: newMemRuns(),
		memApprovals: memApprovals{approvals: map[string]*Approval{}}, memItems: newMemItems(),
		memAudit: memAudit{audit: map[string][]*AuditRecord{}}, memWebhooks: memWebhooks{deliveries: map[string]*Delivery{}}}
}

func (m *memory) Put(_ context.Context, cp *Checkpoint) error {
	if err := CheckPut(cp); err != nil {
		return err
	}
	c := clone(cp, true)
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.leases[cp.Thread]; cp.Lease != 0 && cp.Lease != l.Token {
		return FencedError(cp, l.Token)
	}
	t := m.threads[cp.Thread]
	last := int64(0)
	if t != nil {
		last = t.last()
	}
	if cp.ID != last+1 {
		return ConflictError(cp.Thread, cp.ID, last)
	}
	if t == nil {
		t = &memThread{first: 1, parent: cp.ChildOf}
		m.threads[cp.Thread] = t
	}
	t.cps = append(t.cps, c)
	for _, a := range cp.Approvals {
		m.upsert(a)
	}
	m.appendAudit(cp.Audit)
	m.enqueue(cp.Deliveries)
	if cp.Release {
		l := m.leases[cp.Thread]
		l.Expires = time.Time{}
		m.leases[cp.Thread] = l
	}
	return nil
}

func (m *memory) Load(_ context.Context, thread string, id int64) ([]*Checkpoint, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.threads[thread]
	if t == nil {
		return nil, NotFoundError(thread, id)
	}
	if id == 0 {
		id = t.last()
	}
	if id < t.first || id > t.last() {
		return nil, NotFoundError(thread, id)
	}
	upto := id - t.first
	from := upto
	for from > 0 && len(t.cps[from].Snapshot) == 0 {
		from--
	}
	out := make([]*Checkpoint, 0, upto-from+1)
	for _, c := range t.cps[from : upto+1] {
		out = append(out, clone(c, true))
	}
	return out, nil
}

func (m *memory) History(_ context.Context, thread string) ([]*Checkpoint, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.threads[thread]
	if t == nil {
		return nil, NotFoundError(thread, 0)
	}
	out := make([]*Checkpoint, len(t.cps))
	for i, c := range t.cps {
		out[i] = clone(c, false)
	}
	return out, nil
}

func (m *memory) Threads(_ context.Context, limit int) ([]Thread, error) {
	m.mu.RLock()
	out := make([]Thread, 0, len(m.threads))
	for id, t := range m.threads {
		out = append(out, t.summary(id))
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

func (m *memory) ThreadsAfter(_ context.Context, after string, limit int) ([]Thread, error) {
	m.mu.RLock()
	ids := slices.Sorted(maps.Keys(m.threads))
	ids = ids[sortedAfter(ids, after):]
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	out := make([]Thread, len(ids))
	for i, id := range ids {
		out[i] = m.threads[id].summary(id)
	}
	m.mu.RUnlock()
	return out, nil
}

// sortedAfter returns the index of the first of the sorted ids above after.
func sortedAfter(ids []string, after string) int {
	i, found := slices.BinarySearch(ids, after)
	if found {
		i++
	}
	return i
}

func (m *memory) Delete(_ context.Context, thread string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.threads[thread] == nil {
		return NotFoundError(thread, 0)
	}
	fam := m.family(thread)
	for id, a := range m.approvals {
		if fam[a.Thread] {
			delete(m.approvals, id)
		}
	}
	for id := range fam {
		delete(m.threads, id)
		if l, ok := m.leases[id]; ok {
			l.Expires = time.Time{}
			m.leases[id] = l
		}
	}
	return nil
}

// family is thread and the threads recorded as its child threads, theirs
// too; m.mu is held.
func (m *memory) family(thread string) map[string]bool {
	fam := map[string]bool{thread: true}
	for grew := true; grew; {
		grew = false
		for id, t := range m.threads {
			if !fam[id] && t.parent != "" && fam[t.parent] {
				fam[id], grew = true, true
			}
		}
	}
	return fam
}

func (m *memory) Prune(_ context.Context, thread string, keepFrom int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.threads[thread]
	if t == nil {
		return 0, NotFoundError(thread, 0)
	}
	cut := min(keepFrom, t.last()) - t.first
	if cut <= 0 {
		return 0, nil
	}
	t.cps, t.first = slices.Clone(t.cps[cut:]), t.first+cut
	return int(cut), nil
}

func (m *memory) Acquire(_ context.Context, thread, owner string, ttl time.Duration) (Lease, error) {
	if err := CheckLease(thread, owner, ttl); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	l := m.leases[thread]
	if now.Before(l.Expires) {
		return Lease{}, LeasedError(thread, l.Owner, l.Expires)
	}
	l = Lease{Thread: thread, Owner: owner, Token: l.Token + 1, Expires: now.Add(ttl).UTC()}
	m.leases[thread] = l
	return l, nil
}

func (m *memory) Renew(_ context.Context, l Lease, ttl time.Duration) (Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.leases[l.Thread]
	if !ok || cur.Token != l.Token {
		return Lease{}, LostError(l, cur.Owner)
	}
	if cur.Expires.IsZero() {
		return Lease{}, ReleasedError(l)
	}
	cur.Expires = time.Now().Add(ttl).UTC()
	m.leases[l.Thread] = cur
	return cur, nil
}

func (m *memory) Release(_ context.Context, l Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.leases[l.Thread]
	if !ok || cur.Token != l.Token {
		return LostError(l, cur.Owner)
	}
	cur.Expires = time.Time{}
	m.leases[l.Thread] = cur
	return nil
}

// Close does nothing: the memory store stays usable until it is dropped.
func (m *memory) Close() error { return nil }

// Probe reports that memory can always be written.
func (m *memory) Probe(context.Context) error { return nil }

// clone deep-copies cp, with CreatedAt in UTC, without what is not
// stored (Lease, Release); without the Writes and Snapshot unless full.
func clone(cp *Checkpoint, full bool) *Checkpoint {
	c := *cp
	c.CreatedAt, c.Lease, c.Release, c.ChildOf, c.Approvals, c.Audit = cp.CreatedAt.UTC(), 0, false, "", nil, nil
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
