package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Item is a value of the long-term memory store (LangGraph's /store): a
// JSON object under a key in a namespace, one tenant's. An item with a TTL
// expires TTL after its last write, or its last read that refreshed it;
// an expired item is not read and is removed by SweepItems.
type Item struct {
	Namespace []string `json:"namespace"`
	Key       string   `json:"key"`
	// Value is a JSON object.
	Value     json.RawMessage `json:"value"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	// TTL is 0 for an item that never expires; ExpiresAt is when it
	// expires (zero: never).
	TTL       time.Duration `json:"-"`
	ExpiresAt time.Time     `json:"-"`
}

// ItemQuery selects a tenant's items: those whose namespace starts with
// Prefix (all with none) and whose value matches every condition of
// Filter, most recently updated first (ties by namespace, then key),
// Offset of them skipped and at most Limit returned (10 when 0). Refresh
// extends the TTL of the items returned, as a read of each would.
type ItemQuery struct {
	Prefix        []string
	Filter        []Condition
	Limit, Offset int
	Refresh       bool
}

// NamespaceQuery selects the namespaces a tenant's items are in: those
// starting with Prefix and ending with Suffix, cut to MaxDepth labels (0:
// whole), without repeats, in order, Offset of them skipped and at most
// Limit returned (100 when 0).
type NamespaceQuery struct {
	Prefix, Suffix []string
	MaxDepth       int
	Limit, Offset  int
}

// ItemStore is the long-term memory store: items in namespaces, per
// tenant, across threads. Implementations are safe for concurrent use; a
// read never returns an expired item.
type ItemStore interface {
	// PutItem writes it, replacing the item with its namespace and key
	// (whose CreatedAt it keeps). A zero it.UpdatedAt is set to now; a
	// TTL sets ExpiresAt to UpdatedAt + TTL.
	PutItem(ctx context.Context, tenant string, it *Item) error
	// Item returns an item; ErrNotFound when there is none (or it
	// expired). Refresh extends its TTL from now.
	Item(ctx context.Context, tenant string, namespace []string, key string, refresh bool) (*Item, error)
	// DeleteItem removes an item, if there is one.
	DeleteItem(ctx context.Context, tenant string, namespace []string, key string) error
	// SearchItems returns the items q selects.
	SearchItems(ctx context.Context, tenant string, q ItemQuery) ([]Item, error)
	// Namespaces returns the namespaces q selects.
	Namespaces(ctx context.Context, tenant string, q NamespaceQuery) ([][]string, error)
	// SweepItems removes every tenant's items expired at now and returns
	// how many it removed.
	SweepItems(ctx context.Context, now time.Time) (int, error)
}

// The defaults and bounds of the item store's pages.
const (
	DefaultItemLimit      = 10
	DefaultNamespaceLimit = 100
	MaxItemLimit          = 1000
)

// CheckNamespace validates a namespace: one label at least, none empty or
// holding a period (the API writes a namespace as its labels joined by
// periods).
func CheckNamespace(ns []string) error {
	if len(ns) == 0 {
		return errors.New("the namespace is empty; give it one label at least, such as [\"user\", \"u1\"]")
	}
	return checkLabels(ns)
}

// checkLabels validates the labels of a namespace or of a prefix.
func checkLabels(ns []string) error {
	for i, l := range ns {
		if l == "" || strings.Contains(l, ".") {
			return fmt.Errorf("namespace label %d is %q; labels must be non-empty and hold no period", i, l)
		}
	}
	return nil
}

// CheckItem validates it before a put and stamps a zero UpdatedAt.
func CheckItem(it *Item, now time.Time) error {
	if err := CheckNamespace(it.Namespace); err != nil {
		return fmt.Errorf("store: put item: %w", err)
	}
	switch {
	case it.Key == "":
		return errors.New("store: put item: the key is empty")
	case it.TTL < 0:
		return fmt.Errorf("store: put item %q: ttl %v, want >= 0", it.Key, it.TTL)
	}
	if v := bytes.TrimLeft(it.Value, " \t\r\n"); len(v) == 0 || v[0] != '{' || !json.Valid(v) {
		return fmt.Errorf("store: put item %q: the value must be a JSON object", it.Key)
	}
	if it.UpdatedAt.IsZero() {
		it.UpdatedAt = now
	}
	it.UpdatedAt = it.UpdatedAt.UTC()
	it.ExpiresAt = time.Time{}
	if it.TTL > 0 {
		it.ExpiresAt = it.UpdatedAt.Add(it.TTL)
	}
	return nil
}

// CheckItemQuery validates q and sets its default limit.
func CheckItemQuery(q *ItemQuery) error {
	if err := checkLabels(q.Prefix); err != nil {
		return fmt.Errorf("store: search items: %w", err)
	}
	if q.Limit, q.Offset = pageBounds(q.Limit, q.Offset, DefaultItemLimit); q.Limit > MaxItemLimit {
		return fmt.Errorf("store: search items: limit %d, want at most %d", q.Limit, MaxItemLimit)
	}
	return nil
}

// CheckNamespaceQuery validates q and sets its default limit.
func CheckNamespaceQuery(q *NamespaceQuery) error {
	if err := errors.Join(checkLabels(q.Prefix), checkLabels(q.Suffix)); err != nil {
		return fmt.Errorf("store: namespaces: %w", err)
	}
	if q.MaxDepth < 0 {
		return fmt.Errorf("store: namespaces: max_depth %d, want >= 0", q.MaxDepth)
	}
	q.Limit, q.Offset = pageBounds(q.Limit, q.Offset, DefaultNamespaceLimit)
	return nil
}

func pageBounds(limit, offset, def int) (int, int) {
	if limit <= 0 {
		limit = def
	}
	return limit, max(offset, 0)
}

// NamespaceKey is the form a namespace is stored and ordered in: each
// label followed by a period, so the namespaces under a prefix are the
// keys from NamespaceKey(prefix) up to PrefixEnd of it.
func NamespaceKey(ns []string) string {
	var b strings.Builder
	for _, l := range ns {
		b.WriteString(l)
		b.WriteByte('.')
	}
	return b.String()
}

// PrefixEnd is the first key after every key that starts with key, a
// NamespaceKey ("" for the empty prefix: no end).
func PrefixEnd(key string) string {
	if key == "" {
		return ""
	}
	return key[:len(key)-1] + "/" // the byte after '.'
}

// SplitNamespace is the namespace of a NamespaceKey.
func SplitNamespace(key string) []string {
	return strings.Split(strings.TrimSuffix(key, "."), ".")
}

// Namespaces reduces the sorted, distinct namespace keys of a tenant's
// items under q.Prefix to the page q asks for: each ending with q.Suffix,
// cut to q.MaxDepth, without repeats.
func (q NamespaceQuery) Namespaces(keys []string) [][]string {
	out := [][]string{}
	last := ""
	skip := q.Offset
	for _, k := range keys {
		ns := SplitNamespace(k)
		if !hasSuffix(ns, q.Suffix) {
			continue
		}
		if q.MaxDepth > 0 && len(ns) > q.MaxDepth {
			ns = ns[:q.MaxDepth]
		}
		cut := NamespaceKey(ns)
		if cut == last {
			continue
		}
		last = cut
		if skip > 0 {
			skip--
			continue
		}
		if out = append(out, ns); len(out) == q.Limit {
			break
		}
	}
	return out
}

func hasSuffix(ns, suffix []string) bool {
	if len(suffix) > len(ns) {
		return false
	}
	for i, l := range suffix {
		if ns[len(ns)-len(suffix)+i] != l {
			return false
		}
	}
	return true
}

// Page takes the items q asks for from items in the order the query
// gives them: those that match its filter, after its offset, up to its
// limit. next yields the items in order, false at the end.
func (q ItemQuery) Page(next func() (*Item, bool, error)) ([]Item, error) {
	out := []Item{}
	skip := q.Offset
	for len(out) < q.Limit {
		it, ok, err := next()
		if err != nil || !ok {
			return out, err
		}
		if match, err := Matches(it.Value, q.Filter); err != nil {
			return nil, err
		} else if !match {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, *it)
	}
	return out, nil
}

// ItemNotFound is the error for an unknown item.
func ItemNotFound(ns []string, key string) error {
	return fmt.Errorf("store: item %q in namespace %s: %w", key, strings.Join(ns, "."), ErrNotFound)
}

// ExpiresNano is ExpiresAt in Unix nanoseconds, 0 for an item that never
// expires: the form the SQL stores keep it in.
func (it *Item) ExpiresNano() int64 {
	if it.ExpiresAt.IsZero() {
		return 0
	}
	return it.ExpiresAt.UnixNano()
}

// ScanItem scans a row of an SQL store's items: its namespace key, key,
// value, creation and update times, TTL and expiry (all in nanoseconds,
// expiry 0 for never).
func ScanItem(row interface{ Scan(dest ...any) error }) (*Item, error) {
	var it Item
	var ns string
	var created, updated, ttl, expires int64
	if err := row.Scan(&ns, &it.Key, &it.Value, &created, &updated, &ttl, &expires); err != nil {
		return nil, err
	}
	it.Namespace, it.TTL = SplitNamespace(ns), time.Duration(ttl)
	it.CreatedAt, it.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	if expires > 0 {
		it.ExpiresAt = time.Unix(0, expires).UTC()
	}
	return &it, nil
}

// Refresh extends the TTL of those of items that have one from now, and
// returns their namespace keys and keys, for the store to write the same.
func Refresh(items []Item, now time.Time) (namespaces, keys []string) {
	for i := range items {
		if it := &items[i]; it.TTL > 0 {
			it.ExpiresAt = time.Unix(0, now.UnixNano()+int64(it.TTL)).UTC()
			namespaces, keys = append(namespaces, NamespaceKey(it.Namespace)), append(keys, it.Key)
		}
	}
	return namespaces, keys
}
