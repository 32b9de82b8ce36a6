package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// RunAssistantStore runs the AssistantStore suite on fresh stores from
// open, each closed by open's caller (use t.Cleanup).
func RunAssistantStore(t *testing.T, open func(t *testing.T) store.AssistantStore) {
	cases := []struct {
		name string
		run  func(t *testing.T, s store.AssistantStore)
	}{
		{"versions: create, add, read, list newest first", testAssistantVersions},
		{"a version out of turn is a conflict and writes nothing", testAssistantConflicts},
		{"the current version is picked, and kept by a read", testAssistantLatest},
		{"assistants are per tenant, listed newest first", testAssistantTenants},
		{"delete removes every version", testAssistantDelete},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
	}
}

// version is version v of assistant id of tenant acme, configured with n.
func version(id string, v, n int) *store.Assistant {
	return &store.Assistant{ID: id, Tenant: "acme", Version: v, GraphID: "agent", Name: fmt.Sprintf("%s v%d", id, v),
		Config:   json.RawMessage(fmt.Sprintf(`{"configurable":{"n":%d}}`, n)),
		Context:  json.RawMessage(`{"user":"ann"}`),
		Metadata: json.RawMessage(fmt.Sprintf(`{"v":%d}`, v)), CreatedAt: time.Unix(1_700_000_000+int64(v), 5).UTC()}
}

func mustPut(t *testing.T, s store.AssistantStore, a *store.Assistant) {
	t.Helper()
	if err := s.PutAssistant(ctx, a); err != nil {
		t.Fatalf("put %s v%d: %v", a.ID, a.Version, err)
	}
}

func testAssistantVersions(t *testing.T, s store.AssistantStore) {
	mustPut(t, s, version("a1", 1, 10))
	mustPut(t, s, version("a1", 2, 20))
	got, err := s.Assistant(ctx, "acme", "a1")
	if err != nil {
		t.Fatal(err)
	}
	want := version("a1", 2, 20)
	if got.Version != 2 || string(got.Config) != string(want.Config) || string(got.Metadata) != string(want.Metadata) ||
		string(got.Context) != `{"user":"ann"}` || got.GraphID != "agent" || got.Name != "a1 v2" {
		t.Errorf("current = %+v, want version 2", got)
	}
	if !got.CreatedAt.Equal(version("a1", 1, 0).CreatedAt) || !got.UpdatedAt.Equal(want.CreatedAt) {
		t.Errorf("created %v updated %v: want version 1's creation and version 2's", got.CreatedAt, got.UpdatedAt)
	}
	vs, err := s.AssistantVersions(ctx, "acme", "a1")
	if err != nil || len(vs) != 2 || vs[0].Version != 2 || vs[1].Version != 1 || string(vs[1].Config) != `{"configurable":{"n":10}}` {
		t.Fatalf("versions = %+v, %v", vs, err)
	}
	if !vs[1].CreatedAt.Equal(version("a1", 1, 0).CreatedAt) {
		t.Errorf("version 1 created %v", vs[1].CreatedAt)
	}
	if _, err := s.Assistant(ctx, "acme", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown assistant: %v", err)
	}
	if _, err := s.AssistantVersions(ctx, "acme", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("versions of an unknown assistant: %v", err)
	}
}

func testAssistantConflicts(t *testing.T, s store.AssistantStore) {
	mustPut(t, s, version("a1", 1, 1))
	for _, a := range []*store.Assistant{version("a1", 1, 2), version("a1", 3, 3)} {
		if err := s.PutAssistant(ctx, a); !errors.Is(err, store.ErrConflict) {
			t.Errorf("put v%d: %v, want ErrConflict", a.Version, err)
		}
	}
	if err := s.PutAssistant(ctx, version("ghost", 2, 1)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("version 2 of an unknown assistant: %v, want ErrNotFound", err)
	}
	if vs, _ := s.AssistantVersions(ctx, "acme", "a1"); len(vs) != 1 || string(vs[0].Config) != `{"configurable":{"n":1}}` {
		t.Errorf("after the conflicts: %+v", vs)
	}
	if _, err := s.Assistant(ctx, "acme", "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused version 2 left assistant ghost: %v", err)
	}
}

func testAssistantLatest(t *testing.T, s store.AssistantStore) {
	for v := 1; v <= 3; v++ {
		mustPut(t, s, version("a1", v, v))
	}
	if err := s.SetAssistantVersion(ctx, "acme", "a1", 1); err != nil {
		t.Fatal(err)
	}
	got, err := s.Assistant(ctx, "acme", "a1")
	if err != nil || got.Version != 1 || string(got.Config) != `{"configurable":{"n":1}}` {
		t.Fatalf("after picking version 1: %+v, %v", got, err)
	}
	if !got.UpdatedAt.After(version("a1", 3, 0).CreatedAt) {
		t.Errorf("updated_at %v did not move when version 1 was picked", got.UpdatedAt)
	}
	if err := s.SetAssistantVersion(ctx, "acme", "a1", 4); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("picking version 4 of 3: %v, want ErrNotFound", err)
	}
	if err := s.SetAssistantVersion(ctx, "other", "a1", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another tenant picking a version: %v, want ErrNotFound", err)
	}
	mustPut(t, s, version("a1", 4, 4))
	if got, _ := s.Assistant(ctx, "acme", "a1"); got.Version != 4 {
		t.Errorf("a new version is current: got version %d", got.Version)
	}
}

func testAssistantTenants(t *testing.T, s store.AssistantStore) {
	a, b := version("a1", 1, 1), version("b1", 1, 1)
	b.CreatedAt = a.CreatedAt.Add(time.Hour)
	other := version("a1", 1, 9)
	other.Tenant = "other"
	for _, x := range []*store.Assistant{a, b, other} {
		mustPut(t, s, x)
	}
	list, err := s.Assistants(ctx, "acme")
	if err != nil || len(list) != 2 || list[0].ID != "b1" || list[1].ID != "a1" {
		t.Fatalf("acme's assistants = %+v, %v", list, err)
	}
	got, err := s.Assistant(ctx, "other", "a1")
	if err != nil || string(got.Config) != `{"configurable":{"n":9}}` || got.Tenant != "other" {
		t.Errorf("other's a1 = %+v, %v", got, err)
	}
	if list, _ := s.Assistants(ctx, "nobody"); len(list) != 0 {
		t.Errorf("a tenant without assistants lists %v", list)
	}
}

func testAssistantDelete(t *testing.T, s store.AssistantStore) {
	mustPut(t, s, version("a1", 1, 1))
	mustPut(t, s, version("a1", 2, 2))
	other := version("a1", 1, 1)
	other.Tenant = "other"
	mustPut(t, s, other)
	if err := s.DeleteAssistant(ctx, "acme", "a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AssistantVersions(ctx, "acme", "a1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("versions after delete: %v", err)
	}
	if err := s.DeleteAssistant(ctx, "acme", "a1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if _, err := s.Assistant(ctx, "other", "a1"); err != nil {
		t.Errorf("another tenant's assistant of the same id went too: %v", err)
	}
	mustPut(t, s, version("a1", 1, 5)) // the id is free again
}
