package store

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// memCrons is the memory store's CronStore.
type memCrons struct {
	cmu   sync.Mutex
	crons map[[2]string]*Cron // tenant, id →
}

func (m *memCrons) PutCron(_ context.Context, c *Cron) error {
	if err := CheckCron(c, time.Now()); err != nil {
		return err
	}
	m.cmu.Lock()
	defer m.cmu.Unlock()
	if m.crons == nil {
		m.crons = map[[2]string]*Cron{}
	}
	key := [2]string{c.Tenant, c.ID}
	v := cloneCron(c)
	if old := m.crons[key]; old != nil {
		v.CreatedAt = old.CreatedAt
	}
	m.crons[key] = &v
	return nil
}

// cloneCron is a copy of c that shares no JSON buffer with it.
func cloneCron(c *Cron) Cron {
	v := *c
	v.Payload, v.Metadata = cloneRaw(c.Payload), cloneRaw(c.Metadata)
	return v
}

func (m *memCrons) Cron(_ context.Context, tenant, id string) (*Cron, error) {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	c := m.crons[[2]string{tenant, id}]
	if c == nil {
		return nil, CronNotFound(id)
	}
	v := cloneCron(c)
	return &v, nil
}

func (m *memCrons) Crons(_ context.Context, tenant string) ([]Cron, error) {
	return m.list(func(c *Cron) bool { return c.Tenant == tenant }, func(a, b Cron) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	}), nil
}

func (m *memCrons) DueCrons(_ context.Context, now time.Time) ([]Cron, error) {
	return m.list(func(c *Cron) bool { return c.Enabled && !c.NextRun.IsZero() && !c.NextRun.After(now) },
		func(a, b Cron) int {
			return cmp.Or(a.NextRun.Compare(b.NextRun), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.ID, b.ID))
		}), nil
}

// list is the crons keep selects, in the order of by.
func (m *memCrons) list(keep func(*Cron) bool, by func(a, b Cron) int) []Cron {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	var out []Cron
	for _, c := range m.crons {
		if keep(c) {
			out = append(out, cloneCron(c))
		}
	}
	slices.SortFunc(out, by)
	return out
}

func (m *memCrons) DeleteCron(_ context.Context, tenant, id string) error {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	key := [2]string{tenant, id}
	if m.crons[key] == nil {
		return CronNotFound(id)
	}
	delete(m.crons, key)
	return nil
}

func (m *memCrons) ClaimTick(_ context.Context, tenant, id string, tick, next time.Time) (bool, error) {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	c := m.crons[[2]string{tenant, id}]
	if c == nil || !c.NextRun.Equal(tick) {
		return false, nil
	}
	c.NextRun = next.UTC()
	return true, nil
}
