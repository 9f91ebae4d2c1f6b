package usertoken

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/weftmcp/weft/internal/sqlitedb"
	"github.com/weftmcp/weft/internal/sqlq"
)

// ErrConfig reports an invalid store setting.
var ErrConfig = errors.New("usertoken: invalid configuration")

// SQLStore is a [Store] in one table of SQLite (one process) or PostgreSQL
// (a fleet). Update holds the record's row lock (PostgreSQL: SELECT ...
// FOR UPDATE; SQLite: the write transaction) while its function runs.
type SQLStore struct {
	write, read *sql.DB
	table       string
	pg          bool
	own         bool // close the handles
}

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// DefaultTable is the table of a store opened without one.
const DefaultTable = "gateway_user_tokens"

// OpenSQLite opens (creating it if needed) a store in the SQLite database
// at path.
func OpenSQLite(ctx context.Context, path string) (*SQLStore, error) {
	w, r, err := sqlitedb.Open(path, sqlitedb.Config{Invalid: ErrConfig})
	if err != nil {
		return nil, fmt.Errorf("usertoken: %w", err)
	}
	s := &SQLStore{write: w, read: r, table: DefaultTable, own: true}
	if err := s.migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// OpenPostgres returns a store on db, a PostgreSQL handle (driver "pgx"),
// in table (default DefaultTable), created if missing. Every gateway
// instance of a fleet opens the same table. The caller keeps db and closes
// it after the store.
func OpenPostgres(ctx context.Context, db *sql.DB, table string) (*SQLStore, error) {
	if table == "" {
		table = DefaultTable
	}
	if !tableName.MatchString(table) {
		return nil, fmt.Errorf("%w: table name %q (lower-case letters, digits and _)", ErrConfig, table)
	}
	s := &SQLStore{write: db, read: db, table: table, pg: true}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *SQLStore) q(query string) string {
	query = strings.ReplaceAll(query, "$T", s.table)
	if s.pg {
		return sqlq.Dollar(query)
	}
	return query
}

func (s *SQLStore) migrate(ctx context.Context) error {
	blob := "BLOB"
	if s.pg {
		blob = "BYTEA"
	}
	_, err := s.write.ExecContext(ctx, s.q(`CREATE TABLE IF NOT EXISTS $T (upstream TEXT NOT NULL, identity TEXT NOT NULL, data `+blob+
		` NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY (upstream, identity))`))
	if err != nil {
		return fmt.Errorf("usertoken: create table %s: %w", s.table, err)
	}
	return nil
}

// Get implements [Store].
func (s *SQLStore) Get(ctx context.Context, k Key) ([]byte, error) {
	var data []byte
	err := s.read.QueryRowContext(ctx, s.q(`SELECT data FROM $T WHERE upstream = ? AND identity = ?`), k.Upstream, k.Identity).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && len(data) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("usertoken: load: %w", err)
	}
	return data, nil
}

// Update implements [Store]. A missing record is first inserted empty, so
// that the row lock serializes the first save of a key too.
func (s *SQLStore) Update(ctx context.Context, k Key, fn func([]byte) ([]byte, error)) (err error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("usertoken: update: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	now := time.Now().UnixMilli()
	if _, err = tx.ExecContext(ctx, s.q(`INSERT INTO $T (upstream, identity, data, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (upstream, identity) DO NOTHING`),
		k.Upstream, k.Identity, []byte{}, now); err != nil {
		return fmt.Errorf("usertoken: update: %w", err)
	}
	lock := ""
	if s.pg {
		lock = " FOR UPDATE"
	}
	var cur []byte
	if err = tx.QueryRowContext(ctx, s.q(`SELECT data FROM $T WHERE upstream = ? AND identity = ?`+lock), k.Upstream, k.Identity).Scan(&cur); err != nil {
		return fmt.Errorf("usertoken: update: %w", err)
	}
	if len(cur) == 0 {
		cur = nil
	}
	next, err := fn(cur)
	if err != nil {
		return err
	}
	if next == nil {
		_, err = tx.ExecContext(ctx, s.q(`DELETE FROM $T WHERE upstream = ? AND identity = ?`), k.Upstream, k.Identity)
	} else {
		_, err = tx.ExecContext(ctx, s.q(`UPDATE $T SET data = ?, updated_at = ? WHERE upstream = ? AND identity = ?`), next, now, k.Upstream, k.Identity)
	}
	if err != nil {
		return fmt.Errorf("usertoken: update: %w", err)
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("usertoken: update: %w", err)
	}
	return nil
}

// Close implements [Store]: it closes a SQLite store's database (a
// PostgreSQL handle stays the caller's).
func (s *SQLStore) Close() error {
	if !s.own {
		return nil
	}
	return errors.Join(s.write.Close(), s.read.Close())
}
