// Package handle is a durable store of opaque, single-use application
// handles: the building block for application-protected request state
// (weft.StateApplication) and for URL-mode elicitation links.
//
// A handle is 256 bits from crypto/rand, base64url encoded (43 characters). It
// carries no meaning: the store keeps, under the SHA-256 of the handle (never
// the handle itself), the binding it was issued for (tenant, principal,
// authorization partition, operation), an expiry and the application's
// payload. Redeeming a handle atomically consumes it, and only when every
// binding field matches and it has not expired: a handle presented by the
// wrong principal, for the wrong operation, after expiry or a second time
// fails with the single error ErrInvalid and leaves the rightful owner's
// handle untouched. Rotate consumes and replaces in one transaction, so each
// retry of a multi-round flow carries a fresh handle and a replayed one fails.
//
// The store runs on database/sql with SQLite (modernc.org/sqlite, the
// default for one machine) or PostgreSQL (pgx's stdlib driver) so every
// instance of a fleet sees the same handles.
package handle

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/weftmcp/weft/internal/sqlq"
)

// ErrInvalid is the one error for every handle that cannot be redeemed:
// unknown, expired, already used, or bound to another tenant, principal,
// partition or operation. It deliberately does not say which.
var ErrInvalid = errors.New("handle: invalid or expired handle")

// Bytes is the number of random bytes in a handle.
const Bytes = 32

// MaxPayloadBytes bounds the payload stored with a handle.
const MaxPayloadBytes = 1 << 20

// Binding is what a handle is bound to. Every field must match on redemption.
type Binding struct {
	Tenant    string
	Principal string
	Partition string
	Operation string
}

// Dialect selects the SQL flavour.
type Dialect uint8

// The supported dialects.
const (
	SQLite Dialect = iota + 1
	Postgres
)

// Store keeps handles in a SQL table.
type Store struct {
	db      *sql.DB
	dialect Dialect
	table   string
	now     func() time.Time
}

// Options configure [New]. The zero value (or nil) is usable.
type Options struct {
	// Table is the table's name (default "weft_handles"; letters, digits
	// and underscores only).
	Table string
	// Now is the store's clock (nil: time.Now), for tests.
	Now func() time.Time
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// New returns a store on db and creates its table if needed; opts may be
// nil.
func New(ctx context.Context, db *sql.DB, d Dialect, opts *Options) (*Store, error) {
	s := &Store{db: db, dialect: d, table: "weft_handles", now: time.Now}
	if opts != nil {
		if opts.Table != "" {
			s.table = opts.Table
		}
		if opts.Now != nil {
			s.now = opts.Now
		}
	}
	if !tableName.MatchString(s.table) {
		return nil, fmt.Errorf("handle: invalid table name %q", s.table)
	}
	if d != SQLite && d != Postgres {
		return nil, errors.New("handle: unknown dialect")
	}
	blob := "BLOB"
	if d == Postgres {
		blob = "BYTEA"
	}
	ddl := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
		hash TEXT PRIMARY KEY,
		tenant TEXT NOT NULL,
		principal TEXT NOT NULL,
		partition_key TEXT NOT NULL,
		operation TEXT NOT NULL,
		expires_at BIGINT NOT NULL,
		payload %s NOT NULL)`, s.table, blob)
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return nil, fmt.Errorf("handle: create table: %w", err)
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s_expiry ON %s (expires_at)`, s.table, s.table)); err != nil {
		return nil, fmt.Errorf("handle: create index: %w", err)
	}
	return s, nil
}

// q rewrites ? placeholders for PostgreSQL.
func (s *Store) q(query string) string {
	query = strings.ReplaceAll(query, "TABLE", s.table)
	if s.dialect != Postgres {
		return query
	}
	return sqlq.Dollar(query)
}

// NewHandle returns a fresh random handle (not stored).
func NewHandle() (string, error) {
	var b [Bytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("handle: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func hashOf(h string) string {
	sum := sha256.Sum256([]byte(h))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// wellFormed reports whether h looks like a handle; anything else is
// rejected without touching the database.
func wellFormed(h string) bool {
	if len(h) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(h)
	return err == nil
}

// Issue stores payload under a new handle bound to b, valid for ttl.
func (s *Store) Issue(ctx context.Context, b Binding, payload []byte, ttl time.Duration) (string, error) {
	return s.issue(ctx, s.db, b, payload, ttl)
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (s *Store) issue(ctx context.Context, db execer, b Binding, payload []byte, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", errors.New("handle: ttl must be positive")
	}
	if len(payload) > MaxPayloadBytes {
		return "", fmt.Errorf("handle: payload of %d bytes exceeds %d", len(payload), MaxPayloadBytes)
	}
	if payload == nil {
		payload = []byte{}
	}
	h, err := NewHandle()
	if err != nil {
		return "", err
	}
	exp := s.now().Add(ttl).UnixMilli()
	_, err = db.ExecContext(ctx, s.q(`INSERT INTO TABLE (hash, tenant, principal, partition_key, operation, expires_at, payload) VALUES (?, ?, ?, ?, ?, ?, ?)`),
		hashOf(h), b.Tenant, b.Principal, b.Partition, b.Operation, exp, payload)
	if err != nil {
		return "", fmt.Errorf("handle: issue: %w", err)
	}
	return h, nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// consume deletes the handle when every binding field matches and it is
// unexpired, returning its payload; otherwise ErrInvalid and nothing changes.
func (s *Store) consume(ctx context.Context, db queryer, h string, b Binding) ([]byte, error) {
	if !wellFormed(h) {
		return nil, ErrInvalid
	}
	var payload []byte
	err := db.QueryRowContext(ctx, s.q(`DELETE FROM TABLE WHERE hash = ? AND tenant = ? AND principal = ? AND partition_key = ? AND operation = ? AND expires_at > ? RETURNING payload`),
		hashOf(h), b.Tenant, b.Principal, b.Partition, b.Operation, s.now().UnixMilli()).Scan(&payload)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrInvalid
	}
	if err != nil {
		return nil, fmt.Errorf("handle: consume: %w", err)
	}
	return payload, nil
}

// Consume redeems a handle for good and returns its payload.
func (s *Store) Consume(ctx context.Context, h string, b Binding) ([]byte, error) {
	return s.consume(ctx, s.db, h, b)
}

// Rotate redeems h and issues its successor in one transaction: the caller
// gets the old payload and a new handle carrying next. On any failure nothing
// changes (the old handle stays valid for its owner).
func (s *Store) Rotate(ctx context.Context, h string, b Binding, next []byte, ttl time.Duration) (payload []byte, successor string, err error) {
	if !wellFormed(h) {
		return nil, "", ErrInvalid
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, "", fmt.Errorf("handle: rotate: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if payload, err = s.consume(ctx, tx, h, b); err != nil {
		return nil, "", err
	}
	if successor, err = s.issue(ctx, tx, b, next, ttl); err != nil {
		return nil, "", err
	}
	if err = tx.Commit(); err != nil {
		return nil, "", fmt.Errorf("handle: rotate: %w", err)
	}
	return payload, successor, nil
}

// Purge deletes expired handles and reports how many.
func (s *Store) Purge(ctx context.Context) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM TABLE WHERE expires_at <= ?`), s.now().UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("handle: purge: %w", err)
	}
	return res.RowsAffected()
}
