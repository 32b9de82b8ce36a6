package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/runner-dev/runner/runner/store"
)

// pgItemsSchema creates version 8's items: the long-term memory store's
// items (store.ItemStore), keyed by tenant, namespace (its
// store.NamespaceKey, compared byte by byte so a prefix is a range of
// keys) and key; items_updated gives a namespace's items newest first,
// items_expiry the items a sweep removes.
const pgItemsSchema = `
CREATE TABLE items (
	tenant     text COLLATE "C" NOT NULL,
	ns         text COLLATE "C" NOT NULL,
	key        text COLLATE "C" NOT NULL,
	value      bytea  NOT NULL,
	created_at bigint NOT NULL,
	updated_at bigint NOT NULL,
	ttl        bigint NOT NULL,
	expires_at bigint NOT NULL,
	PRIMARY KEY (tenant, ns, key)
);
CREATE INDEX items_updated ON items (tenant, ns, updated_at DESC);
CREATE INDEX items_expiry ON items (expires_at) WHERE expires_at > 0;
`

// The item store's statements; $4 is now, in Unix nanoseconds: an item
// expired then is not read.
const (
	// pgPutItem writes an item, keeping the creation time of the one it
	// replaces unless that one had expired.
	pgPutItem = `INSERT INTO items (tenant, ns, key, value, created_at, updated_at, ttl, expires_at)
		VALUES ($1, $2, $3, $4, $5, $5, $6, $7)
		ON CONFLICT (tenant, ns, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
			ttl = excluded.ttl, expires_at = excluded.expires_at,
			created_at = CASE WHEN items.expires_at > 0 AND items.expires_at <= excluded.updated_at
				THEN excluded.created_at ELSE items.created_at END`
	pgDeleteItem = `DELETE FROM items WHERE tenant = $1 AND ns = $2 AND key = $3`
	pgItem       = `SELECT ` + store.ItemColumns + ` FROM items WHERE tenant = $1 AND ns = $2 AND key = $3 AND (expires_at = 0 OR expires_at > $4)`
	// pgRefresh extends the TTL of the items of tenant $1 whose
	// namespaces and keys are the arrays $3 and $4, from $2.
	pgRefresh = `UPDATE items SET expires_at = $2 + ttl WHERE tenant = $1 AND ttl > 0
		AND (ns, key) IN (SELECT * FROM unnest($3::text[], $4::text[]))`
	pgSweepItems = `DELETE FROM items WHERE expires_at > 0 AND expires_at <= $1`
)

func (s *pgStore) PutItem(ctx context.Context, tenant string, it *store.Item) error {
	if err := store.CheckItem(it, time.Now()); err != nil {
		return err
	}
	if err := s.grouped(ctx, pgPutItem, tenant, store.NamespaceKey(it.Namespace), it.Key, []byte(it.Value),
		it.UpdatedAt.UnixNano(), int64(it.TTL), it.ExpiresNano()); err != nil {
		return fmt.Errorf("store: put item %q: %w", it.Key, err)
	}
	return nil
}

// grouped commits a statement in the group commit.
func (s *pgStore) grouped(ctx context.Context, sql string, args ...any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.group.Do(write{sql, args}).Err
}

func (s *pgStore) Item(ctx context.Context, tenant string, ns []string, key string, refresh bool) (*store.Item, error) {
	now := time.Now()
	it, err := store.ScanItem(s.pool.QueryRow(ctx, pgItem, tenant, store.NamespaceKey(ns), key, now.UnixNano()))
	if errors.Is(err, pgx.ErrNoRows) {
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

func (s *pgStore) DeleteItem(ctx context.Context, tenant string, ns []string, key string) error {
	if err := s.grouped(ctx, pgDeleteItem, tenant, store.NamespaceKey(ns), key); err != nil {
		return fmt.Errorf("store: delete item %q: %w", key, err)
	}
	return nil
}

// pgItemSQL writes the item store's reads with PostgreSQL's placeholders.
var pgItemSQL = store.ItemSQL(func(n int) string { return "$" + strconv.Itoa(n) })

func (s *pgStore) SearchItems(ctx context.Context, tenant string, q store.ItemQuery) ([]store.Item, error) {
	if err := store.CheckItemQuery(&q); err != nil {
		return nil, err
	}
	query, args := pgItemSQL.Span(tenant, q.Prefix)
	var first, last *string
	if err := s.pool.QueryRow(ctx, query, args...).Scan(&first, &last); err != nil {
		return nil, fmt.Errorf("store: search items: %w", err)
	} else if first == nil {
		return []store.Item{}, nil
	}
	only := ""
	if *first == *last {
		only = *first
	}
	now := time.Now()
	query, args, q = pgItemSQL.Search(tenant, q, only, now)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: search items: %w", err)
	}
	items, err := q.ReadPage(rows)
	rows.Close()
	if err != nil {
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
func (s *pgStore) refresh(ctx context.Context, tenant string, now time.Time, items []store.Item) error {
	nss, keys := store.Refresh(items, now)
	if len(keys) == 0 {
		return nil
	}
	if err := s.grouped(ctx, pgRefresh, tenant, now.UnixNano(), nss, keys); err != nil {
		return fmt.Errorf("store: refresh items: %w", err)
	}
	return nil
}

func (s *pgStore) Namespaces(ctx context.Context, tenant string, q store.NamespaceQuery) ([][]string, error) {
	if err := store.CheckNamespaceQuery(&q); err != nil {
		return nil, err
	}
	query, args := pgItemSQL.Namespaces(tenant, q, time.Now())
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: namespaces: %w", err)
	}
	ns, err := q.ReadNamespaces(rows)
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("store: namespaces: %w", err)
	}
	return ns, nil
}

func (s *pgStore) SweepItems(ctx context.Context, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, pgSweepItems, now.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("store: sweep items: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
