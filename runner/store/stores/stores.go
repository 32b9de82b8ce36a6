// Package stores opens a checkpoint store from its URL. It links every
// backend; the runtime itself links none, so a program that embeds it
// imports only the backends it opens.
package stores

import (
	"fmt"
	"strings"

	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/postgres"
	"github.com/runner-dev/runner/runner/store/sqlite"
)

// schemes lists the store URLs Open takes, for its errors.
const schemes = "memory:, sqlite:PATH or postgres://HOST/DB"

// Open opens the store named by url:
//
//	memory:                 in-process, lost when the process exits
//	sqlite:PATH             SQLite file at PATH (parent directories created)
//	sqlite:PATH?sync=full   ... with options (see sqlite.Open)
//	postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=disable
//	                        PostgreSQL database, shared by many processes
//	                        (postgresql:// too; options: see postgres.Open)
func Open(url string) (store.Store, error) {
	scheme, rest, ok := strings.Cut(url, ":")
	switch {
	case !ok:
		return nil, fmt.Errorf("store: %q has no scheme; want %s", url, schemes)
	case scheme == "memory" && rest == "":
		return store.NewMemory(), nil
	case scheme == "memory":
		return nil, fmt.Errorf("store: %q: memory: takes no path or options", url)
	case scheme == "sqlite":
		return sqlite.Open(rest)
	case scheme == "postgres" || scheme == "postgresql":
		return postgres.Open(url)
	}
	return nil, fmt.Errorf("store: %q: unknown scheme %q; want %s", url, scheme, schemes)
}
