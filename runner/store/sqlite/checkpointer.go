package sqlite

import (
	"database/sql"
	"sync/atomic"
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

// checkpointer copies the write-ahead log into the database file from a
// connection of its own (PRAGMA wal_checkpoint(PASSIVE), which writers
// do not wait for), so that writes seldom wait for a checkpoint and its
// fsyncs, as a write that crossed SQLite's threshold of 1,000 pages did
// (autocheckpoint).
type checkpointer struct {
	db    *sql.DB
	pages atomic.Int64
	wake  chan struct{} // never closed: a commit may still come after close
	stop  chan struct{}
	done  chan struct{}
}

// startCheckpointer opens the checkpointer's connection to dsn and starts
// it.
func startCheckpointer(dsn string) (*checkpointer, error) {
	db, err := sqlOpen(dsn, 1)
	if err != nil {
		return nil, err
	}
	c := &checkpointer{db: db, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
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
// checkpointer every walPages; a nil checkpointer does nothing.
func (c *checkpointer) logged(n int) {
	if c == nil || n == 0 {
		return
	}
	total := c.pages.Add(int64(n))
	if total/walPages == (total-int64(n))/walPages || holdCheckpoints.Load() {
		return
	}
	select {
	case c.wake <- struct{}{}:
	default: // one is under way
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.wake:
			_, _ = c.db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`)
		case <-c.stop:
			return
		}
	}
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}
