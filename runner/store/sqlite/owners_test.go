package sqlite

import (
	"fmt"
	"slices"
	"testing"

	"github.com/runner-dev/runner/runner/store/storetest"
)

// TestSQLiteMigrateV13 opens a file of schema version 12 holding the data
// storetest.CheckOwnersMigrated describes.
func TestSQLiteMigrateV13(t *testing.T) {
	queries := append(slices.Clone(sqliteMigrations[:12]), `PRAGMA user_version = 12`,
		`INSERT INTO thread_records VALUES ('conv', 'acme', NULL, 1, 1), ('rec-only', 'acme', NULL, 1, 1)`,
		`INSERT INTO runs VALUES ('r1', 'conv', 'acme', 'a', 'success', 'reject', '', NULL, NULL, 1, 1, 0)`,
		`INSERT INTO leases VALUES (1, 'x', 3, 0)`)
	for key, th := range [][2]string{{"conv", "acme"}, {"conv/sub@1", "acme"}, {"conv/sub@1/leaf@2", "acme"},
		{"conv/other@1", "other"}, {"exec-t", "acme"}, {"plain", ""}} {
		queries = append(queries, fmt.Sprintf(`INSERT INTO thread_keys (key, id) VALUES (%d, '%s')`, key+1, th[0]),
			fmt.Sprintf(`INSERT INTO checkpoints (tkey, thread, id, parent, step, node, next, status, pipeline, config_hash, tenant, created_at, snapshot)
			VALUES (%d, '%s', 1, 0, 1, 'n', '', 'completed', 'p', 'h', '%s', 1, '{}')`, key+1, th[0], th[1]))
	}
	storetest.CheckOwnersMigrated(t, openTest(t, oldFile(t, queries...)))
}
