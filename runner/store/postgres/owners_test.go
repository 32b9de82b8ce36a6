package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/runner-dev/runner/runner/store/storetest"
)

// TestMigrateV6 opens a schema of version 5 holding the data
// storetest.CheckOwnersMigrated describes.
func TestMigrateV6(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	queries := append([]string{`SET search_path TO ` + db.name,
		`CREATE TABLE schema_version (version integer NOT NULL)`, `INSERT INTO schema_version VALUES (5)`},
		migrations[:5]...)
	queries = append(queries,
		`INSERT INTO thread_records VALUES ('conv', 'acme', NULL, 1, 1), ('rec-only', 'acme', NULL, 1, 1)`,
		`INSERT INTO runs VALUES ('r1', 'conv', 'acme', 'a', 'success', 'reject', '', NULL, NULL, 1, 1, 0)`,
		`INSERT INTO leases VALUES ('conv', 'x', 3, 0)`)
	for _, th := range [][2]string{{"conv", "acme"}, {"conv/sub@1", "acme"}, {"conv/sub@1/leaf@2", "acme"},
		{"conv/other@1", "other"}, {"exec-t", "acme"}, {"plain", ""}} {
		queries = append(queries, fmt.Sprintf(`INSERT INTO threads VALUES ('%s', 'p', 'completed', 1, 1, 1)`, th[0]),
			fmt.Sprintf(`INSERT INTO checkpoints (thread, id, parent, step, node, next, status, pipeline, config_hash, tenant, created_at, snapshot)
			VALUES ('%s', 1, 0, 1, 'n', '', 'completed', 'p', 'h', '%s', 1, '{}')`, th[0], th[1]))
	}
	for _, q := range append(queries, `SET search_path TO DEFAULT`) {
		if _, err := db.admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	storetest.CheckOwnersMigrated(t, db.open(t))
}
