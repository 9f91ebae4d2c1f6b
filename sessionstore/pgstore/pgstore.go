// Package pgstore is a sessionstore.Store on PostgreSQL (pgx/v5), shared by
// every instance of a fleet: any instance can serve any request of a legacy
// MCP session, without sticky routing.
//
// Two tables hold the state (Options.Prefix + "sessions" and
// Options.Prefix + "session_answers"). Liveness is one indexed column, the
// session's deadline: the earlier of its absolute expiry and its last use
// plus its idle timeout. Get refreshes it in the same statement that reads
// the session. Create runs under a transaction-scoped advisory lock, so the
// bounds of sessionstore.Limits hold fleet-wide, and purges a batch of
// expired rows on the way.
//
// Answers to server-to-client requests are rows of the answers table: Expect
// inserts an empty slot, Deliver fills it and announces it with pg_notify,
// and Await (on the instance whose handler waits) takes it. Every Store keeps
// one listening connection that wakes local waiters; waiters also poll
// (Options.PollInterval), so a notification lost while the listener
// reconnects only adds latency.
//
// Open creates the schema objects if missing, under an advisory lock.
package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/weftmcp/weft/internal/pglisten"
	"github.com/weftmcp/weft/internal/slotwait"
	"github.com/weftmcp/weft/sessionstore"
)

// Options configure Open. The zero value is usable.
type Options struct {
	// Schema holds the tables; it is created if missing. Empty means the
	// connection's search_path (usually public).
	Schema string
	// Prefix is prepended to the table names (default "weft_").
	Prefix string
	// Limits bound the sessions of the whole fleet sharing the tables.
	Limits sessionstore.Limits
	// MaxConns caps the connection pool, the listener not counted
	// (default 10).
	MaxConns int
	// PollInterval is how often a waiter re-checks its slot when no
	// notification arrives (default 500ms).
	PollInterval time.Duration
	// PurgeBatch bounds the expired rows Create deletes at once (default 200).
	PurgeBatch int
	// Now is the clock (default time.Now). Instances should have
	// reasonably synchronized clocks: expiry compares their readings.
	Now func() time.Time
	// Logger receives listener reconnections (default slog.Default()).
	Logger *slog.Logger
}

// Store is a sessionstore.Store on PostgreSQL.
type Store struct {
	pool    *connPool
	now     func() time.Time
	log     *slog.Logger
	limits  sessionstore.Limits
	poll    time.Duration
	purge   int
	q       queries
	channel string
	lockKey int64

	waiters slotwait.Waiters

	listener  *pglisten.Listener
	closeOnce sync.Once
}

var _ sessionstore.Store = (*Store)(nil)

var errClosed = fmt.Errorf("pgstore: %w", sessionstore.ErrClosed)

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// Open connects to the database at dsn (a PostgreSQL URL or keyword/value
// string), creates the schema objects if missing and starts the listener.
func Open(ctx context.Context, dsn string, o *Options) (*Store, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Prefix == "" {
		opts.Prefix = "weft_"
	}
	if !identRE.MatchString(opts.Prefix) || (opts.Schema != "" && !identRE.MatchString(opts.Schema)) {
		return nil, fmt.Errorf("pgstore: schema %q / prefix %q: use lower-case letters, digits and underscores: %w",
			opts.Schema, opts.Prefix, sessionstore.ErrInvalid)
	}
	if err := opts.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 10
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	if opts.PurgeBatch <= 0 {
		opts.PurgeBatch = 200
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parse dsn: %w", err)
	}
	sum := sha256.Sum256([]byte("weft-sessions:" + opts.Schema + "." + opts.Prefix))
	s := &Store{
		pool:    newConnPool(cfg, opts.MaxConns),
		now:     opts.Now,
		log:     opts.Logger,
		limits:  opts.Limits.WithDefaults(),
		poll:    opts.PollInterval,
		purge:   opts.PurgeBatch,
		q:       newQueries(opts.Schema, opts.Prefix),
		channel: "weft_sess_" + hex.EncodeToString(sum[:10]),
		lockKey: int64(binary.BigEndian.Uint64(sum[12:20])),
	}
	if err := s.migrate(ctx); err != nil {
		s.pool.close()
		return nil, err
	}
	if err := s.startListener(ctx, cfg); err != nil {
		s.pool.close()
		return nil, err
	}
	return s, nil
}

// Close stops the listener and closes the connections. Waiters end with
// their context or slot; later calls fail with sessionstore.ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.listener.Stop()
		s.pool.close()
	})
	return nil
}

type queries struct {
	sessions, answers string
	ddl               []string
}

func newQueries(schema, prefix string) queries {
	ident := func(name string) string {
		if schema != "" {
			return pgx.Identifier{schema, name}.Sanitize()
		}
		return pgx.Identifier{name}.Sanitize()
	}
	q := queries{sessions: ident(prefix + "sessions"), answers: ident(prefix + "session_answers")}
	if schema != "" {
		q.ddl = append(q.ddl, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
	}
	q.ddl = append(q.ddl,
		`CREATE TABLE IF NOT EXISTS `+q.sessions+` (
			id text PRIMARY KEY,
			protocol_version text NOT NULL,
			client_capabilities bytea NOT NULL,
			client_info bytea NOT NULL,
			identity_digest text NOT NULL,
			owner text NOT NULL,
			partition_key text NOT NULL DEFAULT '',
			log_level text NOT NULL DEFAULT '',
			subscriptions text[] NOT NULL DEFAULT '{}',
			initialized boolean NOT NULL DEFAULT false,
			created_at timestamptz NOT NULL,
			last_seen timestamptz NOT NULL,
			idle_us bigint NOT NULL,
			expires_at timestamptz NOT NULL,
			deadline timestamptz NOT NULL
		)`,
		`CREATE INDEX IF NOT EXISTS `+pgx.Identifier{prefix + "sessions_deadline"}.Sanitize()+` ON `+q.sessions+` (deadline)`,
		`CREATE INDEX IF NOT EXISTS `+pgx.Identifier{prefix + "sessions_owner"}.Sanitize()+` ON `+q.sessions+` (owner, deadline)`,
		`CREATE INDEX IF NOT EXISTS `+pgx.Identifier{prefix + "sessions_partition"}.Sanitize()+` ON `+q.sessions+` (partition_key, deadline)`,
		`CREATE TABLE IF NOT EXISTS `+q.answers+` (
			session_id text NOT NULL REFERENCES `+q.sessions+` (id) ON DELETE CASCADE,
			request_id text NOT NULL,
			body bytea,
			expires_at timestamptz NOT NULL,
			PRIMARY KEY (session_id, request_id)
		)`,
		`CREATE INDEX IF NOT EXISTS `+pgx.Identifier{prefix + "session_answers_expiry"}.Sanitize()+` ON `+q.answers+` (expires_at)`,
	)
	return q
}

const sessionCols = `id, protocol_version, client_capabilities, client_info, identity_digest, owner, partition_key, log_level,
	subscriptions, initialized, created_at, last_seen, idle_us, expires_at`

func (s *Store) migrate(ctx context.Context) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.lockKey); err != nil {
			return err
		}
		for _, stmt := range s.q.ddl {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("pgstore: create schema objects: %w", err)
			}
		}
		return nil
	})
}

func (s *Store) withConn(ctx context.Context, fn func(c *pgx.Conn) error) error {
	c, err := s.pool.get(ctx)
	if err != nil {
		return err
	}
	defer s.pool.put(c)
	return fn(c)
}

func (s *Store) withTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.withConn(ctx, func(c *pgx.Conn) error {
		tx, err := c.Begin(ctx)
		if err != nil {
			return fmt.Errorf("pgstore: begin: %w", err)
		}
		if err := fn(tx); err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("pgstore: commit: %w", err)
		}
		return nil
	})
}

func deadline(sess *sessionstore.Session) time.Time {
	d := sess.LastSeen.Add(sess.IdleTimeout)
	if sess.ExpiresAt.Before(d) {
		return sess.ExpiresAt
	}
	return d
}

func scanSession(row pgx.Row) (*sessionstore.Session, error) {
	var sess sessionstore.Session
	var idleUS int64
	err := row.Scan(&sess.ID, &sess.ProtocolVersion, &sess.ClientCapabilities, &sess.ClientInfo, &sess.IdentityDigest,
		&sess.Owner, &sess.Partition, &sess.LogLevel, &sess.Subscriptions, &sess.Initialized, &sess.CreatedAt, &sess.LastSeen, &idleUS, &sess.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, sessionstore.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: read session: %w", err)
	}
	sess.IdleTimeout = time.Duration(idleUS) * time.Microsecond
	if sess.Subscriptions == nil {
		sess.Subscriptions = []string{}
	}
	return &sess, nil
}

// Create implements sessionstore.Store.
func (s *Store) Create(ctx context.Context, in *sessionstore.Session) error {
	now := s.now()
	sess, err := in.ForCreate(now)
	if err != nil {
		return err
	}
	return s.withTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.lockKey); err != nil {
			return fmt.Errorf("pgstore: lock: %w", err)
		}
		// Purge a batch of expired sessions (their answers cascade) and of
		// expired answer slots; the id being created is always purged if
		// expired, so that it can be reused.
		if _, err := tx.Exec(ctx, `DELETE FROM `+s.q.sessions+` WHERE id = $1 AND deadline <= $2`, sess.ID, now); err != nil {
			return fmt.Errorf("pgstore: purge: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM `+s.q.sessions+` WHERE id IN (SELECT id FROM `+s.q.sessions+
			` WHERE deadline <= $1 LIMIT $2)`, now, s.purge); err != nil {
			return fmt.Errorf("pgstore: purge: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM `+s.q.answers+` WHERE ctid IN (SELECT ctid FROM `+s.q.answers+
			` WHERE expires_at <= $1 LIMIT $2)`, now, s.purge); err != nil {
			return fmt.Errorf("pgstore: purge: %w", err)
		}
		var total, mine, partition int
		if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE owner = $2),
				count(*) FILTER (WHERE $3 <> '' AND partition_key = $3) FROM `+s.q.sessions+
			` WHERE deadline > $1`, now, sess.Owner, sess.Partition).Scan(&total, &mine, &partition); err != nil {
			return fmt.Errorf("pgstore: count sessions: %w", err)
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
			if err := tx.QueryRow(ctx, `SELECT owner, count(*) AS n FROM `+s.q.sessions+` WHERE deadline > $1
				GROUP BY owner ORDER BY n DESC, owner LIMIT 1`, now).Scan(&top, &most); err != nil {
				return fmt.Errorf("pgstore: rank owners: %w", err)
			}
			if mine >= most {
				return sessionstore.ErrLimit
			}
			var evicted string
			if err := tx.QueryRow(ctx, `DELETE FROM `+s.q.sessions+` WHERE id = (SELECT id FROM `+s.q.sessions+`
				WHERE owner = $1 AND deadline > $2 ORDER BY last_seen, id LIMIT 1) RETURNING id`, top, now).Scan(&evicted); err != nil {
				return fmt.Errorf("pgstore: evict a session: %w", err)
			}
			// Wake the waiters of the evicted session (their slots are gone).
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel, "D "+evicted); err != nil {
				return fmt.Errorf("pgstore: notify: %w", err)
			}
		}
		tag, err := tx.Exec(ctx, `INSERT INTO `+s.q.sessions+` (`+sessionCols+`, deadline)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT (id) DO NOTHING`,
			sess.ID, sess.ProtocolVersion, sess.ClientCapabilities, sess.ClientInfo, sess.IdentityDigest, sess.Owner, sess.Partition, sess.LogLevel,
			sess.Subscriptions, sess.Initialized, sess.CreatedAt, sess.LastSeen, sess.IdleTimeout.Microseconds(), sess.ExpiresAt,
			deadline(sess))
		if err != nil {
			return fmt.Errorf("pgstore: insert session: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return sessionstore.ErrExists
		}
		return nil
	})
}

// Get implements sessionstore.Store.
func (s *Store) Get(ctx context.Context, id string) (*sessionstore.Session, error) {
	now := s.now()
	var out *sessionstore.Session
	err := s.withConn(ctx, func(c *pgx.Conn) error {
		var err error
		out, err = scanSession(c.QueryRow(ctx, `UPDATE `+s.q.sessions+` SET
				last_seen = GREATEST(last_seen, $2),
				deadline = LEAST(expires_at, GREATEST(last_seen, $2) + idle_us * interval '1 microsecond')
			WHERE id = $1 AND deadline > $2 RETURNING `+sessionCols, id, now))
		return err
	})
	return out, err
}

// Update implements sessionstore.Store.
func (s *Store) Update(ctx context.Context, id string, fn func(*sessionstore.Session) error) (*sessionstore.Session, error) {
	now := s.now()
	var out *sessionstore.Session
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		cur, err := scanSession(tx.QueryRow(ctx, `SELECT `+sessionCols+` FROM `+s.q.sessions+
			` WHERE id = $1 AND deadline > $2 FOR UPDATE`, id, now))
		if err != nil {
			return err
		}
		next := cur.Clone()
		if err := fn(next); err != nil {
			return err
		}
		if next.Subscriptions == nil {
			next.Subscriptions = []string{}
		}
		if now.After(cur.LastSeen) {
			cur.LastSeen = now
		}
		cur.LogLevel, cur.Subscriptions, cur.Initialized = next.LogLevel, append([]string{}, next.Subscriptions...), next.Initialized
		if _, err := tx.Exec(ctx, `UPDATE `+s.q.sessions+` SET log_level = $2, subscriptions = $3, initialized = $4,
				last_seen = $5, deadline = $6 WHERE id = $1`,
			id, cur.LogLevel, cur.Subscriptions, cur.Initialized, cur.LastSeen, deadline(cur)); err != nil {
			return fmt.Errorf("pgstore: update session: %w", err)
		}
		out = cur
		return nil
	})
	return out, err
}

// Delete implements sessionstore.Store.
func (s *Store) Delete(ctx context.Context, id string) (bool, error) {
	now := s.now()
	live := false
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `DELETE FROM `+s.q.sessions+` WHERE id = $1 RETURNING deadline > $2`, id, now).Scan(&live)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("pgstore: delete session: %w", err)
		}
		// Wake the waiters of the session (their slots are gone).
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel, "D "+id)
		return err
	})
	return live, err
}

// Expect implements sessionstore.Store.
func (s *Store) Expect(ctx context.Context, sessionID, requestID string, expires time.Time) error {
	if !sessionstore.ValidID(requestID) {
		return errors.Join(sessionstore.ErrInvalid, errors.New("request id must be 1..128 visible ASCII characters"))
	}
	now := s.now()
	return s.withConn(ctx, func(c *pgx.Conn) error {
		var live bool
		var pending int
		if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+s.q.sessions+` WHERE id = $1 AND deadline > $2),
				(SELECT count(*) FROM `+s.q.answers+` WHERE session_id = $1)`, sessionID, now).Scan(&live, &pending); err != nil {
			return fmt.Errorf("pgstore: expect: %w", err)
		}
		switch {
		case !live:
			return sessionstore.ErrNotFound
		case pending >= s.limits.MaxPendingAnswers:
			return sessionstore.ErrLimit
		}
		_, err := c.Exec(ctx, `INSERT INTO `+s.q.answers+` (session_id, request_id, expires_at) VALUES ($1, $2, $3)`,
			sessionID, requestID, expires)
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "23505":
			return sessionstore.ErrExists
		case errors.As(err, &pgErr) && pgErr.Code == "23503":
			return sessionstore.ErrNotFound // deleted meanwhile
		case err != nil:
			return fmt.Errorf("pgstore: expect: %w", err)
		}
		return nil
	})
}

// Deliver implements sessionstore.Store.
func (s *Store) Deliver(ctx context.Context, sessionID, requestID string, msg []byte) (bool, error) {
	if !sessionstore.ValidID(sessionID) || !sessionstore.ValidID(requestID) {
		return false, nil
	}
	now := s.now()
	delivered := false
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE `+s.q.answers+` SET body = $3
			WHERE session_id = $1 AND request_id = $2 AND body IS NULL AND expires_at > $4
			AND EXISTS (SELECT 1 FROM `+s.q.sessions+` WHERE id = $1 AND deadline > $4)`,
			sessionID, requestID, append([]byte{}, msg...), now)
		if err != nil {
			return fmt.Errorf("pgstore: deliver: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		delivered = true
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel, "A "+sessionID+" "+requestID)
		return err
	})
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
		_ = s.withConn(cctx, func(c *pgx.Conn) error {
			_, err := c.Exec(cctx, `DELETE FROM `+s.q.answers+` WHERE session_id = $1 AND request_id = $2`, sessionID, requestID)
			return err
		})
	}()
	t := time.NewTimer(s.poll)
	defer t.Stop()
	for {
		var body []byte
		var filled, live, present bool
		// A delivered answer is taken even if its session expired since; an
		// empty slot ends with its session's expiry (idle included: nobody
		// else may ever notice it).
		err := s.withConn(ctx, func(c *pgx.Conn) error {
			err := c.QueryRow(ctx, `SELECT body, body IS NOT NULL,
					EXISTS (SELECT 1 FROM `+s.q.sessions+` WHERE id = $1 AND deadline > $3), true
				FROM `+s.q.answers+` WHERE session_id = $1 AND request_id = $2 AND expires_at > $3`,
				sessionID, requestID, s.now()).Scan(&body, &filled, &live, &present)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		})
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			return nil, fmt.Errorf("pgstore: await: %w", err)
		case !present:
			return nil, sessionstore.ErrNotFound
		case filled:
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

// dispatch wakes the local waiters a notification concerns.
func (s *Store) dispatch(payload string) {
	kind, rest, _ := strings.Cut(payload, " ")
	switch kind {
	case "A":
		if sid, rid, ok := strings.Cut(rest, " "); ok {
			s.waiters.Wake(sid, rid)
		}
	case "D":
		s.waiters.WakeSession(rest)
	}
}

// startListener connects the listening connection; notifications wake the
// waiters (which also poll, since notifications can be lost).
func (s *Store) startListener(ctx context.Context, cfg *pgx.ConnConfig) error {
	l, err := pglisten.Start(ctx, cfg, s.channel, "session", s.log, s.dispatch)
	if err != nil {
		return err
	}
	s.listener = l
	return nil
}
