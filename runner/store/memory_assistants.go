package store

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// memAssistants is the memory store's AssistantStore.
type memAssistants struct {
	amu        sync.Mutex
	assistants map[[2]string]*memAssistant // tenant, id →
}

type memAssistant struct {
	versions             []Assistant // in order, version i+1 at i
	current              int
	createdAt, updatedAt time.Time
}

func (m *memAssistants) PutAssistant(_ context.Context, a *Assistant) error {
	if err := CheckAssistant(a, time.Now()); err != nil {
		return err
	}
	m.amu.Lock()
	defer m.amu.Unlock()
	if m.assistants == nil {
		m.assistants = map[[2]string]*memAssistant{}
	}
	key := [2]string{a.Tenant, a.ID}
	old := m.assistants[key]
	switch {
	case old == nil && a.Version > 1:
		return AssistantNotFound(a.ID, 0)
	case old == nil:
		old = &memAssistant{createdAt: a.CreatedAt}
		m.assistants[key] = old
	case a.Version != len(old.versions)+1:
		return AssistantVersionConflict(a.ID, a.Version)
	}
	v := *a
	v.Config, v.Context, v.Metadata = cloneRaw(a.Config), cloneRaw(a.Context), cloneRaw(a.Metadata)
	old.versions = append(old.versions, v)
	old.current, old.updatedAt = a.Version, a.CreatedAt
	return nil
}

func (m *memAssistants) Assistant(_ context.Context, tenant, id string) (*Assistant, error) {
	m.amu.Lock()
	defer m.amu.Unlock()
	a := m.assistants[[2]string{tenant, id}]
	if a == nil {
		return nil, AssistantNotFound(id, 0)
	}
	out := a.at(a.current)
	return &out, nil
}

// at is version v as the assistant's current one.
func (a *memAssistant) at(v int) Assistant {
	out := a.versions[v-1]
	out.Config, out.Context, out.Metadata = cloneRaw(out.Config), cloneRaw(out.Context), cloneRaw(out.Metadata)
	out.CreatedAt, out.UpdatedAt = a.createdAt, a.updatedAt
	return out
}

func (m *memAssistants) AssistantVersions(_ context.Context, tenant, id string) ([]Assistant, error) {
	m.amu.Lock()
	defer m.amu.Unlock()
	a := m.assistants[[2]string{tenant, id}]
	if a == nil {
		return nil, AssistantNotFound(id, 0)
	}
	out := make([]Assistant, 0, len(a.versions))
	for _, v := range slices.Backward(a.versions) {
		v.Config, v.Context, v.Metadata = cloneRaw(v.Config), cloneRaw(v.Context), cloneRaw(v.Metadata)
		out = append(out, v)
	}
	return out, nil
}

func (m *memAssistants) SetAssistantVersion(_ context.Context, tenant, id string, version int) error {
	m.amu.Lock()
	defer m.amu.Unlock()
	a := m.assistants[[2]string{tenant, id}]
	switch {
	case a == nil:
		return AssistantNotFound(id, 0)
	case version < 1 || version > len(a.versions):
		return AssistantNotFound(id, version)
	}
	a.current, a.updatedAt = version, time.Now().UTC()
	return nil
}

func (m *memAssistants) DeleteAssistant(_ context.Context, tenant, id string) error {
	m.amu.Lock()
	defer m.amu.Unlock()
	key := [2]string{tenant, id}
	if m.assistants[key] == nil {
		return AssistantNotFound(id, 0)
	}
	delete(m.assistants, key)
	return nil
}

func (m *memAssistants) Assistants(_ context.Context, tenant string) ([]Assistant, error) {
	m.amu.Lock()
	defer m.amu.Unlock()
	var out []Assistant
	for key, a := range m.assistants {
		if key[0] == tenant {
			out = append(out, a.at(a.current))
		}
	}
	slices.SortFunc(out, func(a, b Assistant) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}
