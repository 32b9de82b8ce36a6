package sqlite

import (
	"context"
	"database/sql"

	"github.com/runner-dev/runner/runner/store"
)

// maxBatch is the most writes one transaction commits.
const maxBatch = 128

// putReq is a write: a Put, or a lease's Acquire, Renew or Release: one
// statement, stmt run with args, whose answer is the number of rows it
// changed (for a RETURNING statement, the largest value it returned, 0
// for no row). A statement that changes nothing fails alone, with nothing
// written but, for a thread's first Put, the thread's key (which no
// reader sees without checkpoints).
type putReq struct {
	stmt      *sql.Stmt
	args      []any
	returning bool
	key       string // a thread to give its key first (sqliteAddKey)
}

// commitPut commits a write in the group commit of concurrent writes
// (store.Group: one WAL append and one sync for the group) and waits for
// its transaction. It does not give up when ctx ends: a write that
// returns an error has written nothing.
func (s *sqliteStore) commitPut(ctx context.Context, req *putReq) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	res := s.group.Do(req)
	return res.N, res.Err
}

// commitBatch commits batch in one transaction (a lone write in its own
// statement's) and answers each; if the transaction fails, each write is
// committed alone, so an error is only the failing write's.
func (s *sqliteStore) commitBatch(batch []*putReq) []store.Result {
	defer s.ckpt.committed(len(batch))
	res := make([]store.Result, len(batch))
	if len(batch) > 1 && s.inTx(batch, res) == nil {
		return res
	}
	for i, req := range batch {
		res[i].N, res[i].Err = s.exec(req, func(stmt *sql.Stmt) *sql.Stmt { return stmt })
	}
	return res
}

// inTx runs the writes of batch in one transaction and sets the answer
// of each.
func (s *sqliteStore) inTx(batch []*putReq, res []store.Result) error {
	tx, err := s.w.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i, req := range batch {
		if res[i].N, err = s.exec(req, tx.Stmt); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// exec runs the write's statements, each as bind has it (the statement
// itself, or within a transaction).
func (s *sqliteStore) exec(req *putReq, bind func(*sql.Stmt) *sql.Stmt) (int64, error) {
	if req.key != "" {
		if _, err := bind(s.addKey).Exec(req.key); err != nil {
			return 0, err
		}
	}
	stmt := bind(req.stmt)
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
