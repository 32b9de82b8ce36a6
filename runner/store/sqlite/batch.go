package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/runner-dev/runner/runner/store"
	"modernc.org/sqlite"
)

// maxBatch is the most writes one transaction commits.
const maxBatch = 128

// putReq is a write: a Put, a lease's Acquire, Renew or Release, an
// append of events, a record's creation or change: query run with args,
// whose answer is the number of rows it changed (for a RETURNING
// statement of one row at most, the value it returned, 0 for no row),
// after the writes before, if any (a thread's key for its first Put; the
// events of an append), and, if it changed a row, before the write after
// (the release of a lease with its last Put, a run created with its
// thread), which must change a row too (else errAfter), in the same
// transaction.
//
// Each statement says OR ROLLBACK (OR IGNORE for a Put): a transaction
// that fails is committed again write by write, so a statement need not
// be undone alone, and SQLite then keeps no statement journal (a copy of
// every page a statement changes, a sixtieth of a served run's CPU).
type putReq struct {
	query     string
	args      []any
	returning bool
	before    *putReq
	after     *putReq
	// audit, when set, is a ledger record the write appends: its args
	// are set when it runs (writer.chain).
	audit *store.AuditRecord
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
	res := make([]store.Result, len(batch))
	err := s.onWriter(func(w *writer) error {
		if len(batch) > 1 && w.inTx(batch, res) == nil {
			return nil
		}
		var last error
		for i := range batch { // each alone
			if err := w.inTx(batch[i:i+1], res[i:i+1]); err != nil {
				last = err
			}
		}
		return last
	})
	if err != nil {
		for i := range res {
			res[i].Err = err
		}
	}
	return res
}

// writer runs the group's writes on the driver connection under the
// writer pool's one connection, with the statements it prepared there:
// database/sql's wrappers and conversions around each statement were a
// tenth of what a served run allocated. Only a group's leader uses it,
// one at a time (store.Group).
type writer struct {
	conn  driverConn
	stmts map[string]driver.Stmt // by query
	args  []driver.NamedValue    // a statement's, reused
	row   []driver.Value         // a RETURNING row, reused
}

// driverConn is what the writer needs of the driver's connection.
type driverConn interface {
	driver.ConnBeginTx
	driver.ConnPrepareContext
	sqlite.DBStatus
}

// onWriter runs f with the writer on the pool's connection; its
// statements are prepared again if the pool replaced the connection. A
// connection whose write failed with a fault that may last (classify) is
// replaced: the pool opens another for the next write, so the writer
// heals when the file can be written again.
func (s *sqliteStore) onWriter(f func(*writer) error) error {
	conn, err := s.w.Conn(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(driverConn)
		if !ok {
			return fmt.Errorf("sqlite: the driver's connection %T cannot begin or prepare", dc)
		}
		if s.wr.conn != c {
			s.wr = writer{conn: c, stmts: map[string]driver.Stmt{}}
		}
		err := f(&s.wr)
		// The pages the connection added to the log since the last call,
		// which resets SQLite's count; its only error is an unknown op.
		if pages, _, err := c.Status(sqlite.DBStatusCacheWrite, true); err == nil {
			s.ckpt.logged(pages)
		}
		if f, _ := classify(err); f.replace {
			s.ckpt.faulted()
			s.wr.close()
			s.wr = writer{}
			return driver.ErrBadConn // database/sql closes the connection
		}
		return nil
	})
	if errors.Is(err, driver.ErrBadConn) {
		return nil // the writes were answered; the next ones get a new connection
	}
	return err
}

// inTx runs the writes of batch in one transaction and sets the answer
// of each; if one fails, the transaction writes nothing, and that write's
// answer is its error.
func (w *writer) inTx(batch []*putReq, res []store.Result) error {
	clear(res)
	tx, err := w.conn.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		res[0].Err = err
		return err
	}
	for i, req := range batch {
		if res[i].N, err = w.exec(req); err != nil {
			res[i].Err = err
			_ = tx.Rollback()
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		res[0].Err = err
		_ = tx.Rollback()
		return err
	}
	return nil
}

// errAfter is the error of a write whose write after changed no row:
// the transaction is rolled back.
var errAfter = errors.New("sqlite: the write after changed no row")

// exec runs the write's statements: those before, its own, and those
// after if its own changed a row.
func (w *writer) exec(req *putReq) (int64, error) {
	if req.before != nil {
		if _, err := w.exec(req.before); err != nil {
			return 0, err
		}
	}
	if req.audit != nil {
		if err := w.chain(req); err != nil {
			return 0, err
		}
	}
	n, err := w.run(req.query, req.args, req.returning)
	if err == nil && n == 1 && req.after != nil {
		var m int64
		if m, err = w.exec(req.after); err == nil && m == 0 {
			err = errAfter
		}
	}
	return n, err
}

// run runs query with args: the rows it changed, or for a RETURNING
// query the integer it returned (0 for no row).
func (w *writer) run(query string, args []any, returning bool) (int64, error) {
	stmt, err := w.stmt(query)
	if err != nil {
		return 0, err
	}
	if err := w.bind(args); err != nil {
		return 0, err
	}
	ctx := context.Background()
	if !returning {
		res, err := stmt.(driver.StmtExecContext).ExecContext(ctx, w.args)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	rows, err := stmt.(driver.StmtQueryContext).QueryContext(ctx, w.args)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	if n := len(rows.Columns()); cap(w.row) < n {
		w.row = make([]driver.Value, n)
	} else {
		w.row = w.row[:n]
	}
	switch err := rows.Next(w.row); {
	case err == io.EOF:
		return 0, nil
	case err != nil:
		return 0, err
	}
	v, ok := w.row[0].(int64)
	if !ok {
		return 0, fmt.Errorf("sqlite: %q returned %T, not an integer", query, w.row[0])
	}
	return v, nil
}

// stmt returns query prepared on the connection, at its first use.
func (w *writer) stmt(query string) (driver.Stmt, error) {
	if stmt := w.stmts[query]; stmt != nil {
		return stmt, nil
	}
	stmt, err := w.conn.PrepareContext(context.Background(), query)
	if err != nil {
		return nil, err
	}
	w.stmts[query] = stmt
	return stmt, nil
}

// bind sets w.args to args as the driver takes them.
func (w *writer) bind(args []any) error {
	w.args = w.args[:0]
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			return fmt.Errorf("sqlite: parameter %d: %w", i+1, err)
		}
		w.args = append(w.args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return nil
}

// driverValue is a as the driver takes it: the types it binds as they
// are, an int as an int64, anything else as database/sql converts it.
func driverValue(a any) (driver.Value, error) {
	switch a := a.(type) {
	case nil, int64, float64, bool, []byte, string:
		return a, nil
	case int:
		return int64(a), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(a)
}

// close closes the writer's statements.
func (w *writer) close() {
	for _, stmt := range w.stmts {
		_ = stmt.Close()
	}
	w.stmts = map[string]driver.Stmt{}
}
