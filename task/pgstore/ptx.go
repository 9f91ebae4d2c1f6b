package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/weftmcp/weft/task"
)

// ptx is a transaction on one pooled connection whose BEGIN travels with its
// first query and whose COMMIT travels with its writes (pipelined in pgx
// batches), so that a read-modify-write under row locks takes two round
// trips instead of five.
type ptx struct {
	conn  *pgxpool.Conn
	begun bool
}

// query runs sql in the transaction, BEGIN first if this is its first
// statement, and calls scan for each row.
func (t *ptx) query(ctx context.Context, sql string, args []any, scan func(row pgx.Rows) error) error {
	b := &pgx.Batch{}
	if !t.begun {
		b.Queue("BEGIN")
	}
	b.Queue(sql, args...)
	br := t.conn.SendBatch(ctx, b)
	if !t.begun {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return fmt.Errorf("begin: %w", err)
		}
		t.begun = true
	}
	rows, err := br.Query()
	if err == nil {
		for rows.Next() {
			if err = scan(rows); err != nil {
				break
			}
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// exec sends the statements of b in one round trip; each must succeed.
func (t *ptx) exec(ctx context.Context, b *pgx.Batch) error {
	br := t.conn.SendBatch(ctx, b)
	var err error
	for i := 0; i < b.Len() && err == nil; i++ {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// commit sends the statements of b and COMMIT in one round trip. Each
// statement must succeed; the first failure aborts the transaction (the
// statements after it, COMMIT included, are not run).
func (t *ptx) commit(ctx context.Context, b *pgx.Batch) error {
	n := b.Len()
	b.Queue("COMMIT")
	br := t.conn.SendBatch(ctx, b)
	var err error
	for i := 0; i <= n && err == nil; i++ {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// inTx runs fn in a pipelined transaction and rolls it back unless fn
// committed it. Errors are wrapped with op; a failed fenced write
// (checkedUpdate) is task.ErrLeaseLost.
func (s *Store) inTx(ctx context.Context, op string, fn func(t *ptx) error) error {
	if err := s.check(op); err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	// pgxpool closes, rather than reuses, a connection released while a
	// transaction is still open on it.
	defer conn.Release()
	t := &ptx{conn: conn}
	err = fn(t)
	if pc := conn.Conn().PgConn(); !pc.IsClosed() && pc.TxStatus() != 'I' {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_, _ = conn.Exec(rctx, "ROLLBACK")
		cancel()
	}
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "22012" { // division_by_zero: see checkedUpdate
			err = fmt.Errorf("fenced update matched no row: %w", task.ErrLeaseLost)
		}
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	return nil
}
