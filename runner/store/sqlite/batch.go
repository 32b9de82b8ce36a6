package sqlite

import (
	"context"
	"database/sql"
	"runtime"
	"slices"
	"sync"
)

// maxBatch is the most writes one transaction commits.
const maxBatch = 128

// putReq is a write: a Put, or a lease's Acquire, Renew or Release: one
// statement, stmt run with args, whose answer is the number of rows it
// changed (for a RETURNING statement, the largest value it returned, 0
// for no row). A statement that changes nothing fails alone, with nothing
// written.
type putReq struct {
	stmt      *sql.Stmt
	args      []any
	returning bool
	done      chan putResult
}

type putResult struct {
	n   int64
	err error
	// lead hands the write's writer the lead of the next group, which
	// holds its write.
	lead bool
}

// group is the group commit of the writes of concurrent runs: the first
// writer to come leads, committing its write and those that queued
// meanwhile, up to maxBatch, in one transaction — one WAL append and one
// sync for all — and answering each; then it hands the lead to the
// first writer still waiting, if any. A lone writer commits its own at
// once. If the group's transaction fails, its writes are committed one
// by one, so an error is only the failing write's.
type group struct {
	mu      sync.Mutex
	leading bool
	pending []*putReq
	last    int // the size of the previous group
}

// commitPut commits a write, in a group, and waits for its transaction.
// It does not give up when ctx ends: a write that returns an error has
// written nothing.
func (s *sqliteStore) commitPut(ctx context.Context, req *putReq) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	req.done = make(chan putResult, 1)
	g := &s.group
	g.mu.Lock()
	g.pending = append(g.pending, req)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	for {
		if lead {
			s.lead()
		}
		res := <-req.done
		if !res.lead {
			return res.n, res.err
		}
		lead = true
	}
}

// lead commits the next group of the writes pending, then hands the lead
// to the first writer still waiting. When the previous group was larger
// than what is pending, it yields once first, so that runs answered
// together come back together.
func (s *sqliteStore) lead() {
	g := &s.group
	g.mu.Lock()
	if len(g.pending) < g.last {
		g.mu.Unlock()
		runtime.Gosched()
		g.mu.Lock()
	}
	n := min(len(g.pending), maxBatch)
	batch := slices.Clone(g.pending[:n])
	g.pending = slices.Delete(g.pending, 0, n)
	g.last = n
	g.mu.Unlock()
	s.commitBatch(batch)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) == 0 {
		g.leading = false
		return
	}
	g.pending[0].done <- putResult{lead: true}
}

// commitBatch commits batch in one transaction (a lone Put in its own
// statement's) and answers each Put.
func (s *sqliteStore) commitBatch(batch []*putReq) {
	if len(batch) == 1 {
		n, err := batch[0].exec(batch[0].stmt)
		batch[0].done <- putResult{n: n, err: err}
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
		req.done <- putResult{n: ns[i]}
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
		return largest(stmt.Query(req.args...))
	}
	res, err := stmt.Exec(req.args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// largest is the largest of the values of rows' first column, 0 for no
// row.
func largest(rows *sql.Rows, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var top int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return 0, err
		}
		top = max(top, v)
	}
	return top, rows.Err()
}
