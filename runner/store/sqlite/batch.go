package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// maxBatch is the most Puts one transaction commits; maxWait the longest
// the writer waits for a group to fill up.
const (
	maxBatch = 128
	maxWait  = 500 * time.Microsecond
)

// errClosed is the error of a Put on a closed store.
var errClosed = errors.New("store: sqlite: closed")

// putReq is a write waiting for the writer: a Put, or a lease's Acquire,
// Renew or Release: one statement, stmt run with args, whose answer is
// the number of rows it changed (for a RETURNING statement, the value it
// returned, 0 for no row). A statement that changes nothing fails alone,
// with nothing written.
type putReq struct {
	stmt      *sql.Stmt
	args      []any
	returning bool
	done      chan putResult
}

type putResult struct {
	n   int64
	err error
}

// commitPut hands a write to the writer and waits for the commit of the
// transaction that carries it. Once handed over, it is waited for
// whatever ctx does, so that a write that returns an error has written
// nothing.
func (s *sqliteStore) commitPut(ctx context.Context, req *putReq) (int64, error) {
	req.done = make(chan putResult, 1)
	select {
	case s.queue <- req:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-s.stop:
		return 0, errClosed
	}
	res := <-req.done
	return res.n, res.err
}

// writer commits the Puts of concurrent runs in groups: it takes the
// Puts waiting, up to maxBatch, and commits them in one transaction — one
// WAL append and one sync for all — then acknowledges each. A group as
// large as the previous one is waited for, at most maxWait: runs whose
// Puts were acknowledged together come back together. A lone run's
// groups hold one Put, which commits at once. A Put whose ID is not next
// inserts nothing and fails alone; if the transaction fails, its Puts
// are committed one by one, so an error is only the failing Put's.
func (s *sqliteStore) writer() {
	defer close(s.exited)
	batch := make([]*putReq, 0, maxBatch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	want := 1
	for {
		select {
		case req := <-s.queue:
			batch = s.gather(append(batch[:0], req), want, timer)
			s.commitBatch(batch)
			want = len(batch)
		case <-s.stop:
			return
		}
	}
}

// gather adds to batch the Puts waiting, up to maxBatch, then waits for
// more until it holds want or maxWait has passed.
func (s *sqliteStore) gather(batch []*putReq, want int, timer *time.Timer) []*putReq {
	for len(batch) < maxBatch {
		select {
		case req := <-s.queue:
			batch = append(batch, req)
			continue
		default:
		}
		if len(batch) >= want {
			return batch
		}
		timer.Reset(maxWait)
		select {
		case req := <-s.queue:
			batch = append(batch, req)
			timer.Stop()
		case <-timer.C:
			return batch
		}
	}
	return batch
}

// commitBatch commits batch in one transaction (a lone Put in its own
// statement's) and answers each Put.
func (s *sqliteStore) commitBatch(batch []*putReq) {
	if len(batch) == 1 {
		n, err := batch[0].exec(batch[0].stmt)
		batch[0].done <- putResult{n, err}
		return
	}
	ns, err := s.inTx(batch)
	if err != nil {
		for _, req := range batch {
			s.commitBatch([]*putReq{req})
		}
		return
	}
	for i, req := range batch {
		req.done <- putResult{ns[i], nil}
	}
}

// inTx runs the writes of batch in one transaction and returns the
// answer of each.
func (s *sqliteStore) inTx(batch []*putReq) ([]int64, error) {
	tx, err := s.w.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	ns := make([]int64, len(batch))
	for i, req := range batch {
		if ns[i], err = req.exec(tx.Stmt(req.stmt)); err != nil {
			return nil, err
		}
	}
	return ns, tx.Commit()
}

// exec runs the write's statement as stmt (the statement itself, or
// within a transaction).
func (req *putReq) exec(stmt *sql.Stmt) (int64, error) {
	if req.returning {
		var v int64
		err := stmt.QueryRow(req.args...).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil
		}
		return v, err
	}
	res, err := stmt.Exec(req.args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
