package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// sqliteItemsSchema creates version 15's items: the long-term memory
// store's items (store.ItemStore), keyed by tenant, namespace (its
// store.NamespaceKey, so a prefix is a range of keys) and key;
// items_updated gives a namespace's items newest first, items_expiry the
// items a sweep removes.
const sqliteItemsSchema = `
CREATE TABLE items (
	tenant     TEXT    NOT NULL,
	ns         TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	value      BLOB    NOT NULL,
	created_at INTEGER NOT NULL, -- Unix nanoseconds
	updated_at INTEGER NOT NULL,
	ttl        INTEGER NOT NULL, -- nanoseconds, 0: never expires
	expires_at INTEGER NOT NULL, -- Unix nanoseconds, 0: never
	PRIMARY KEY (tenant, ns, key)
) WITHOUT ROWID;
CREATE INDEX items_updated ON items (tenant, ns, updated_at DESC);
CREATE INDEX items_expiry ON items (expires_at) WHERE expires_at > 0;
`

// The item store's statements; ?4 is now, in Unix nanoseconds: an item
// expired then is not read.
const (
	// sqlitePutItem writes an item, keeping the creation time of the
	// one it replaces unless that one had expired.
	sqlitePutItem = `INSERT OR ROLLBACK INTO items (tenant, ns, key, value, created_at, updated_at, ttl, expires_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7)
		ON CONFLICT (tenant, ns, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
			ttl = excluded.ttl, expires_at = excluded.expires_at,
			created_at = CASE WHEN items.expires_at > 0 AND items.expires_at <= excluded.updated_at
				THEN excluded.created_at ELSE items.created_at END`
	sqliteDeleteItem = `DELETE FROM items WHERE tenant = ?1 AND ns = ?2 AND key = ?3`
	sqliteItem       = `SELECT ` + store.ItemColumns + ` FROM items WHERE tenant = ?1 AND ns = ?2 AND key = ?3 AND (expires_at = 0 OR expires_at > ?4)`
	// sqliteRefresh extends the TTL of the items of tenant ?1 whose
	// [ns, key] pairs are the JSON array ?3, from ?2.
	sqliteRefresh = `UPDATE OR ROLLBACK items SET expires_at = ?2 + ttl WHERE tenant = ?1 AND ttl > 0
		AND (ns, key) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?3))`
	// sqliteRefreshOne extends the TTL of item ?4 of namespace ?3.
	sqliteRefreshOne = `UPDATE OR ROLLBACK items SET expires_at = ?2 + ttl WHERE tenant = ?1 AND ns = ?3 AND key = ?4 AND ttl > 0`
	sqliteSweepItems = `DELETE FROM items WHERE expires_at > 0 AND expires_at <= ?1`
)

func (s *sqliteStore) PutItem(ctx context.Context, tenant string, it *store.Item) error {
	if err := store.CheckItem(it, time.Now()); err != nil {
		return err
	}
	_, err := s.commitPut(ctx, &putReq{query: sqlitePutItem, args: []any{tenant, store.NamespaceKey(it.Namespace), it.Key,
		[]byte(it.Value), it.UpdatedAt.UnixNano(), int64(it.TTL), it.ExpiresNano()}})
	if err != nil {
		return fmt.Errorf("store: put item %q: %w", it.Key, err)
	}
	return nil
}

func (s *sqliteStore) Item(ctx context.Context, tenant string, ns []string, key string, refresh bool) (*store.Item, error) {
	now := time.Now()
	it, err := store.ScanItem(s.item.QueryRowContext(ctx, tenant, store.NamespaceKey(ns), key, now.UnixNano()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ItemNotFound(ns, key)
	} else if err != nil {
		return nil, fmt.Errorf("store: item %q: %w", key, err)
	}
	if refresh {
		items := []store.Item{*it}
		if err := s.refresh(ctx, tenant, now, items); err != nil {
			return nil, err
		}
		it = &items[0]
	}
	return it, nil
}

func (s *sqliteStore) DeleteItem(ctx context.Context, tenant string, ns []string, key string) error {
	if _, err := s.commitPut(ctx, &putReq{query: sqliteDeleteItem, args: []any{tenant, store.NamespaceKey(ns), key}}); err != nil {
		return fmt.Errorf("store: delete item %q: %w", key, err)
	}
	return nil
}

// sqliteItemSQL writes the item store's reads with SQLite's placeholders.
var sqliteItemSQL = store.ItemSQL(func(n int) string { return "?" + strconv.Itoa(n) })

func (s *sqliteStore) SearchItems(ctx context.Context, tenant string, q store.ItemQuery) ([]store.Item, error) {
	if err := store.CheckItemQuery(&q); err != nil {
		return nil, err
	}
	query, args := sqliteItemSQL.Span(tenant, q.Prefix)
	var first, last sql.NullString
	if err := s.r.QueryRowContext(ctx, query, args...).Scan(&first, &last); err != nil {
		return nil, fmt.Errorf("store: search items: %w", err)
	} else if !first.Valid {
		return []store.Item{}, nil
	}
	only := ""
	if first == last {
		only = first.String
	}
	now := time.Now()
	query, args, q = sqliteItemSQL.Search(tenant, q, only, now)
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: search items: %w", err)
	}
	items, err := q.ReadPage(rows)
	if err = errors.Join(err, rows.Close()); err != nil {
		return nil, fmt.Errorf("store: search items: %w", err)
	}
	if q.Refresh {
		if err := s.refresh(ctx, tenant, now, items); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// refresh extends the TTL of the tenant's items from now, in the store
// and in items.
func (s *sqliteStore) refresh(ctx context.Context, tenant string, now time.Time, items []store.Item) error {
	nss, keys := store.Refresh(items, now)
	var req *putReq
	switch len(keys) {
	case 0:
		return nil
	case 1:
		req = &putReq{query: sqliteRefreshOne, args: []any{tenant, now.UnixNano(), nss[0], keys[0]}}
	default:
		pairs := make([][2]string, len(keys))
		for i := range keys {
			pairs[i] = [2]string{nss[i], keys[i]}
		}
		list, _ := json.Marshal(pairs)
		req = &putReq{query: sqliteRefresh, args: []any{tenant, now.UnixNano(), string(list)}}
	}
	if _, err := s.commitPut(ctx, req); err != nil {
		return fmt.Errorf("store: refresh items: %w", err)
	}
	return nil
}

func (s *sqliteStore) Namespaces(ctx context.Context, tenant string, q store.NamespaceQuery) ([][]string, error) {
	if err := store.CheckNamespaceQuery(&q); err != nil {
		return nil, err
	}
	query, args := sqliteItemSQL.Namespaces(tenant, q, time.Now())
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: namespaces: %w", err)
	}
	ns, err := q.ReadNamespaces(rows)
	if err = errors.Join(err, rows.Close()); err != nil {
		return nil, fmt.Errorf("store: namespaces: %w", err)
	}
	return ns, nil
}

func (s *sqliteStore) SweepItems(ctx context.Context, now time.Time) (int, error) {
	n, err := s.commitPut(ctx, &putReq{query: sqliteSweepItems, args: []any{now.UnixNano()}})
	if err != nil {
		return 0, fmt.Errorf("store: sweep items: %w", err)
	}
	return int(n), nil
}
