package store

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// defaultBusyTimeout is how long a SQLite connection waits for a lock held
// by another connection or process before failing.
const defaultBusyTimeout = 5 * time.Second

// Open opens the store named by dsn:
//
//	memory:                 in-process, lost when the process exits
//	sqlite:PATH             SQLite file at PATH (parent directories created)
//	sqlite:PATH?sync=full   ... with options
//
// SQLite options:
//
//	sync=normal        (default) a checkpoint reaches the OS before Put
//	                   returns: it survives the process being killed (even
//	                   SIGKILL), not a power loss or kernel crash
//	sync=full          fsync on every commit: also survives power loss, at
//	                   the cost of one fsync per Put
//	busy_timeout=5s    how long to wait for a lock held by another process
func Open(dsn string) (Store, error) {
	scheme, rest, ok := strings.Cut(dsn, ":")
	switch {
	case !ok:
		return nil, fmt.Errorf("store: dsn %q has no scheme; want memory: or sqlite:PATH", dsn)
	case scheme == "memory" && rest == "":
		return NewMemory(), nil
	case scheme == "memory":
		return nil, fmt.Errorf("store: dsn %q: memory: takes no path or options", dsn)
	case scheme == "sqlite":
		return openSQLiteDSN(dsn, rest)
	}
	return nil, fmt.Errorf("store: dsn %q: unknown scheme %q; want memory: or sqlite:PATH", dsn, scheme)
}

// openSQLiteDSN opens the sqlite: dsn whose text after the scheme is rest.
func openSQLiteDSN(dsn, rest string) (Store, error) {
	path, query, _ := strings.Cut(rest, "?")
	switch path {
	case "":
		return nil, fmt.Errorf("store: dsn %q: sqlite: needs a path, as in sqlite:runner.db", dsn)
	case ":memory:":
		return nil, fmt.Errorf("store: dsn %q: use memory: for a store in memory", dsn)
	}
	opt, err := parseSQLiteOptions(query)
	if err != nil {
		return nil, fmt.Errorf("store: dsn %q: %w", dsn, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("store: dsn %q: %w", dsn, err)
	}
	return openSQLite(path, opt)
}

// sqliteOptions are the options of a sqlite: dsn.
type sqliteOptions struct {
	sync        string // the synchronous pragma: NORMAL or FULL
	busyTimeout time.Duration
}

// parseSQLiteOptions parses the query of a sqlite: dsn.
func parseSQLiteOptions(query string) (sqliteOptions, error) {
	opt := sqliteOptions{sync: "NORMAL", busyTimeout: defaultBusyTimeout}
	q, err := url.ParseQuery(query)
	if err != nil {
		return opt, err
	}
	for key, vals := range q {
		val := vals[len(vals)-1]
		switch key {
		case "sync":
			opt.sync = strings.ToUpper(val)
			if opt.sync != "NORMAL" && opt.sync != "FULL" {
				return opt, fmt.Errorf("sync=%q: want normal or full", val)
			}
		case "busy_timeout":
			opt.busyTimeout, err = time.ParseDuration(val)
			if err != nil || opt.busyTimeout < 0 {
				return opt, fmt.Errorf("busy_timeout=%q: want a duration such as 5s", val)
			}
		default:
			return opt, fmt.Errorf("unknown option %q; want sync or busy_timeout", key)
		}
	}
	return opt, nil
}
