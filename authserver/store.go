package authserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/weftmcp/weft/auth"
	"github.com/weftmcp/weft/internal/sqlitedb"
	"github.com/weftmcp/weft/internal/sqlq"
)

// Errors of a [Store].
var (
	// ErrNotFound: no live item has that kind and id.
	ErrNotFound = errors.New("authserver: not found")
	// ErrUsed: a single-use item (a code, a refresh token) was taken
	// before. The returned [Item] still names its Family, so that the
	// caller can revoke every token issued from it.
	ErrUsed = errors.New("authserver: already used")
)

// Item is one stored record: a pending authorization request, an
// authorization code, a refresh token (stored under its SHA-256 digest,
// never in the clear), a grant with its encrypted upstream tokens, a
// remembered consent, a client, or a cached client metadata document.
type Item struct {
	Kind   string
	ID     string
	Family string // the grant an item belongs to; "" for none
	Data   []byte
	// Expires is when the item stops being returned and may be purged.
	Expires time.Time
}

// Store keeps the authorization server's state. Every instance of a fleet
// uses the same Store, so that any instance finishes any flow. It must be
// safe for concurrent use; Take must be atomic across instances.
type Store interface {
	// Put inserts or replaces an item.
	Put(ctx context.Context, it Item) error
	// Get returns a live (unexpired, untaken) item, or ErrNotFound.
	Get(ctx context.Context, kind, id string) (Item, error)
	// Take marks a live item used and returns it, exactly once across all
	// callers; afterwards it returns the item with ErrUsed until the item
	// expires. ErrNotFound when there is no such item.
	Take(ctx context.Context, kind, id string) (Item, error)
	// Insert adds an item unless a live one has its kind and id, and
	// reports whether it did (atomic across instances).
	Insert(ctx context.Context, it Item) (bool, error)
	// Delete removes an item; deleting a missing one is no error.
	Delete(ctx context.Context, kind, id string) error
	// DeleteFamily removes every item of a family.
	DeleteFamily(ctx context.Context, family string) error
	// Trim keeps at most max live items of kind, removing the ones that
	// expire first, and purges expired items of every kind.
	Trim(ctx context.Context, kind string, max int) error
	// Close releases the store's resources.
	Close() error
}

// SQLStore is a [Store] on SQLite (the default, one process) or PostgreSQL
// (a fleet), in one table.
type SQLStore struct {
	write, read *sql.DB
	table       string
	pg          bool
	now         func() time.Time
}

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// OpenSQLite opens (creating it if needed) a SQLite store at path.
func OpenSQLite(ctx context.Context, path string) (*SQLStore, error) {
	w, r, err := sqlitedb.Open(path, sqlitedb.Config{Invalid: ErrConfig})
	if err != nil {
		return nil, fmt.Errorf("authserver: %w", err)
	}
	s := &SQLStore{write: w, read: r, table: "authserver_items", now: time.Now}
	if err := s.migrate(ctx); err != nil {
		_ = w.Close()
		_ = r.Close()
		return nil, err
	}
	return s, nil
}

// OpenPostgres returns a store on db, a PostgreSQL handle (driver "pgx"),
// in table (default "authserver_items"), created if missing. The caller
// keeps db and closes it after the store.
func OpenPostgres(ctx context.Context, db *sql.DB, table string) (*SQLStore, error) {
	if table == "" {
		table = "authserver_items"
	}
	if !tableName.MatchString(table) {
		return nil, fmt.Errorf("%w: table name %q", ErrConfig, table)
	}
	s := &SQLStore{write: db, read: db, table: table, pg: true, now: time.Now}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// q rewrites ? placeholders for PostgreSQL.
func (s *SQLStore) q(query string) string {
	query = strings.ReplaceAll(query, "$T", s.table)
	if !s.pg {
		return query
	}
	return sqlq.Dollar(query)
}

func (s *SQLStore) migrate(ctx context.Context) error {
	blob := "BLOB"
	if s.pg {
		blob = "BYTEA"
	}
	ddl := []string{
		`CREATE TABLE IF NOT EXISTS $T (kind TEXT NOT NULL, id TEXT NOT NULL, family TEXT NOT NULL, data ` + blob +
			` NOT NULL, expires_at BIGINT NOT NULL, used_at BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (kind, id))`,
		`CREATE INDEX IF NOT EXISTS $T_family ON $T (family)`,
		`CREATE INDEX IF NOT EXISTS $T_expiry ON $T (kind, expires_at)`,
	}
	for _, d := range ddl {
		if _, err := s.write.ExecContext(ctx, s.q(d)); err != nil {
			return fmt.Errorf("authserver: create tables: %w", err)
		}
	}
	return nil
}

// Put implements [Store].
func (s *SQLStore) Put(ctx context.Context, it Item) error {
	_, err := s.write.ExecContext(ctx, s.q(`INSERT INTO $T (kind, id, family, data, expires_at, used_at) VALUES (?, ?, ?, ?, ?, 0)
		ON CONFLICT (kind, id) DO UPDATE SET family = excluded.family, data = excluded.data, expires_at = excluded.expires_at, used_at = 0`),
		it.Kind, it.ID, it.Family, it.Data, it.Expires.UnixMilli())
	if err != nil {
		return fmt.Errorf("authserver: store %s: %w", it.Kind, err)
	}
	return nil
}

// Insert implements [Store].
func (s *SQLStore) Insert(ctx context.Context, it Item) (bool, error) {
	res, err := s.write.ExecContext(ctx, s.q(`INSERT INTO $T (kind, id, family, data, expires_at, used_at) VALUES (?, ?, ?, ?, ?, 0)
		ON CONFLICT (kind, id) DO UPDATE SET family = excluded.family, data = excluded.data, expires_at = excluded.expires_at, used_at = 0
		WHERE $T.expires_at <= ?`),
		it.Kind, it.ID, it.Family, it.Data, it.Expires.UnixMilli(), s.now().UnixMilli())
	if err != nil {
		return false, fmt.Errorf("authserver: insert %s: %w", it.Kind, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("authserver: insert %s: %w", it.Kind, err)
	}
	return n == 1, nil
}

// ReplayCache returns an auth.ReplayCache on store, for DPoP proofs: with
// a PostgreSQL store, one cache for a whole fleet of resource servers and
// authorization servers.
func ReplayCache(store Store) auth.ReplayCache { return replayCache{store} }

type replayCache struct{ s Store }

func (r replayCache) Add(ctx context.Context, key string, exp time.Time) (bool, error) {
	return r.s.Insert(ctx, Item{Kind: kindDPoPJTI, ID: key, Data: []byte{}, Expires: exp})
}

// Get implements [Store].
func (s *SQLStore) Get(ctx context.Context, kind, id string) (Item, error) {
	it := Item{Kind: kind, ID: id}
	var exp int64
	err := s.read.QueryRowContext(ctx, s.q(`SELECT family, data, expires_at FROM $T WHERE kind = ? AND id = ? AND used_at = 0 AND expires_at > ?`),
		kind, id, s.now().UnixMilli()).Scan(&it.Family, &it.Data, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return Item{}, ErrNotFound
	}
	if err != nil {
		return Item{}, fmt.Errorf("authserver: load %s: %w", kind, err)
	}
	it.Expires = time.UnixMilli(exp)
	return it, nil
}

// Take implements [Store].
func (s *SQLStore) Take(ctx context.Context, kind, id string) (Item, error) {
	now := s.now().UnixMilli()
	it := Item{Kind: kind, ID: id}
	var exp int64
	err := s.write.QueryRowContext(ctx, s.q(`UPDATE $T SET used_at = ? WHERE kind = ? AND id = ? AND used_at = 0 AND expires_at > ?
		RETURNING family, data, expires_at`), now, kind, id, now).Scan(&it.Family, &it.Data, &exp)
	if err == nil {
		it.Expires = time.UnixMilli(exp)
		return it, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Item{}, fmt.Errorf("authserver: take %s: %w", kind, err)
	}
	err = s.write.QueryRowContext(ctx, s.q(`SELECT family, data, expires_at FROM $T WHERE kind = ? AND id = ? AND used_at <> 0 AND expires_at > ?`),
		kind, id, now).Scan(&it.Family, &it.Data, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return Item{}, ErrNotFound
	}
	if err != nil {
		return Item{}, fmt.Errorf("authserver: take %s: %w", kind, err)
	}
	it.Expires = time.UnixMilli(exp)
	return it, ErrUsed
}

// Delete implements [Store].
func (s *SQLStore) Delete(ctx context.Context, kind, id string) error {
	if _, err := s.write.ExecContext(ctx, s.q(`DELETE FROM $T WHERE kind = ? AND id = ?`), kind, id); err != nil {
		return fmt.Errorf("authserver: delete %s: %w", kind, err)
	}
	return nil
}

// DeleteFamily implements [Store].
func (s *SQLStore) DeleteFamily(ctx context.Context, family string) error {
	if family == "" {
		return nil
	}
	if _, err := s.write.ExecContext(ctx, s.q(`DELETE FROM $T WHERE family = ?`), family); err != nil {
		return fmt.Errorf("authserver: revoke grant: %w", err)
	}
	return nil
}

// Trim implements [Store].
func (s *SQLStore) Trim(ctx context.Context, kind string, max int) error {
	now := s.now().UnixMilli()
	if _, err := s.write.ExecContext(ctx, s.q(`DELETE FROM $T WHERE expires_at <= ?`), now); err != nil {
		return fmt.Errorf("authserver: purge: %w", err)
	}
	limit := "LIMIT -1 OFFSET ?"
	if s.pg {
		limit = "OFFSET ?"
	}
	_, err := s.write.ExecContext(ctx, s.q(`DELETE FROM $T WHERE kind = ? AND id IN
		(SELECT id FROM $T WHERE kind = ? ORDER BY expires_at DESC `+limit+`)`), kind, kind, max)
	if err != nil {
		return fmt.Errorf("authserver: trim %s: %w", kind, err)
	}
	return nil
}

// Close implements [Store]. A PostgreSQL store leaves its handle open.
func (s *SQLStore) Close() error {
	if s.pg {
		return nil
	}
	return errors.Join(s.write.Close(), s.read.Close())
}
