package store

import (
	"fmt"
	"time"
)

// ItemSQL writes the item store's reads for an SQL backend whose table
// items has the columns tenant, ns (a NamespaceKey), key, value,
// created_at, updated_at, ttl and expires_at (nanoseconds; 0: never),
// ns compared byte by byte. It gives the placeholder of the n-th
// argument, from 1: "?1" for SQLite, "$1" for PostgreSQL.
type ItemSQL func(n int) string

// ItemColumns are the columns ScanItem reads, in its order.
const ItemColumns = `ns, key, value, created_at, updated_at, ttl, expires_at`

// under is the condition of tenant's items live at now in namespace
// key only, or, when only is "", under prefix, with its arguments.
func (p ItemSQL) under(tenant string, prefix []string, only string, now time.Time) (string, []any) {
	where := fmt.Sprintf(`tenant = %s AND (expires_at = 0 OR expires_at > %s) AND `, p(1), p(2))
	args := []any{tenant, now.UnixNano()}
	if only != "" {
		return where + `ns = ` + p(3), append(args, only)
	}
	cond, more := p.prefixRange(prefix, 3)
	return where + cond, append(args, more...)
}

// prefixRange is the condition of the namespace keys under prefix, its
// arguments numbered from n, and those arguments.
func (p ItemSQL) prefixRange(prefix []string, n int) (string, []any) {
	from := NamespaceKey(prefix)
	if end := PrefixEnd(from); end != "" {
		return fmt.Sprintf(`ns >= %s AND ns < %s`, p(n), p(n+1)), []any{from, end}
	}
	return `ns >= ` + p(n), []any{from}
}

// Span is the query of the first and the last namespace key of tenant's
// items under prefix (NULL for none), expired or not, each a seek of the
// primary key: when they are one, a search reads that namespace alone,
// newest first, by its index (Search with only), and stops at its page;
// across namespaces it sorts their items.
func (p ItemSQL) Span(tenant string, prefix []string) (string, []any) {
	cond, args := p.prefixRange(prefix, 2)
	from := `FROM items WHERE tenant = ` + p(1) + ` AND ` + cond
	return `SELECT (SELECT ns ` + from + ` ORDER BY ns LIMIT 1), (SELECT ns ` + from + ` ORDER BY ns DESC LIMIT 1)`,
		append([]any{tenant}, args...)
}

// Search is the query of q's search of tenant's items at now — of those
// in namespace key only when it is not "" (see Span) — and its
// arguments, and the query to page its rows with (ReadPage): the
// statement takes the offset itself when nothing filters the rows.
func (p ItemSQL) Search(tenant string, q ItemQuery, only string, now time.Time) (string, []any, ItemQuery) {
	where, args := p.under(tenant, q.Prefix, only, now)
	sql := `SELECT ` + ItemColumns + ` FROM items WHERE ` + where + ` ORDER BY updated_at DESC, ns, key`
	if len(q.Filter) == 0 {
		sql += fmt.Sprintf(` LIMIT %s OFFSET %s`, p(len(args)+1), p(len(args)+2))
		args = append(args, q.Limit, q.Offset)
		q.Offset = 0
	}
	return sql, args, q
}

// Namespaces is the query of the namespace keys of tenant's items under
// q.Prefix at now, in order, and its arguments (ReadNamespaces).
func (p ItemSQL) Namespaces(tenant string, q NamespaceQuery, now time.Time) (string, []any) {
	where, args := p.under(tenant, q.Prefix, "", now)
	return `SELECT DISTINCT ns FROM items WHERE ` + where + ` ORDER BY ns`, args
}

// ItemRows are the rows of an item query: database/sql's and pgx's both.
type ItemRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ReadPage reads the rows of q's search (ItemSQL.Search) and keeps its
// page.
func (q ItemQuery) ReadPage(rows ItemRows) ([]Item, error) {
	return q.Page(func() (*Item, bool, error) {
		if !rows.Next() {
			return nil, false, rows.Err()
		}
		it, err := ScanItem(rows)
		return it, err == nil, err
	})
}

// ReadNamespaces reads the rows of q's namespace keys
// (ItemSQL.Namespaces) and keeps its page.
func (q NamespaceQuery) ReadNamespaces(rows ItemRows) ([][]string, error) {
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return q.Namespaces(keys), nil
}
