package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/runner-dev/runner/runner/store"
)

// pgAssistantsSchema creates version 5's tables: the assistants clients
// create (store.AssistantStore), each with its current version, and
// every version of each (deleted with it).
const pgAssistantsSchema = `
CREATE TABLE assistants (
	tenant     text   NOT NULL,
	id         text   NOT NULL,
	version    int    NOT NULL,
	created_at bigint NOT NULL,
	updated_at bigint NOT NULL,
	PRIMARY KEY (tenant, id)
);
CREATE INDEX assistants_created ON assistants (tenant, created_at DESC, id);
CREATE TABLE assistant_versions (
	tenant      text   NOT NULL,
	id          text   NOT NULL,
	version     int    NOT NULL,
	graph_id    text   NOT NULL,
	name        text   NOT NULL,
	description text   NOT NULL,
	config      bytea,
	context     bytea,
	metadata    bytea,
	created_at  bigint NOT NULL,
	PRIMARY KEY (tenant, id, version),
	FOREIGN KEY (tenant, id) REFERENCES assistants ON DELETE CASCADE
);
`

const (
	pgVersionColumns = `v.id, v.tenant, v.version, v.graph_id, v.name, v.description, v.config, v.context, v.metadata`
	// pgCurrentAssistants are tenant $1's assistants (id $2, or all when
	// $2 is NULL) at their current versions.
	pgCurrentAssistants = `SELECT ` + pgVersionColumns + `, a.created_at, a.updated_at
		FROM assistants a JOIN assistant_versions v ON v.tenant = a.tenant AND v.id = a.id AND v.version = a.version
		WHERE a.tenant = $1 AND ($2::text IS NULL OR a.id = $2) ORDER BY a.created_at DESC, a.id`
	pgAssistantVersions = `SELECT ` + pgVersionColumns + `, v.created_at, v.created_at
		FROM assistant_versions v WHERE v.tenant = $1 AND v.id = $2 ORDER BY v.version DESC`
	pgCreateAssistant = `INSERT INTO assistants (tenant, id, version, created_at, updated_at)
		VALUES ($1, $2, 1, $3, $3) ON CONFLICT DO NOTHING`
	// pgNextAssistant makes version $3 current if it is the next.
	pgNextAssistant = `UPDATE assistants SET version = $3, updated_at = $4 WHERE tenant = $1 AND id = $2
		AND $3 = 1 + (SELECT max(version) FROM assistant_versions WHERE tenant = $1 AND id = $2)`
	pgPutVersion = `INSERT INTO assistant_versions (tenant, id, version, graph_id, name, description,
		config, context, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	pgSetAssistantVersion = `UPDATE assistants SET version = $3, updated_at = $4 WHERE tenant = $1 AND id = $2
		AND EXISTS (SELECT FROM assistant_versions WHERE tenant = $1 AND id = $2 AND version = $3)`
)

func (s *pgStore) PutAssistant(ctx context.Context, a *store.Assistant) error {
	if err := store.CheckAssistant(a, time.Now()); err != nil {
		return err
	}
	written := true
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var tag interface{ RowsAffected() int64 }
		var err error
		if a.Version == 1 {
			tag, err = tx.Exec(ctx, pgCreateAssistant, a.Tenant, a.ID, a.CreatedAt.UnixNano())
		} else {
			tag, err = tx.Exec(ctx, pgNextAssistant, a.Tenant, a.ID, a.Version, a.CreatedAt.UnixNano())
		}
		if err != nil || tag.RowsAffected() == 0 {
			written = false
			return err
		}
		_, err = tx.Exec(ctx, pgPutVersion, a.Tenant, a.ID, a.Version, a.GraphID, a.Name, a.Description,
			blob(a.Config), blob(a.Context), blob(a.Metadata), a.CreatedAt.UnixNano())
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("store: put assistant %q: %w", a.ID, err)
	case written:
		return nil
	case a.Version > 1:
		if _, err := s.Assistant(ctx, a.Tenant, a.ID); err != nil {
			return err
		}
	}
	return store.AssistantVersionConflict(a.ID, a.Version)
}

func (s *pgStore) Assistant(ctx context.Context, tenant, id string) (*store.Assistant, error) {
	list, err := s.assistants(ctx, pgCurrentAssistants, tenant, id)
	if err == nil && len(list) == 0 {
		err = store.AssistantNotFound(id, 0)
	}
	if err != nil {
		return nil, err
	}
	return &list[0], nil
}

func (s *pgStore) AssistantVersions(ctx context.Context, tenant, id string) ([]store.Assistant, error) {
	list, err := s.assistants(ctx, pgAssistantVersions, tenant, id)
	if err == nil && len(list) == 0 {
		err = store.AssistantNotFound(id, 0)
	}
	return list, err
}

func (s *pgStore) Assistants(ctx context.Context, tenant string) ([]store.Assistant, error) {
	return s.assistants(ctx, pgCurrentAssistants, tenant, nil)
}

// assistants reads the assistant rows of query.
func (s *pgStore) assistants(ctx context.Context, query string, args ...any) ([]store.Assistant, error) {
	var out []store.Assistant
	err := s.retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Assistant, error) {
			var a store.Assistant
			var created, updated int64
			err := row.Scan(&a.ID, &a.Tenant, &a.Version, &a.GraphID, &a.Name, &a.Description, &a.Config, &a.Context, &a.Metadata, &created, &updated)
			a.CreatedAt, a.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
			return a, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: assistants: %w", err)
	}
	return out, nil
}

func (s *pgStore) SetAssistantVersion(ctx context.Context, tenant, id string, version int) error {
	tag, err := s.pool.Exec(ctx, pgSetAssistantVersion, tenant, id, version, time.Now().UnixNano())
	switch {
	case err != nil:
		return fmt.Errorf("store: assistant %q: %w", id, err)
	case tag.RowsAffected() == 1:
		return nil
	}
	if _, err := s.Assistant(ctx, tenant, id); err != nil {
		return err
	}
	return store.AssistantNotFound(id, version)
}

func (s *pgStore) DeleteAssistant(ctx context.Context, tenant, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM assistants WHERE tenant = $1 AND id = $2`, tenant, id)
	switch {
	case err != nil:
		return fmt.Errorf("store: assistant %q: %w", id, err)
	case tag.RowsAffected() == 0:
		return store.AssistantNotFound(id, 0)
	}
	return nil
}
