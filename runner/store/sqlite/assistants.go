package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// sqliteAssistantsSchema creates version 12's tables: the assistants
// clients create (store.AssistantStore), each with its current version,
// and every version of each.
const sqliteAssistantsSchema = `
CREATE TABLE assistants (
	tenant     TEXT    NOT NULL,
	id         TEXT    NOT NULL,
	version    INTEGER NOT NULL, -- the current one
	created_at INTEGER NOT NULL, -- Unix nanoseconds
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (tenant, id)
) WITHOUT ROWID;
CREATE INDEX assistants_created ON assistants (tenant, created_at DESC, id);
CREATE TABLE assistant_versions (
	tenant      TEXT    NOT NULL,
	id          TEXT    NOT NULL,
	version     INTEGER NOT NULL,
	graph_id    TEXT    NOT NULL,
	name        TEXT    NOT NULL,
	description TEXT    NOT NULL,
	config      BLOB,
	context     BLOB,
	metadata    BLOB,
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (tenant, id, version)
) WITHOUT ROWID;
`

const (
	sqliteVersionColumns = `v.id, v.tenant, v.version, v.graph_id, v.name, v.description, v.config, v.context, v.metadata`
	// sqliteCurrentAssistants are tenant ?1's assistants (id ?2, or all
	// when ?2 is NULL) at their current versions.
	sqliteCurrentAssistants = `SELECT ` + sqliteVersionColumns + `, a.created_at, a.updated_at
		FROM assistants a JOIN assistant_versions v ON v.tenant = a.tenant AND v.id = a.id AND v.version = a.version
		WHERE a.tenant = ?1 AND (?2 IS NULL OR a.id = ?2) ORDER BY a.created_at DESC, a.id`
	sqliteAssistantVersions = `SELECT ` + sqliteVersionColumns + `, v.created_at, v.created_at
		FROM assistant_versions v WHERE v.tenant = ?1 AND v.id = ?2 ORDER BY v.version DESC`
	// sqliteNextAssistant makes version ?3 current if it is the next.
	sqliteNextAssistant = `UPDATE assistants SET version = ?3, updated_at = ?4 WHERE tenant = ?1 AND id = ?2
		AND ?3 = 1 + (SELECT max(version) FROM assistant_versions WHERE tenant = ?1 AND id = ?2)`
)

func (s *sqliteStore) PutAssistant(ctx context.Context, a *store.Assistant) error {
	if err := store.CheckAssistant(a, time.Now()); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: put assistant %q: %w", a.ID, err)
	}
	defer tx.Rollback()
	var res sql.Result
	if a.Version == 1 {
		res, err = tx.ExecContext(ctx, `INSERT INTO assistants (tenant, id, version, created_at, updated_at)
			VALUES (?1, ?2, 1, ?3, ?3) ON CONFLICT DO NOTHING`, a.Tenant, a.ID, a.CreatedAt.UnixNano())
	} else {
		res, err = tx.ExecContext(ctx, sqliteNextAssistant, a.Tenant, a.ID, a.Version, a.CreatedAt.UnixNano())
	}
	if err := oneRow(res, err, "put assistant "+a.ID); errors.Is(err, store.ErrNotFound) {
		return s.versionRefused(ctx, tx, a)
	} else if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO assistant_versions (tenant, id, version, graph_id, name, description,
		config, context, metadata, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)`,
		a.Tenant, a.ID, a.Version, a.GraphID, a.Name, a.Description, blob(a.Config), blob(a.Context), blob(a.Metadata),
		a.CreatedAt.UnixNano()); err != nil {
		return fmt.Errorf("store: put assistant %q: %w", a.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: put assistant %q: %w", a.ID, err)
	}
	return nil
}

// versionRefused says why version a.Version of a.ID was not written: the
// assistant is unknown, or the version is not the next.
func (s *sqliteStore) versionRefused(ctx context.Context, tx *sql.Tx, a *store.Assistant) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM assistants WHERE tenant = ?1 AND id = ?2`, a.Tenant, a.ID).Scan(&n); err != nil {
		return fmt.Errorf("store: put assistant %q: %w", a.ID, err)
	}
	if n == 0 && a.Version > 1 {
		return store.AssistantNotFound(a.ID, 0)
	}
	return store.AssistantVersionConflict(a.ID, a.Version)
}

func (s *sqliteStore) Assistant(ctx context.Context, tenant, id string) (*store.Assistant, error) {
	list, err := s.assistants(ctx, sqliteCurrentAssistants, tenant, id)
	if err == nil && len(list) == 0 {
		err = store.AssistantNotFound(id, 0)
	}
	if err != nil {
		return nil, err
	}
	return &list[0], nil
}

func (s *sqliteStore) AssistantVersions(ctx context.Context, tenant, id string) ([]store.Assistant, error) {
	list, err := s.assistants(ctx, sqliteAssistantVersions, tenant, id)
	if err == nil && len(list) == 0 {
		err = store.AssistantNotFound(id, 0)
	}
	return list, err
}

func (s *sqliteStore) Assistants(ctx context.Context, tenant string) ([]store.Assistant, error) {
	return s.assistants(ctx, sqliteCurrentAssistants, tenant, nil)
}

// assistants reads the assistant rows of query.
func (s *sqliteStore) assistants(ctx context.Context, query string, args ...any) ([]store.Assistant, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: assistants: %w", err)
	}
	defer rows.Close()
	var out []store.Assistant
	for rows.Next() {
		var a store.Assistant
		var cfg, cx, meta []byte
		var created, updated int64
		if err := rows.Scan(&a.ID, &a.Tenant, &a.Version, &a.GraphID, &a.Name, &a.Description, &cfg, &cx, &meta, &created, &updated); err != nil {
			return nil, fmt.Errorf("store: assistants: %w", err)
		}
		a.Config, a.Context, a.Metadata = raw(cfg), raw(cx), raw(meta)
		a.CreatedAt, a.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
		out = append(out, a)
	}
	return out, rows.Err()
}

func (s *sqliteStore) SetAssistantVersion(ctx context.Context, tenant, id string, version int) error {
	res, err := s.w.ExecContext(ctx, `UPDATE assistants SET version = ?3, updated_at = ?4 WHERE tenant = ?1 AND id = ?2
		AND EXISTS (SELECT 1 FROM assistant_versions WHERE tenant = ?1 AND id = ?2 AND version = ?3)`,
		tenant, id, version, time.Now().UnixNano())
	if err := oneRow(res, err, "assistant "+id); !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if _, err := s.Assistant(ctx, tenant, id); err != nil {
		return err
	}
	return store.AssistantNotFound(id, version)
}

func (s *sqliteStore) DeleteAssistant(ctx context.Context, tenant, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM assistant_versions WHERE tenant = ?1 AND id = ?2;
		DELETE FROM assistants WHERE tenant = ?1 AND id = ?2`, tenant, id)
	if err := oneRow(res, err, "assistant "+id); errors.Is(err, store.ErrNotFound) {
		return store.AssistantNotFound(id, 0)
	} else if err != nil {
		return err
	}
	return nil
}
