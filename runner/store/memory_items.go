package store

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// memItems is the memory store's ItemStore: each tenant's items by
// namespace key and key, under one mutex.
type memItems struct {
	imu   sync.Mutex
	items map[itemID]*Item
}

// itemID is where an item is kept: its tenant, NamespaceKey and key.
type itemID struct{ tenant, ns, key string }

func newMemItems() memItems { return memItems{items: map[itemID]*Item{}} }

func (m *memItems) PutItem(_ context.Context, tenant string, it *Item) error {
	if err := CheckItem(it, time.Now()); err != nil {
		return err
	}
	c := cloneItem(it)
	id := itemID{tenant, NamespaceKey(it.Namespace), it.Key}
	m.imu.Lock()
	defer m.imu.Unlock()
	c.CreatedAt = c.UpdatedAt
	if old := m.items[id]; old != nil && live(old, c.UpdatedAt) {
		c.CreatedAt = old.CreatedAt
	}
	m.items[id] = c
	return nil
}

func (m *memItems) Item(_ context.Context, tenant string, ns []string, key string, refresh bool) (*Item, error) {
	now := time.Now()
	m.imu.Lock()
	defer m.imu.Unlock()
	it := m.items[itemID{tenant, NamespaceKey(ns), key}]
	if it == nil || !live(it, now) {
		return nil, ItemNotFound(ns, key)
	}
	if refresh {
		refreshItem(it, now)
	}
	return cloneItem(it), nil
}

func (m *memItems) DeleteItem(_ context.Context, tenant string, ns []string, key string) error {
	m.imu.Lock()
	delete(m.items, itemID{tenant, NamespaceKey(ns), key})
	m.imu.Unlock()
	return nil
}

func (m *memItems) SearchItems(_ context.Context, tenant string, q ItemQuery) ([]Item, error) {
	if err := CheckItemQuery(&q); err != nil {
		return nil, err
	}
	now := time.Now()
	m.imu.Lock()
	defer m.imu.Unlock()
	var found []*Item
	prefix := NamespaceKey(q.Prefix)
	for id, it := range m.items {
		if id.tenant == tenant && strings.HasPrefix(id.ns, prefix) && live(it, now) {
			found = append(found, it)
		}
	}
	slices.SortFunc(found, func(a, b *Item) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(NamespaceKey(a.Namespace), NamespaceKey(b.Namespace)),
			strings.Compare(a.Key, b.Key))
	})
	i := 0
	out, err := q.Page(func() (*Item, bool, error) {
		if i == len(found) {
			return nil, false, nil
		}
		i++
		return found[i-1], true, nil
	})
	for j := range out {
		it := m.items[itemID{tenant, NamespaceKey(out[j].Namespace), out[j].Key}]
		if q.Refresh {
			refreshItem(it, now)
		}
		out[j] = *cloneItem(it)
	}
	return out, err
}

func (m *memItems) Namespaces(_ context.Context, tenant string, q NamespaceQuery) ([][]string, error) {
	if err := CheckNamespaceQuery(&q); err != nil {
		return nil, err
	}
	now := time.Now()
	prefix := NamespaceKey(q.Prefix)
	seen := map[string]bool{}
	m.imu.Lock()
	for id, it := range m.items {
		if id.tenant == tenant && strings.HasPrefix(id.ns, prefix) && live(it, now) {
			seen[id.ns] = true
		}
	}
	m.imu.Unlock()
	return q.Namespaces(slices.Sorted(maps.Keys(seen))), nil
}

func (m *memItems) SweepItems(_ context.Context, now time.Time) (int, error) {
	m.imu.Lock()
	defer m.imu.Unlock()
	n := len(m.items)
	maps.DeleteFunc(m.items, func(_ itemID, it *Item) bool { return !live(it, now) })
	return n - len(m.items), nil
}

// live reports whether it has not expired at now.
func live(it *Item, now time.Time) bool { return it.ExpiresAt.IsZero() || now.Before(it.ExpiresAt) }

// refreshItem extends the TTL of it, if it has one, from now.
func refreshItem(it *Item, now time.Time) {
	if it.TTL > 0 {
		it.ExpiresAt = now.Add(it.TTL).UTC()
	}
}

// cloneItem deep-copies it.
func cloneItem(it *Item) *Item {
	c := *it
	c.Namespace, c.Value = slices.Clone(it.Namespace), cloneRaw(it.Value)
	return &c
}
