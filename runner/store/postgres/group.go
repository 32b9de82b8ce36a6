package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/runner-dev/runner/runner/store"
)

// maxGroup is the most Puts one transaction commits.
const maxGroup = 64

// groupTimeout bounds a group's commit, which no caller's context ends:
// its writers wait for it together.
const groupTimeout = time.Minute

// write is a statement and its arguments, committed in the group commit
// of concurrent Puts; its result is the number of rows it changed.
type write struct {
	sql  string
	args []any
}

// commit commits ws in one transaction, sent as one batch: one round
// trip and one commit for all. If the transaction fails (a Put that lost
// a race for its ID aborts it), each write is committed alone, so an
// error is only the failing write's; if the connection was lost, each
// gets that error, and its Put's retry finds out whether it committed.
func (s *pgStore) commit(ws []write) []store.Result {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	res := make([]store.Result, len(ws))
	if len(ws) > 1 {
		err := s.inTx(ctx, ws, res)
		if err == nil || lostConn(err) {
			for i := range res {
				res[i].Err = err // a lost commit may have committed: each Put checks
			}
			return res
		}
	}
	for i, w := range ws {
		tag, err := s.pool.Exec(ctx, w.sql, w.args...)
		res[i] = store.Result{N: tag.RowsAffected(), Err: err}
	}
	return res
}

// inTx runs ws in one transaction and sets the result of each.
func (s *pgStore) inTx(ctx context.Context, ws []write, res []store.Result) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, w := range ws {
			b.Queue(w.sql, w.args...)
		}
		br := tx.SendBatch(ctx, b)
		for i := range ws {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return err
			}
			res[i] = store.Result{N: tag.RowsAffected()}
		}
		return br.Close()
	})
}
