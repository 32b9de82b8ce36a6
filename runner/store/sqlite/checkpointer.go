package sqlite

import (
	"database/sql"
	"sync/atomic"
)

// walWrites is how many writes the writer commits between two WAL
// checkpoints: a write adds one to three pages to the log (a lone Put
// about two and a half, one of a group of 17 under load about 1.3), so
// some 2,600 to 5,000 pages. A checkpoint copies each page once, however
// many writes changed it since the last, and fsyncs twice: against 500
// writes, a served run writes five fewer times to files and takes some
// 4 % less CPU.
const walWrites = 2000

// checkpointer copies the write-ahead log into the database file from a
// connection of its own (PRAGMA wal_checkpoint(PASSIVE), which writers
// do not wait for), so that writes seldom wait for a checkpoint and its
// fsyncs, as a write that crossed SQLite's threshold of 1,000 pages did
// (autocheckpoint).
type checkpointer struct {
	db     *sql.DB
	writes atomic.Int64
	wake   chan struct{} // never closed: a commit may still come after close
	stop   chan struct{}
	done   chan struct{}
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

// committed counts n writes the writer committed, waking the
// checkpointer every walWrites; a nil checkpointer does nothing.
func (c *checkpointer) committed(n int) {
	if c == nil {
		return
	}
	total := c.writes.Add(int64(n))
	if total/walWrites == (total-int64(n))/walWrites || holdCheckpoints.Load() {
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
