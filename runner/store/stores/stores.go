// Package stores opens a checkpoint store from its URL. It links every
// backend; the runtime itself links none, so a program that embeds it
// imports only the backends it opens.
package stores

import (
	"fmt"
	"strings"

	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
)

// Open opens the store named by url:
//
//	memory:                 in-process, lost when the process exits
//	sqlite:PATH             SQLite file at PATH (parent directories created)
//	sqlite:PATH?sync=full   ... with options (see sqlite.Open)
func Open(url string) (store.Store, error) {
	scheme, rest, ok := strings.Cut(url, ":")
	switch {
	case !ok:
		return nil, fmt.Errorf("store: %q has no scheme; want memory: or sqlite:PATH", url)
	case scheme == "memory" && rest == "":
		return store.NewMemory(), nil
	case scheme == "memory":
		return nil, fmt.Errorf("store: %q: memory: takes no path or options", url)
	case scheme == "sqlite":
		return sqlite.Open(rest)
	}
	return nil, fmt.Errorf("store: %q: unknown scheme %q; want memory: or sqlite:PATH", url, scheme)
}
