package sqlite

import (
	"database/sql"
	"path/filepath"
	"sync/atomic"
	"time"
)

// walPages is how many pages the writer adds to the write-ahead log
// between two checkpoints (some 10 MB; SQLite's count of the pages its
// connection wrote, DBStatusCacheWrite). A checkpoint copies each page
// once, however many commits changed it since the last, and fsyncs
// twice: the rarer, the less work, but the longer its fsyncs, and the
// writer's first commit after it (which restarts the log) syncs the log's
// header behind them. Counted in writes (2,000), a checkpoint came every
// 2,600 pages with 32 clients (writes grouped, 1.3 pages each) but every
// 7,000 or so at 200 runs a second (3.5 each), where the restarts' syncs
// set the p99.
const walPages = 2500

// quietCheckpoint is the longest the log keeps pages the writer added
// without a checkpoint, however few: a store written slowly keeps a
// short log too.
const quietCheckpoint = 5 * time.Second

// faultRetry is the least time between two checkpoints after a write
// fault.
const faultRetry = time.Second

// minLogLimit is the fewest pages between two checkpoints, however
// little room the disk has left.
const minLogLimit = 16

// checkpointer copies the write-ahead log into the database file from a
// connection of its own (PRAGMA wal_checkpoint(PASSIVE), which writers
// do not wait for), so that writes seldom wait for a checkpoint and its
// fsyncs, as a write that crossed SQLite's threshold of 1,000 pages did
// (autocheckpoint). It checkpoints every walPages pages, or every quarter
// of the disk's free space if less (logLimit), and quietCheckpoint after
// pages came if fewer: the log never takes the room a nearly full disk
// has left, which the database then holds (a log that has been copied
// restarts from its beginning, the file no longer growing). After a write
// fault it checkpoints the whole log and truncates it (TRUNCATE), at most
// once every faultRetry until that succeeds: the space the log held goes
// back to the disk.
type checkpointer struct {
	db       *sql.DB
	dir      string        // the database's directory, whose disk's free space bounds the log
	pageSize int64         // the database's page size
	pages    atomic.Int64  // the pages the writer logged
	copied   atomic.Int64  // pages at the start of the last checkpoint
	limit    atomic.Int64  // the pages the log may gain before a checkpoint (logLimit)
	wake     chan struct{} // never closed: a commit may still come after close
	truncate chan struct{} // likewise
	stop     chan struct{}
	done     chan struct{}
}

// startCheckpointer opens the checkpointer's connection to the database
// at path with the driver's options opts, and starts it.
func startCheckpointer(path, opts string) (*checkpointer, error) {
	db, err := sqlOpen(path+"?"+opts, 1)
	if err != nil {
		return nil, err
	}
	c := &checkpointer{db: db, dir: filepath.Dir(path), wake: make(chan struct{}, 1), truncate: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&c.pageSize); err != nil {
		db.Close()
		return nil, err
	}
	c.limit.Store(c.logLimit())
	go c.run()
	return c, nil
}

// logLimit is how many pages the log may gain before the next checkpoint:
// walPages, or a quarter of the pages the disk has free if fewer (at
// least minLogLimit).
func (c *checkpointer) logLimit() int64 {
	free := freeBytes(c.dir)
	if free < 0 {
		return walPages
	}
	return max(minLogLimit, min(walPages, free/c.pageSize/4))
}

// holdCheckpoints, while set, keeps checkpointers from starting a
// checkpoint (WALBytes).
var holdCheckpoints atomic.Bool

// autocheckpoint is the writer's wal_autocheckpoint pragma. With
// sync=normal a checkpointer copies the log in the background, but
// while writes go on it never catches up with the writer, whose next
// transaction could then restart the log: the writer checkpoints what is
// left (little) when the log reaches 16,000 pages, which bounds it at
// 64 MB. With sync=full every commit waits for an fsync anyway, and a
// checkpointer's fsyncs beside the writer's made each commit slower
// (1.4×), so the writer checkpoints alone, at SQLite's 1,000 pages.
func autocheckpoint(opt options) string {
	if background(opt) {
		return "16000"
	}
	return "1000"
}

// background says whether a checkpointer runs beside the writer.
func background(opt options) bool { return opt.sync != "FULL" }

// logged counts n pages the writer added to the log, waking the
// checkpointer when the log gained its limit since the last checkpoint;
// a nil checkpointer does nothing.
func (c *checkpointer) logged(n int) {
	if c == nil || n == 0 {
		return
	}
	if c.pages.Add(int64(n))-c.copied.Load() < c.limit.Load() || holdCheckpoints.Load() {
		return
	}
	select {
	case c.wake <- struct{}{}:
	default: // one is under way
	}
}

// faulted asks for a checkpoint that truncates the log, after a write
// failed; a nil checkpointer does nothing.
func (c *checkpointer) faulted() {
	if c == nil {
		return
	}
	select {
	case c.truncate <- struct{}{}:
	default: // one is asked for
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	quiet := time.NewTicker(quietCheckpoint)
	defer quiet.Stop()
	var retry <-chan time.Time
	for {
		mode := "PASSIVE"
		select {
		case <-c.wake:
		case <-quiet.C:
			if c.pages.Load() == c.copied.Load() || holdCheckpoints.Load() {
				continue
			}
		case <-c.truncate:
			if retry != nil {
				continue // the retry comes
			}
			mode = "TRUNCATE"
		case <-retry:
			mode = "TRUNCATE"
		case <-c.stop:
			return
		}
		quiet.Reset(quietCheckpoint)
		c.copied.Store(c.pages.Load())
		if c.limit.Store(c.logLimit()); c.limit.Load() < walPages {
			mode = "TRUNCATE" // the disk is short of room: the log gives its own back
		}
		retry = nil
		if _, err := c.db.Exec(`PRAGMA wal_checkpoint(` + mode + `)`); err != nil && mode == "TRUNCATE" {
			retry = time.After(faultRetry)
		}
	}
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}
