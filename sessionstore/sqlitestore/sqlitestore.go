// Package sqlitestore is a sessionstore.Store on a SQLite database file,
// using the pure-Go modernc.org/sqlite driver (no cgo): the sessions of
// MCP 2025-11-25 clients and the mailboxes of server-to-client requests
// (and of a gateway's parked calls) survive a restart of the process, and
// several processes on one host may share the file.
//
// Two tables hold the state (Options.Prefix + "sessions" and
// Options.Prefix + "session_answers"), as in sessionstore/pgstore.
// Liveness is one indexed column, the session's deadline: the earlier of
// its absolute expiry and its last use plus its idle timeout. Writes run in
// BEGIN IMMEDIATE transactions on one connection per Store (SQLite's write
// lock is taken up front; within a process writes queue in Go); the file is
// in WAL mode with a busy timeout, so reads never wait for writers.
//
// Answers to server-to-client requests are rows of the answers table:
// Expect inserts an empty slot, Deliver fills it and wakes the waiters of
// the same Store at once, and Await takes it. Waiters of other Stores (other
// processes) find a delivered answer by polling (Options.PollInterval).
//
// Open creates the tables if missing.
package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/weftmcp/weft/internal/slotwait"
	"github.com/weftmcp/weft/internal/sqlitedb"
	"github.com/weftmcp/weft/sessionstore"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Options configure Open. The zero value is usable.
type Options struct {
	// Prefix is prepended to the table names (default "weft_").
	Prefix string
	// Limits bound the sessions of every process sharing the file.
	Limits sessionstore.Limits
	// BusyTimeout is how long a write waits for another process's write
	// lock before failing (default 10s).
	BusyTimeout time.Duration
	// PollInterval is how often a waiter re-checks its slot for an answer
	// delivered by another process (default 100ms).
	PollInterval time.Duration
	// ReadConns is the size of the read connection pool (default 4).
	ReadConns int
	// PurgeBatch bounds the expired rows Create deletes at once (default 200).
	PurgeBatch int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Store is a sessionstore.Store on a SQLite file. It is safe for
// concurrent use.
type Store struct {
	write, read *sql.DB
	now         func() time.Time
	limits      sessionstore.Limits
	poll        time.Duration
	purge       int
	sessions    string // table names
	answers     string

	waiters slotwait.Waiters
}

var _ sessionstore.Store = (*Store)(nil)

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// Open opens (creating if missing) the database file at path and its
// tables.
func Open(ctx context.Context, path string, o *Options) (*Store, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Prefix == "" {
		opts.Prefix = "weft_"
	}
	if !identRE.MatchString(opts.Prefix) {
		return nil, fmt.Errorf("sqlitestore: prefix %q: use lower-case letters, digits and underscores: %w", opts.Prefix, sessionstore.ErrInvalid)
	}
	if err := opts.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 100 * time.Millisecond
	}
	if opts.PurgeBatch <= 0 {
		opts.PurgeBatch = 200
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	write, read, err := sqlitedb.Open(path, sqlitedb.Config{BusyTimeout: opts.BusyTimeout, Synchronous: "NORMAL",
		Pragmas: []string{"foreign_keys(1)"}, ReadConns: opts.ReadConns, Invalid: sessionstore.ErrInvalid})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	s := &Store{write: write, read: read, now: opts.Now, limits: opts.Limits.WithDefaults(), poll: opts.PollInterval,
		purge: opts.PurgeBatch, sessions: opts.Prefix + "sessions", answers: opts.Prefix + "session_answers"}
	if err := s.migrate(ctx, opts.Prefix); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database handles. Waiters end with their context or
// slot; later calls fail.
func (s *Store) Close() error {
	return errors.Join(s.write.Close(), s.read.Close())
}

func (s *Store) migrate(ctx context.Context, prefix string) error {
	return s.withTx(ctx, func(tx *sql.Tx) error {
		for _, stmt := range []string{
			`CREATE TABLE IF NOT EXISTS ` + s.sessions + ` (
				id TEXT PRIMARY KEY,
				protocol_version TEXT NOT NULL,
				client_capabilities BLOB NOT NULL,
				client_info BLOB NOT NULL,
				identity_digest TEXT NOT NULL,
				owner TEXT NOT NULL,
				partition_key TEXT NOT NULL DEFAULT '',
				log_level TEXT NOT NULL DEFAULT '',
				subscriptions TEXT NOT NULL DEFAULT '[]',
				initialized INTEGER NOT NULL DEFAULT 0,
				created_at INTEGER NOT NULL,
				last_seen INTEGER NOT NULL,
				idle_us INTEGER NOT NULL,
				expires_at INTEGER NOT NULL,
				deadline INTEGER NOT NULL
			)`,
			`CREATE INDEX IF NOT EXISTS ` + prefix + `sessions_deadline ON ` + s.sessions + ` (deadline)`,
			`CREATE INDEX IF NOT EXISTS ` + prefix + `sessions_owner ON ` + s.sessions + ` (owner, deadline)`,
			`CREATE INDEX IF NOT EXISTS ` + prefix + `sessions_partition ON ` + s.sessions + ` (partition_key, deadline)`,
			`CREATE TABLE IF NOT EXISTS ` + s.answers + ` (
				session_id TEXT NOT NULL REFERENCES ` + s.sessions + ` (id) ON DELETE CASCADE,
				request_id TEXT NOT NULL,
				body BLOB,
				expires_at INTEGER NOT NULL,
				PRIMARY KEY (session_id, request_id)
			)`,
			`CREATE INDEX IF NOT EXISTS ` + prefix + `session_answers_expiry ON ` + s.answers + ` (expires_at)`,
		} {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("sqlitestore: create tables: %w", err)
			}
		}
		return nil
	})
}

// withTx runs fn in a write transaction (BEGIN IMMEDIATE).
func (s *Store) withTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlitestore: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitestore: commit: %w", err)
	}
	return nil
}

func us(t time.Time) int64 { return t.UnixMicro() }

func fromUS(v int64) time.Time { return time.UnixMicro(v).UTC() }

func deadline(sess *sessionstore.Session) time.Time {
	d := sess.LastSeen.Add(sess.IdleTimeout)
	if sess.ExpiresAt.Before(d) {
		return sess.ExpiresAt
	}
	return d
}

const sessionCols = `id, protocol_version, client_capabilities, client_info, identity_digest, owner, partition_key, log_level,
	subscriptions, initialized, created_at, last_seen, idle_us, expires_at`

func scanSession(row *sql.Row) (*sessionstore.Session, error) {
	var sess sessionstore.Session
	var subs string
	var created, seen, idle, expires int64
	err := row.Scan(&sess.ID, &sess.ProtocolVersion, &sess.ClientCapabilities, &sess.ClientInfo, &sess.IdentityDigest,
		&sess.Owner, &sess.Partition, &sess.LogLevel, &subs, &sess.Initialized, &created, &seen, &idle, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sessionstore.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: read session: %w", err)
	}
	if err := json.Unmarshal([]byte(subs), &sess.Subscriptions); err != nil {
		return nil, fmt.Errorf("sqlitestore: read session subscriptions: %w", err)
	}
	if sess.Subscriptions == nil {
		sess.Subscriptions = []string{}
	}
	sess.CreatedAt, sess.LastSeen, sess.ExpiresAt = fromUS(created), fromUS(seen), fromUS(expires)
	sess.IdleTimeout = time.Duration(idle) * time.Microsecond
	return &sess, nil
}

func subscriptionsJSON(subs []string) (string, error) {
	if subs == nil {
		subs = []string{}
	}
	b, err := json.Marshal(subs)
	if err != nil {
		return "", fmt.Errorf("sqlitestore: encode subscriptions: %w", err)
	}
	return string(b), nil
}

// Create implements sessionstore.Store.
func (s *Store) Create(ctx context.Context, in *sessionstore.Session) error {
	now := s.now()
	sess, err := in.ForCreate(now)
	if err != nil {
		return err
	}
	subs, err := subscriptionsJSON(sess.Subscriptions)
	if err != nil {
		return err
	}
	evicted := ""
	err = s.withTx(ctx, func(tx *sql.Tx) error {
		// Purge a batch of expired sessions (their answers cascade) and of
		// expired answer slots; the id being created is always purged if
		// expired, so that it can be reused.
		for _, q := range []struct {
			text string
			args []any
		}{
			{`DELETE FROM ` + s.sessions + ` WHERE id = ? AND deadline <= ?`, []any{sess.ID, us(now)}},
			{`DELETE FROM ` + s.sessions + ` WHERE id IN (SELECT id FROM ` + s.sessions + ` WHERE deadline <= ? LIMIT ?)`, []any{us(now), s.purge}},
			{`DELETE FROM ` + s.answers + ` WHERE rowid IN (SELECT rowid FROM ` + s.answers + ` WHERE expires_at <= ? LIMIT ?)`, []any{us(now), s.purge}},
		} {
			if _, err := tx.ExecContext(ctx, q.text, q.args...); err != nil {
				return fmt.Errorf("sqlitestore: purge: %w", err)
			}
		}
		var total, mine, partition int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(owner = ?2), 0), coalesce(sum(?3 <> '' AND partition_key = ?3), 0)
			FROM `+s.sessions+` WHERE deadline > ?1`, us(now), sess.Owner, sess.Partition).Scan(&total, &mine, &partition); err != nil {
			return fmt.Errorf("sqlitestore: count sessions: %w", err)
		}
		if mine >= s.limits.MaxPerIdentity || (sess.Partition != "" && partition >= s.limits.MaxPerPartition) {
			return sessionstore.ErrLimit
		}
		if total >= s.limits.MaxSessions {
			if !s.limits.EvictWhenFull {
				return sessionstore.ErrLimit
			}
			// Evict the least recently used session of the owner holding
			// the most, unless that is the creator.
			var top string
			var most int
			if err := tx.QueryRowContext(ctx, `SELECT owner, count(*) AS n FROM `+s.sessions+` WHERE deadline > ?
				GROUP BY owner ORDER BY n DESC, owner LIMIT 1`, us(now)).Scan(&top, &most); err != nil {
				return fmt.Errorf("sqlitestore: rank owners: %w", err)
			}
			if mine >= most {
				return sessionstore.ErrLimit
			}
			if err := tx.QueryRowContext(ctx, `DELETE FROM `+s.sessions+` WHERE id = (SELECT id FROM `+s.sessions+`
				WHERE owner = ? AND deadline > ? ORDER BY last_seen, id LIMIT 1) RETURNING id`, top, us(now)).Scan(&evicted); err != nil {
				return fmt.Errorf("sqlitestore: evict a session: %w", err)
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO `+s.sessions+` (`+sessionCols+`, deadline)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			sess.ID, sess.ProtocolVersion, sess.ClientCapabilities, sess.ClientInfo, sess.IdentityDigest, sess.Owner, sess.Partition, sess.LogLevel,
			subs, sess.Initialized, us(sess.CreatedAt), us(sess.LastSeen), sess.IdleTimeout.Microseconds(), us(sess.ExpiresAt),
			us(deadline(sess)))
		if err != nil {
			return fmt.Errorf("sqlitestore: insert session: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return sessionstore.ErrExists
		}
		return nil
	})
	if err == nil && evicted != "" {
		s.waiters.WakeSession(evicted) // its slots are gone
	}
	return err
}

// Get implements sessionstore.Store.
func (s *Store) Get(ctx context.Context, id string) (*sessionstore.Session, error) {
	now := us(s.now())
	var out *sessionstore.Session
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = scanSession(tx.QueryRowContext(ctx, `UPDATE `+s.sessions+` SET
				last_seen = max(last_seen, ?2),
				deadline = min(expires_at, max(last_seen, ?2) + idle_us)
			WHERE id = ?1 AND deadline > ?2 RETURNING `+sessionCols, id, now))
		return err
	})
	return out, err
}

// Update implements sessionstore.Store.
func (s *Store) Update(ctx context.Context, id string, fn func(*sessionstore.Session) error) (*sessionstore.Session, error) {
	now := s.now()
	var out *sessionstore.Session
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		cur, err := scanSession(tx.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM `+s.sessions+
			` WHERE id = ? AND deadline > ?`, id, us(now)))
		if err != nil {
			return err
		}
		next := cur.Clone()
		if err := fn(next); err != nil {
			return err
		}
		if now.After(cur.LastSeen) {
			cur.LastSeen = now
		}
		cur.LogLevel, cur.Subscriptions, cur.Initialized = next.LogLevel, append([]string{}, next.Subscriptions...), next.Initialized
		subs, err := subscriptionsJSON(cur.Subscriptions)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE `+s.sessions+` SET log_level = ?, subscriptions = ?, initialized = ?,
				last_seen = ?, deadline = ? WHERE id = ?`,
			cur.LogLevel, subs, cur.Initialized, us(cur.LastSeen), us(deadline(cur)), id); err != nil {
			return fmt.Errorf("sqlitestore: update session: %w", err)
		}
		out = cur
		return nil
	})
	return out, err
}

// Delete implements sessionstore.Store.
func (s *Store) Delete(ctx context.Context, id string) (bool, error) {
	now := us(s.now())
	live, found := false, false
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `DELETE FROM `+s.sessions+` WHERE id = ? RETURNING deadline > ?`, id, now).Scan(&live)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sqlitestore: delete session: %w", err)
		}
		found = true
		return nil
	})
	if found {
		s.waiters.WakeSession(id) // their slots are gone
	}
	return live, err
}

// Expect implements sessionstore.Store.
func (s *Store) Expect(ctx context.Context, sessionID, requestID string, expires time.Time) error {
	if !sessionstore.ValidID(requestID) {
		return errors.Join(sessionstore.ErrInvalid, errors.New("request id must be 1..128 visible ASCII characters"))
	}
	now := us(s.now())
	return s.withTx(ctx, func(tx *sql.Tx) error {
		var live bool
		var pending int
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.sessions+` WHERE id = ?1 AND deadline > ?2),
				(SELECT count(*) FROM `+s.answers+` WHERE session_id = ?1)`, sessionID, now).Scan(&live, &pending); err != nil {
			return fmt.Errorf("sqlitestore: expect: %w", err)
		}
		switch {
		case !live:
			return sessionstore.ErrNotFound
		case pending >= s.limits.MaxPendingAnswers:
			return sessionstore.ErrLimit
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO `+s.answers+` (session_id, request_id, expires_at) VALUES (?, ?, ?)`,
			sessionID, requestID, us(expires))
		var se *sqlite.Error
		if errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE) {
			return sessionstore.ErrExists
		}
		if err != nil {
			return fmt.Errorf("sqlitestore: expect: %w", err)
		}
		return nil
	})
}

// Deliver implements sessionstore.Store.
func (s *Store) Deliver(ctx context.Context, sessionID, requestID string, msg []byte) (bool, error) {
	if !sessionstore.ValidID(sessionID) || !sessionstore.ValidID(requestID) {
		return false, nil
	}
	now := us(s.now())
	delivered := false
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE `+s.answers+` SET body = ?3
			WHERE session_id = ?1 AND request_id = ?2 AND body IS NULL AND expires_at > ?4
			AND EXISTS (SELECT 1 FROM `+s.sessions+` WHERE id = ?1 AND deadline > ?4)`,
			sessionID, requestID, append([]byte{}, msg...), now)
		if err != nil {
			return fmt.Errorf("sqlitestore: deliver: %w", err)
		}
		n, _ := res.RowsAffected()
		delivered = n > 0
		return nil
	})
	if delivered {
		s.waiters.Wake(sessionID, requestID)
	}
	return delivered, err
}

// Await implements sessionstore.Store.
func (s *Store) Await(ctx context.Context, sessionID, requestID string) ([]byte, error) {
	wake, remove := s.waiters.Add(sessionID, requestID)
	defer remove()
	defer func() {
		// The slot never outlives its waiter.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.withTx(cctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(cctx, `DELETE FROM `+s.answers+` WHERE session_id = ? AND request_id = ?`, sessionID, requestID)
			return err
		})
	}()
	t := time.NewTimer(s.poll)
	defer t.Stop()
	for {
		// A delivered answer is taken even if its session expired since; an
		// empty slot ends with its session's expiry (idle included: nobody
		// else may ever notice it).
		var body []byte
		var filled, live bool
		now := us(s.now())
		err := s.read.QueryRowContext(ctx, `SELECT body, body IS NOT NULL,
				EXISTS (SELECT 1 FROM `+s.sessions+` WHERE id = ?1 AND deadline > ?3)
			FROM `+s.answers+` WHERE session_id = ?1 AND request_id = ?2 AND expires_at > ?3`,
			sessionID, requestID, now).Scan(&body, &filled, &live)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, sql.ErrNoRows):
			return nil, sessionstore.ErrNotFound
		case err != nil:
			return nil, fmt.Errorf("sqlitestore: await: %w", err)
		case filled:
			if body == nil {
				body = []byte{}
			}
			return body, nil
		case !live:
			return nil, sessionstore.ErrNotFound
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		case <-t.C:
			t.Reset(s.poll)
		}
	}
}
