package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PostgresEnv names the variable holding the URL of the PostgreSQL server
// tests run against.
const PostgresEnv = "RUNNER_TEST_POSTGRES"

// PostgresSchema creates a schema of its own on the server PostgresEnv
// names, dropped when the test ends, and returns the URL that opens a
// store in it (its search_path). Without the variable the test is
// skipped, or fails under CI, which must run the PostgreSQL tests.
func PostgresSchema(t testing.TB, prefix string) string {
	t.Helper()
	server := os.Getenv(PostgresEnv)
	switch {
	case server == "" && os.Getenv("CI") != "":
		t.Fatalf("%s is not set: CI must run the PostgreSQL tests (.ci/run starts a server)", PostgresEnv)
	case server == "":
		t.Skipf("set %s=postgres://user@host:port/db?sslmode=disable to run the PostgreSQL tests", PostgresEnv)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("connect to %s: %v", PostgresEnv, err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close(ctx)
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
