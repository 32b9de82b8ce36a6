package sqlite

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// defaultBusyTimeout is how long a SQLite connection waits for a lock held
// by another connection or process before failing.
const defaultBusyTimeout = 5 * time.Second

// Open opens (creating it and its parent directories if needed) the
// SQLite store described by dsn, "PATH" or "PATH?OPTIONS":
//
//	sync=normal        (default) a checkpoint reaches the OS before Put
//	                   returns: it survives the process being killed (even
//	                   SIGKILL), not a power loss or kernel crash
//	sync=full          fsync on every commit: also survives power loss, at
//	                   the cost of one fsync per Put
//	busy_timeout=5s    how long to wait for a lock held by another process
func Open(dsn string) (store.Store, error) {
	path, query, _ := strings.Cut(dsn, "?")
	switch path {
	case "":
		return nil, fmt.Errorf("store: sqlite:%s: needs a path, as in sqlite:runner.db", dsn)
	case ":memory:":
		return nil, fmt.Errorf("store: sqlite:%s: use memory: for a store in memory", dsn)
	}
	opt, err := parseOptions(query)
	if err != nil {
		return nil, fmt.Errorf("store: sqlite:%s: %w", dsn, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("store: sqlite:%s: %w", dsn, err)
	}
	s, err := openSQLite(path, opt)
	if err != nil {
		return nil, err // not a Store holding a nil *sqliteStore
	}
	return s, nil
}

// options are the options of a sqlite: dsn.
type options struct {
	sync        string // the synchronous pragma: NORMAL or FULL
	busyTimeout time.Duration
}

// parseOptions parses the query of a sqlite: dsn.
func parseOptions(query string) (options, error) {
	opt := options{sync: "NORMAL", busyTimeout: defaultBusyTimeout}
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
