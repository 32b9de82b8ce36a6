package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// RunItemStore runs the item store's suite on fresh stores from open.
func RunItemStore(t *testing.T, open func(t *testing.T) store.ItemStore) {
	cases := []struct {
		name string
		run  func(t *testing.T, s store.ItemStore)
	}{
		{"put and get an item", testItemRoundTrip},
		{"a put replaces the item and keeps its creation", testItemReplace},
		{"unknown and deleted items are not found", testItemNotFound},
		{"tenants do not see each other's items", testItemTenants},
		{"search by namespace prefix, newest first, paged", testItemSearch},
		{"search filters on the value's fields", testItemFilter},
		{"expired items are not read, and are swept", testItemExpiry},
		{"a read refreshes the TTL", testItemRefresh},
		{"namespaces by prefix, suffix and depth", testNamespaces},
		{"invalid items and queries are refused", testItemInvalid},
		{"concurrent puts of one key: one item", testItemConcurrent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
	}
}

// item is an item of ns (its labels joined by dots) with a JSON value.
func item(ns, key, value string) *store.Item {
	return &store.Item{Namespace: strings.Split(ns, "."), Key: key, Value: json.RawMessage(value)}
}

func put(t *testing.T, s store.ItemStore, tenant string, it *store.Item) {
	t.Helper()
	if err := s.PutItem(context.Background(), tenant, it); err != nil {
		t.Fatalf("PutItem %v/%s: %v", it.Namespace, it.Key, err)
	}
}

func search(t *testing.T, s store.ItemStore, tenant string, q store.ItemQuery) []string {
	t.Helper()
	items, err := s.SearchItems(context.Background(), tenant, q)
	if err != nil {
		t.Fatalf("SearchItems %+v: %v", q, err)
	}
	out := []string{}
	for _, it := range items {
		out = append(out, strings.Join(it.Namespace, ".")+"/"+it.Key)
	}
	return out
}

func testItemRoundTrip(t *testing.T, s store.ItemStore) {
	ctx := context.Background()
	at := time.Unix(1700000000, 123456789).UTC()
	in := item("user.u1", "color", `{"favourite": "green", "n": 3}`)
	in.UpdatedAt = at
	put(t, s, "acme", in)
	got, err := s.Item(ctx, "acme", []string{"user", "u1"}, "color", false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Namespace, []string{"user", "u1"}) || got.Key != "color" {
		t.Errorf("Item = %v/%s, want user.u1/color", got.Namespace, got.Key)
	}
	if d := diffJSON(got.Value, in.Value); d != "" {
		t.Errorf("Item value: %s", d)
	}
	if !got.CreatedAt.Equal(at) || !got.UpdatedAt.Equal(at) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("Item times = %v, %v; want %v in UTC", got.CreatedAt, got.UpdatedAt, at)
	}
	if got.TTL != 0 || !got.ExpiresAt.IsZero() {
		t.Errorf("Item without a TTL has TTL %v, expiry %v", got.TTL, got.ExpiresAt)
	}
}

func testItemReplace(t *testing.T, s store.ItemStore) {
	ctx := context.Background()
	first := time.Now().Add(-time.Hour).UTC()
	a := item("user.u1", "k", `{"v": 1}`)
	a.UpdatedAt = first
	put(t, s, "", a)
	put(t, s, "", item("user.u1", "k", `{"v": 2, "w": true}`))
	got, err := s.Item(ctx, "", []string{"user", "u1"}, "k", false)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffJSON(got.Value, json.RawMessage(`{"v": 2, "w": true}`)); d != "" {
		t.Errorf("replaced value: %s", d)
	}
	if !got.CreatedAt.Equal(first) || !got.UpdatedAt.After(first) {
		t.Errorf("replaced item created %v updated %v; want created %v, updated later", got.CreatedAt, got.UpdatedAt, first)
	}
}

func testItemNotFound(t *testing.T, s store.ItemStore) {
	ctx := context.Background()
	if _, err := s.Item(ctx, "", []string{"user"}, "nope", true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Item of an unknown key err = %v, want ErrNotFound", err)
	}
	put(t, s, "", item("user", "k", `{}`))
	if err := s.DeleteItem(ctx, "", []string{"user"}, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Item(ctx, "", []string{"user"}, "k", false); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Item after DeleteItem err = %v, want ErrNotFound", err)
	}
	if err := s.DeleteItem(ctx, "", []string{"user"}, "k"); err != nil {
		t.Errorf("DeleteItem of a deleted item: %v, want nil", err)
	}
}

func testItemTenants(t *testing.T, s store.ItemStore) {
	ctx := context.Background()
	put(t, s, "a", item("user.u1", "k", `{"who": "a"}`))
	put(t, s, "b", item("user.u1", "k", `{"who": "b"}`))
	got, err := s.Item(ctx, "b", []string{"user", "u1"}, "k", false)
	if err != nil || !strings.Contains(string(got.Value), `"b"`) {
		t.Fatalf("tenant b's item = %v, %v", got, err)
	}
	if err := s.DeleteItem(ctx, "b", []string{"user", "u1"}, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Item(ctx, "a", []string{"user", "u1"}, "k", false); err != nil {
		t.Errorf("tenant b's delete removed tenant a's item: %v", err)
	}
	if got := search(t, s, "b", store.ItemQuery{}); len(got) != 0 {
		t.Errorf("tenant b searches %v, want nothing", got)
	}
	ns, err := s.Namespaces(ctx, "c", store.NamespaceQuery{})
	if err != nil || len(ns) != 0 {
		t.Errorf("tenant c's namespaces = %v, %v; want none", ns, err)
	}
}

func testItemSearch(t *testing.T, s store.ItemStore) {
	base := time.Now().Add(-time.Hour)
	for i, id := range []string{"user.u1/a", "user.u2/b", "users/c", "username/d", "user.u1.notes/e", "other/f", "user.u1/g"} {
		ns, key, _ := strings.Cut(id, "/")
		it := item(ns, key, fmt.Sprintf(`{"i": %d}`, i))
		it.UpdatedAt = base.Add(time.Duration(i) * time.Second)
		put(t, s, "", it)
	}
	tests := []struct {
		q    store.ItemQuery
		want []string
	}{
		{store.ItemQuery{Prefix: []string{"user"}}, []string{"user.u1/g", "user.u1.notes/e", "user.u2/b", "user.u1/a"}},
		{store.ItemQuery{Prefix: []string{"user", "u1"}}, []string{"user.u1/g", "user.u1.notes/e", "user.u1/a"}},
		{store.ItemQuery{Prefix: []string{"user", "u1"}, Limit: 2}, []string{"user.u1/g", "user.u1.notes/e"}},
		{store.ItemQuery{Prefix: []string{"user", "u1"}, Limit: 2, Offset: 2}, []string{"user.u1/a"}},
		{store.ItemQuery{Prefix: []string{"user", "u1", "notes"}}, []string{"user.u1.notes/e"}},
		{store.ItemQuery{Prefix: []string{"use"}}, []string{}},
		{store.ItemQuery{Limit: 3}, []string{"user.u1/g", "other/f", "user.u1.notes/e"}},
	}
	for _, tt := range tests {
		if got := search(t, s, "", tt.q); !slices.Equal(got, tt.want) {
			t.Errorf("SearchItems %+v\n got:  %v\n want: %v", tt.q, got, tt.want)
		}
	}
}

func testItemFilter(t *testing.T, s store.ItemStore) {
	base := time.Now().Add(-time.Hour)
	values := []string{
		`{"kind": "fact", "score": 3, "ok": true, "who": {"name": "ada"}}`,
		`{"kind": "fact", "score": 7.5, "ok": false, "who": {"name": "bob"}}`,
		`{"kind": "note", "score": "high", "tags": ["x"]}`,
		`{"kind": "fact", "score": 10}`,
	}
	for i, v := range values {
		it := item("mem", fmt.Sprint(i), v)
		it.UpdatedAt = base.Add(time.Duration(i) * time.Second)
		put(t, s, "", it)
	}
	tests := []struct {
		filter string
		want   []string
	}{
		{`{"kind": "fact"}`, []string{"mem/3", "mem/1", "mem/0"}},
		{`{"kind": {"$ne": "fact"}}`, []string{"mem/2"}},
		{`{"score": {"$gt": 3}}`, []string{"mem/3", "mem/1"}},
		{`{"score": {"$gte": 3, "$lt": 10}}`, []string{"mem/1", "mem/0"}},
		{`{"score": {"$lte": 7.5}}`, []string{"mem/1", "mem/0"}},
		{`{"score": 7.5}`, []string{"mem/1"}},
		{`{"score": "high"}`, []string{"mem/2"}},
		{`{"score": {"$gt": "a"}}`, []string{"mem/2"}},
		{`{"ok": true}`, []string{"mem/0"}},
		{`{"ok": {"$ne": true}}`, []string{"mem/3", "mem/2", "mem/1"}},
		{`{"who.name": "bob"}`, []string{"mem/1"}},
		{`{"tags": ["x"]}`, []string{"mem/2"}},
		{`{"who": {"name": "ada"}}`, []string{"mem/0"}},
		{`{"missing": null}`, []string{}},
		{`{"kind": "fact", "ok": false}`, []string{"mem/1"}},
	}
	for _, tt := range tests {
		var f map[string]any
		dec := json.NewDecoder(strings.NewReader(tt.filter))
		dec.UseNumber()
		if err := dec.Decode(&f); err != nil {
			t.Fatal(err)
		}
		conds, err := store.ParseFilter(f)
		if err != nil {
			t.Fatalf("ParseFilter %s: %v", tt.filter, err)
		}
		if got := search(t, s, "", store.ItemQuery{Prefix: []string{"mem"}, Filter: conds}); !slices.Equal(got, tt.want) {
			t.Errorf("filter %s\n got:  %v\n want: %v", tt.filter, got, tt.want)
		}
	}
	conds, _ := store.ParseFilter(map[string]any{"kind": "fact"})
	if got := search(t, s, "", store.ItemQuery{Prefix: []string{"mem"}, Filter: conds, Limit: 1, Offset: 1}); !slices.Equal(got, []string{"mem/1"}) {
		t.Errorf("a filtered page = %v, want [mem/1]: the offset counts matching items only", got)
	}
}

func testItemExpiry(t *testing.T, s store.ItemStore) {
	ctx := context.Background()
	now := time.Now()
	old := item("tmp", "old", `{}`)
	old.UpdatedAt, old.TTL = now.Add(-2*time.Hour), time.Hour
	fresh := item("tmp", "fresh", `{}`)
	fresh.UpdatedAt, fresh.TTL = now.Add(-time.Minute), time.Hour
	put(t, s, "", old)
	put(t, s, "", fresh)
	put(t, s, "", item("keep", "forever", `{}`))
	if _, err := s.Item(ctx, "", []string{"tmp"}, "old", true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Item of an expired item err = %v, want ErrNotFound", err)
	}
	if got := search(t, s, "", store.ItemQuery{Prefix: []string{"tmp"}}); !slices.Equal(got, []string{"tmp/fresh"}) {
		t.Errorf("search sees %v, want only tmp/fresh", got)
	}
	n, err := s.SweepItems(ctx, now)
	if err != nil || n != 1 {
		t.Errorf("SweepItems = %d, %v; want 1 (the expired one)", n, err)
	}
	if n, err := s.SweepItems(ctx, now.Add(2*time.Hour)); err != nil || n != 1 {
		t.Errorf("SweepItems two hours on = %d, %v; want 1 (the fresh one, now expired)", n, err)
	}
	if got := search(t, s, "", store.ItemQuery{}); !slices.Equal(got, []string{"keep/forever"}) {
		t.Errorf("after the sweeps: %v, want only keep/forever", got)
	}
	ns, err := s.Namespaces(ctx, "", store.NamespaceQuery{})
	if err != nil || !reflect.DeepEqual(ns, [][]string{{"keep"}}) {
		t.Errorf("Namespaces after the sweeps = %v, %v; want [[keep]]", ns, err)
	}
}

func testItemRefresh(t *testing.T, s store.ItemStore) {
	ctx := context.Background()
	start := time.Now()
	for i, key := range []string{"plain", "get", "search"} { // search, the newest, is the one a search of one finds
		it := item("ttl", key, `{}`)
		it.UpdatedAt, it.TTL = start.Add(-50*time.Minute+time.Duration(i)*time.Millisecond), time.Hour
		put(t, s, "", it)
	}
	expiry := func(key string) time.Time {
		it, err := s.Item(ctx, "", []string{"ttl"}, key, false)
		if err != nil {
			t.Fatal(err)
		}
		return it.ExpiresAt
	}
	soon := start.Add(10 * time.Minute)
	if e := expiry("plain"); e.Sub(soon).Abs() > time.Millisecond {
		t.Errorf("an item written 50 minutes ago with a TTL of 1h expires at %v, want %v", e, soon)
	}
	if _, err := s.Item(ctx, "", []string{"ttl"}, "get", true); err != nil {
		t.Fatal(err)
	}
	items, err := s.SearchItems(ctx, "", store.ItemQuery{Prefix: []string{"ttl"}, Limit: 1, Refresh: true})
	if err != nil || len(items) != 1 {
		t.Fatalf("SearchItems = %v, %v", items, err)
	}
	if items[0].Key != "search" {
		t.Fatalf("SearchItems found %s, want the newest item, search", items[0].Key)
	}
	for _, key := range []string{"get", "search"} {
		if e := expiry(key); e.Before(start.Add(59 * time.Minute)) {
			t.Errorf("item %s read with refresh expires at %v, want an hour from the read", key, e)
		}
	}
	if e := expiry("plain"); e.After(start.Add(11 * time.Minute)) {
		t.Errorf("item plain, read without refresh, expires at %v, want still %v", e, soon)
	}
}

func testNamespaces(t *testing.T, s store.ItemStore) {
	ctx := context.Background()
	for _, ns := range []string{"a.b.c", "a.b.d", "a.x", "a.x", "b.c", "a"} {
		put(t, s, "", item(ns, fmt.Sprint(len(ns)), `{}`))
	}
	put(t, s, "", item("a.x", "other", `{}`))
	tests := []struct {
		q    store.NamespaceQuery
		want [][]string
	}{
		{store.NamespaceQuery{}, [][]string{{"a"}, {"a", "b", "c"}, {"a", "b", "d"}, {"a", "x"}, {"b", "c"}}},
		{store.NamespaceQuery{Prefix: []string{"a", "b"}}, [][]string{{"a", "b", "c"}, {"a", "b", "d"}}},
		{store.NamespaceQuery{Suffix: []string{"c"}}, [][]string{{"a", "b", "c"}, {"b", "c"}}},
		{store.NamespaceQuery{MaxDepth: 2}, [][]string{{"a"}, {"a", "b"}, {"a", "x"}, {"b", "c"}}},
		{store.NamespaceQuery{Prefix: []string{"a"}, MaxDepth: 2, Limit: 1, Offset: 1}, [][]string{{"a", "b"}}},
	}
	for _, tt := range tests {
		got, err := s.Namespaces(ctx, "", tt.q)
		if err != nil {
			t.Fatalf("Namespaces %+v: %v", tt.q, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Namespaces %+v\n got:  %v\n want: %v", tt.q, got, tt.want)
		}
	}
}

func testItemInvalid(t *testing.T, s store.ItemStore) {
	ctx := context.Background()
	bad := []*store.Item{
		{Key: "k", Value: json.RawMessage(`{}`)},
		item("a..b", "k", `{}`),
		{Namespace: []string{"a.b"}, Key: "k", Value: json.RawMessage(`{}`)},
		item("a", "", `{}`),
		item("a", "k", `[1]`),
		item("a", "k", `"text"`),
		{Namespace: []string{"a"}, Key: "k", Value: json.RawMessage(`{}`), TTL: -time.Second},
	}
	for _, it := range bad {
		if err := s.PutItem(ctx, "", it); err == nil {
			t.Errorf("PutItem %q/%q of %s: no error", it.Namespace, it.Key, it.Value)
		}
	}
	if _, err := s.SearchItems(ctx, "", store.ItemQuery{Prefix: []string{"a.b"}}); err == nil {
		t.Error("SearchItems with a label holding a period: no error")
	}
	if _, err := s.SearchItems(ctx, "", store.ItemQuery{Limit: store.MaxItemLimit + 1}); err == nil {
		t.Error("SearchItems above the limit's bound: no error")
	}
	if _, err := s.Namespaces(ctx, "", store.NamespaceQuery{MaxDepth: -1}); err == nil {
		t.Error("Namespaces with a negative max_depth: no error")
	}
	if got := search(t, s, "", store.ItemQuery{}); len(got) != 0 {
		t.Errorf("refused puts stored %v", got)
	}
}

func testItemConcurrent(t *testing.T, s store.ItemStore) {
	const writers = 16
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.PutItem(context.Background(), "", item("race", "k", fmt.Sprintf(`{"w": %d}`, i)))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := search(t, s, "", store.ItemQuery{Prefix: []string{"race"}}); !slices.Equal(got, []string{"race/k"}) {
		t.Errorf("after concurrent puts: %v, want one item", got)
	}
}
