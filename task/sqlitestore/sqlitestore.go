// Package sqlitestore is a task.Store on a SQLite database file, using the
// pure-Go modernc.org/sqlite driver (no cgo).
//
// The database runs in WAL mode with a busy timeout. Every state change is a
// read-modify-write in a BEGIN IMMEDIATE transaction (SQLite's write lock is
// taken up front, so transactions never deadlock on lock upgrades), applying
// the task.Record rules; claims additionally guard their UPDATE with the fence
// they read. Within a process, writes go through a single connection, so they
// queue in Go instead of spinning on SQLite's busy handler; reads use a small
// separate pool and never wait for writers.
//
// Several processes may open the same file: SQLite's file locks serialize
// their writes and the fence keeps claims exclusive. Change notifications
// (task.Bus) are delivered only within the process that made the change;
// runners in other processes find work by polling (task.Runner.PollInterval).
//
// Schema (version 1) is created on Open if missing: one table (Options.Table)
// with partial indexes for claiming, expiry and purging.
package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft/internal/sqlitedb"
	"github.com/weftmcp/weft/task"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Options configures Open. The zero value is usable.
type Options struct {
	// Table is the table name (default "weft_tasks"); letters, digits and
	// underscores, not starting with a digit.
	Table string
	// BusyTimeout is how long a write waits for another process's write lock
	// before failing (default 10s).
	BusyTimeout time.Duration
	// Synchronous is the SQLite synchronous setting: "FULL" (default: a
	// committed task survives power loss) or "NORMAL" (faster; a committed
	// task survives a process crash but the last commits may be lost on power
	// loss).
	Synchronous string
	// ReadConns is the size of the read connection pool (default 4).
	ReadConns int
	// Now is the clock (default time.Now). Processes sharing a file should
	// have reasonably synchronized clocks; fencing keeps claims safe when
	// they do not, but leases may then lapse early or late.
	Now func() time.Time
}

// Store is a task.Store on a SQLite file. It is safe for concurrent use.
type Store struct {
	task.RecordMethods // Renew, Finish, SetStatusMessage, SubmitInput, RequestCancel

	write *sql.DB // exactly one connection; transactions BEGIN IMMEDIATE
	read  *sql.DB
	hub   *task.Hub
	now   func() time.Time
	q     queries
	st    stmts

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ task.Store = (*Store)(nil)

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// Open opens (creating if needed) the SQLite database at path, creates the
// schema if missing, and returns the store. path is a file path (not a
// ":memory:" database or a URI) and must not contain '?'.
func Open(ctx context.Context, path string, o *Options) (*Store, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Table == "" {
		opts.Table = "weft_tasks"
	}
	if !identRE.MatchString(opts.Table) {
		return nil, fmt.Errorf("sqlitestore: open: table name %q: %w", opts.Table, task.ErrInvalid)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}

	write, read, err := sqlitedb.Open(path, sqlitedb.Config{BusyTimeout: opts.BusyTimeout,
		Synchronous: opts.Synchronous, ReadConns: opts.ReadConns, Invalid: task.ErrInvalid})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}

	s := &Store{write: write, read: read, hub: task.NewHub(0), now: opts.Now, q: newQueries(opts.Table)}
	s.RecordMethods = task.NewRecordMethods(s.update)
	if err := s.migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// stmts are the prepared statements (the writer's live on its single
// connection; database/sql re-prepares the reader's per connection).
type stmts struct {
	insert, load, update, claim, expire, purge *sql.Stmt
	partsAfter, partsFrom, liveOwner, livePart *sql.Stmt
	liveAdd                                    *sql.Stmt
	get                                        *sql.Stmt
}

func (s *Store) prepare(ctx context.Context) error {
	for _, p := range []struct {
		db   *sql.DB
		dst  **sql.Stmt
		text string
	}{
		{s.write, &s.st.insert, s.q.insert},
		{s.write, &s.st.load, s.q.load},
		{s.write, &s.st.update, s.q.update},
		{s.write, &s.st.claim, s.q.claim},
		{s.write, &s.st.expire, s.q.expire},
		{s.write, &s.st.purge, s.q.purge},
		{s.write, &s.st.partsAfter, s.q.partsAfter},
		{s.write, &s.st.partsFrom, s.q.partsFrom},
		{s.write, &s.st.liveOwner, s.q.liveOwner},
		{s.write, &s.st.livePart, s.q.livePart},
		{s.write, &s.st.liveAdd, s.q.liveAdd},
		{s.read, &s.st.get, s.q.load},
	} {
		st, err := p.db.PrepareContext(ctx, p.text)
		if err != nil {
			return fmt.Errorf("sqlitestore: prepare statement: %w", err)
		}
		*p.dst = st
	}
	return nil
}

// migrate creates the schema if it is missing.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlitestore: create schema: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, stmt := range s.q.schema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqlitestore: create schema: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitestore: create schema: commit: %w", err)
	}
	return nil
}

// queries holds the SQL for one table name.
type queries struct {
	schema                                     []string
	insert, load, update, claim, expire, purge string
	// partsAfter and partsFrom list up to ?2 partitions with working
	// tasks in key order, after ?1 and from ?1 (a skip scan of the claim
	// index); liveOwner and livePart read the live tasks of an owner and
	// of a partition from the counts table, which liveAdd moves by ?3.
	partsAfter, partsFrom, liveOwner, livePart, liveAdd string
	liveDrop                                            string
}

const columns = `id, principal, partition_key, operation, params, status, status_message,
	created_at, updated_at, ttl, poll_interval, expires_at,
	input_requests, input_responses, issued_keys, state, result, error,
	cancel_requested, step, attempts, lease_owner, lease_expires_at, fence`

func newQueries(t string) queries {
	return queries{
		schema: []string{
			`CREATE TABLE IF NOT EXISTS ` + t + ` (
	id               TEXT PRIMARY KEY,
	principal        TEXT NOT NULL,
	partition_key    TEXT NOT NULL,
	operation        TEXT NOT NULL,
	params           BLOB,
	status           TEXT NOT NULL,
	status_message   TEXT NOT NULL,
	created_at       INTEGER NOT NULL, -- Unix nanoseconds
	updated_at       INTEGER NOT NULL,
	ttl              INTEGER NOT NULL, -- nanoseconds; 0 = unlimited
	poll_interval    INTEGER NOT NULL,
	expires_at       INTEGER,          -- NULL = never
	input_requests   BLOB,             -- JSON object of outstanding requests
	input_responses  BLOB,             -- JSON object
	issued_keys      BLOB NOT NULL,    -- JSON array of strings
	state            BLOB,
	result           BLOB,
	error            BLOB,
	cancel_requested INTEGER NOT NULL,
	step             INTEGER NOT NULL,
	attempts         INTEGER NOT NULL,
	lease_owner      TEXT,
	lease_expires_at INTEGER,
	fence            INTEGER NOT NULL
) WITHOUT ROWID`,
			`CREATE INDEX IF NOT EXISTS ` + t + `_claim_fair ON ` + t + ` (partition_key, created_at, id) WHERE status = 'working'`,
			// The live (working or input_required) tasks per owner, kept in
			// step with the tasks in their write transactions.
			`CREATE TABLE IF NOT EXISTS ` + t + `_live (
	partition_key TEXT NOT NULL,
	principal     TEXT NOT NULL,
	n             INTEGER NOT NULL,
	PRIMARY KEY (partition_key, principal)
) WITHOUT ROWID`,
			`CREATE INDEX IF NOT EXISTS ` + t + `_expiry ON ` + t + ` (expires_at) WHERE expires_at IS NOT NULL AND status IN ('working', 'input_required')`,
			`CREATE INDEX IF NOT EXISTS ` + t + `_purge ON ` + t + ` (updated_at) WHERE status IN ('completed', 'failed', 'cancelled')`,
		},
		insert: `INSERT INTO ` + t + ` (` + columns + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		load:   `SELECT ` + columns + ` FROM ` + t + ` WHERE id = ?`,
		update: `UPDATE ` + t + ` SET status = ?, status_message = ?, updated_at = ?, ttl = ?, poll_interval = ?, expires_at = ?,
	input_requests = ?, input_responses = ?, issued_keys = ?, state = ?, result = ?, error = ?,
	cancel_requested = ?, step = ?, attempts = ?, lease_owner = ?, lease_expires_at = ?, fence = ?
	WHERE id = ? AND fence = ?`,
		claim: `SELECT ` + columns + ` FROM ` + t + ` WHERE status = 'working' AND partition_key = ?2
	AND (lease_owner IS NULL OR lease_expires_at <= ?1)
	AND (expires_at IS NULL OR expires_at > ?1)
	ORDER BY created_at, id LIMIT 1`,
		partsAfter: partsQuery(t, ">"),
		partsFrom:  partsQuery(t, ">="),
		liveOwner:  `SELECT coalesce(sum(n), 0) FROM ` + t + `_live WHERE partition_key = ?1 AND principal = ?2`,
		livePart:   `SELECT coalesce(sum(n), 0) FROM ` + t + `_live WHERE partition_key = ?1`,
		liveDrop:   `DELETE FROM ` + t + `_live WHERE n <= 0`,
		liveAdd: `INSERT INTO ` + t + `_live (partition_key, principal, n) VALUES (?1, ?2, ?3)
	ON CONFLICT (partition_key, principal) DO UPDATE SET n = n + excluded.n`,
		expire: `SELECT ` + columns + ` FROM ` + t + ` WHERE expires_at IS NOT NULL AND expires_at <= ?
	AND status IN ('working', 'input_required') LIMIT ?`,
		purge: `DELETE FROM ` + t + ` WHERE id IN (SELECT id FROM ` + t + `
	WHERE status IN ('completed', 'failed', 'cancelled') AND updated_at <= ?1
	AND max(coalesce(expires_at, 0), updated_at) <= ?1 LIMIT ?2)`,
	}
}

// partsQuery lists up to ?2 distinct partitions with working tasks, in key
// order, the first one op ?1: one index seek per partition.
func partsQuery(t, op string) string {
	return `WITH RECURSIVE p(k) AS (
	SELECT (SELECT min(partition_key) FROM ` + t + ` WHERE status = 'working' AND partition_key ` + op + ` ?1)
	UNION ALL
	SELECT (SELECT min(partition_key) FROM ` + t + ` WHERE status = 'working' AND partition_key > p.k) FROM p WHERE p.k IS NOT NULL
) SELECT k FROM p WHERE k IS NOT NULL LIMIT ?2`
}

type scanner interface{ Scan(dest ...any) error }

func scanRecord(sc scanner) (*task.Record, error) {
	var (
		r                                              task.Record
		created, updated, ttl, poll                    int64
		expires, leaseExpires                          sql.NullInt64
		leaseOwner                                     sql.NullString
		params, reqs, resps, keys, state, result, rerr []byte
		status                                         string
		cancel                                         int64
	)
	err := sc.Scan(&r.ID, &r.Owner.Principal, &r.Owner.Partition, &r.Operation, &params, &status, &r.StatusMessage,
		&created, &updated, &ttl, &poll, &expires,
		&reqs, &resps, &keys, &state, &result, &rerr,
		&cancel, &r.Step, &r.Attempts, &leaseOwner, &leaseExpires, &r.Fence)
	if err != nil {
		return nil, err
	}
	r.Params, r.InputRequests, r.InputResponses = raw(params), raw(reqs), raw(resps)
	r.State, r.Result, r.Error = raw(state), raw(result), raw(rerr)
	if err := json.Unmarshal(keys, &r.IssuedKeys); err != nil {
		return nil, fmt.Errorf("decode issued keys of task %s: %w", r.ID, err)
	}
	if len(r.IssuedKeys) == 0 {
		r.IssuedKeys = nil
	}
	r.Status = task.Status(status)
	r.CreatedAt, r.UpdatedAt = fromNanos(created), fromNanos(updated)
	r.TTL, r.PollInterval = time.Duration(ttl), time.Duration(poll)
	r.ExpiresAt, r.LeaseExpiresAt = nullTime(expires), nullTime(leaseExpires)
	r.LeaseOwner = leaseOwner.String
	r.CancelRequested = cancel != 0
	return &r, nil
}

func raw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

func blob(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return []byte(b)
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func nullTime(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNanos(n.Int64)
}

func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func issuedKeys(keys []string) ([]byte, error) {
	if keys == nil {
		keys = []string{}
	}
	return json.Marshal(keys)
}

// timestamp returns the current time as stored (UTC, microseconds, like the
// other stores).
func (s *Store) timestamp() time.Time {
	return s.now().UTC().Truncate(time.Microsecond)
}

func (s *Store) check(op string) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlitestore: %s: %w", op, task.ErrClosed)
	}
	return nil
}

// Publish implements task.Bus (in-process fan-out only).
func (s *Store) Publish(ctx context.Context, channel, payload string) error {
	return s.hub.Publish(ctx, channel, payload)
}

// Subscribe implements task.Bus (in-process fan-out only).
func (s *Store) Subscribe(ctx context.Context, channel string) (<-chan string, error) {
	return s.hub.Subscribe(ctx, channel)
}

func (s *Store) publish(ctx context.Context, before, after *task.Record) {
	for _, ch := range task.NotifyChannels(before, after) {
		_ = s.hub.Publish(context.WithoutCancel(ctx), ch, after.ID)
	}
}

// Create implements task.Store: one INSERT (autocommit).
func (s *Store) Create(ctx context.Context, spec task.NewTask) (*task.Record, error) {
	if err := s.check("create"); err != nil {
		return nil, err
	}
	r, err := task.NewRecord(spec, s.timestamp())
	if err != nil {
		return nil, err
	}
	keys, err := issuedKeys(r.IssuedKeys)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: create %s: %w", r.ID, err)
	}
	// Count, insert and move the live count in one write transaction:
	// exact, as every writer (of every process) holds SQLite's write lock
	// in turn.
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: create %s: begin: %w", r.ID, err)
	}
	defer func() { _ = tx.Rollback() }()
	if q := spec.Quota; q.PerOwner > 0 || q.PerPartition > 0 {
		if err := s.admit(ctx, tx, r.Owner, q); err != nil {
			return nil, fmt.Errorf("sqlitestore: create %s: %w", r.ID, err)
		}
	}
	_, err = tx.StmtContext(ctx, s.st.insert).ExecContext(ctx, r.ID, r.Owner.Principal, r.Owner.Partition, r.Operation,
		blob(r.Params), string(r.Status), r.StatusMessage, r.CreatedAt.UnixNano(), r.UpdatedAt.UnixNano(),
		int64(r.TTL), int64(r.PollInterval), nanos(r.ExpiresAt), blob(r.InputRequests), blob(r.InputResponses),
		keys, blob(r.State), blob(r.Result), blob(r.Error), r.CancelRequested, r.Step, r.Attempts,
		nullString(r.LeaseOwner), nanos(r.LeaseExpiresAt), r.Fence)
	if err != nil {
		if isConstraint(err) {
			return nil, fmt.Errorf("sqlitestore: create %s: %w", r.ID, task.ErrExists)
		}
		return nil, fmt.Errorf("sqlitestore: create %s: %w", r.ID, err)
	}
	if err := s.count(ctx, tx, r.Owner, 1); err != nil {
		return nil, fmt.Errorf("sqlitestore: create %s: %w", r.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlitestore: create %s: commit: %w", r.ID, err)
	}
	s.publish(ctx, nil, r)
	return r.Clone(), nil
}

// admit counts the live tasks of owner and of its partition (as far as q
// bounds them) and reports whether q admits one more (task.ErrLimit).
func (s *Store) admit(ctx context.Context, tx *sql.Tx, owner task.Owner, q task.Quota) error {
	var byOwner, byPart int
	if q.PerOwner > 0 {
		if err := tx.StmtContext(ctx, s.st.liveOwner).QueryRowContext(ctx, owner.Partition, owner.Principal).Scan(&byOwner); err != nil {
			return fmt.Errorf("count live tasks: %w", err)
		}
	}
	if q.PerPartition > 0 {
		if err := tx.StmtContext(ctx, s.st.livePart).QueryRowContext(ctx, owner.Partition).Scan(&byPart); err != nil {
			return fmt.Errorf("count live tasks: %w", err)
		}
	}
	return q.Admit(byOwner, byPart)
}

func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

// Get implements task.Store: one SELECT on the read pool.
func (s *Store) Get(ctx context.Context, id string) (*task.Record, error) {
	if err := s.check("get"); err != nil {
		return nil, err
	}
	r, err := scanRecord(s.st.get.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlitestore: get %s: %w", id, task.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: get %s: %w", id, err)
	}
	return r, nil
}

// count moves owner's live-task count by d.
func (s *Store) count(ctx context.Context, tx *sql.Tx, owner task.Owner, d int) error {
	if _, err := tx.StmtContext(ctx, s.st.liveAdd).ExecContext(ctx, owner.Partition, owner.Principal, d); err != nil {
		return fmt.Errorf("count live tasks: %w", err)
	}
	return nil
}

// store writes r, loaded as before, back, guarded by the fence it was
// loaded with, and takes it out of the live count if it became terminal.
func (s *Store) store(ctx context.Context, tx *sql.Tx, before, r *task.Record) error {
	if !before.Status.IsTerminal() && r.Status.IsTerminal() {
		if err := s.count(ctx, tx, r.Owner, -1); err != nil {
			return err
		}
	}
	loadedFence := before.Fence
	keys, err := issuedKeys(r.IssuedKeys)
	if err != nil {
		return fmt.Errorf("encode issued keys: %w", err)
	}
	res, err := tx.StmtContext(ctx, s.st.update).ExecContext(ctx, string(r.Status), r.StatusMessage, r.UpdatedAt.UnixNano(),
		int64(r.TTL), int64(r.PollInterval), nanos(r.ExpiresAt), blob(r.InputRequests), blob(r.InputResponses),
		keys, blob(r.State), blob(r.Result), blob(r.Error), r.CancelRequested, r.Step, r.Attempts,
		nullString(r.LeaseOwner), nanos(r.LeaseExpiresAt), r.Fence, r.ID, loadedFence)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("fenced update of task %s matched %d rows (err %v): %w", r.ID, n, err, task.ErrLeaseLost)
	}
	return nil
}

// update is the read-modify-write of one task in a write transaction.
func (s *Store) update(ctx context.Context, op, id string, apply func(r *task.Record, now time.Time) (bool, error)) (*task.Record, bool, error) {
	if err := s.check(op); err != nil {
		return nil, false, err
	}
	now := s.timestamp()
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, fmt.Errorf("sqlitestore: %s %s: begin: %w", op, id, err)
	}
	defer func() { _ = tx.Rollback() }()
	r, err := scanRecord(tx.StmtContext(ctx, s.st.load).QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, fmt.Errorf("sqlitestore: %s %s: %w", op, id, task.ErrNotFound)
	}
	if err != nil {
		return nil, false, fmt.Errorf("sqlitestore: %s %s: load: %w", op, id, err)
	}
	before := r.Clone()
	changed, err := apply(r, now)
	if err != nil {
		return nil, false, err
	}
	if !changed {
		return r, false, nil
	}
	if err := s.store(ctx, tx, before, r); err != nil {
		return nil, false, fmt.Errorf("sqlitestore: %s %s: store: %w", op, id, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, false, fmt.Errorf("sqlitestore: %s %s: commit: %w", op, id, err)
	}
	s.publish(ctx, before, r)
	return r, true, nil
}

// maxClaimScan bounds how many cancelled-on-claim tasks one Claim call
// settles before giving up for this call.
const maxClaimScan = 32

// Claim implements task.Store: in one write transaction, list the
// partitions with working tasks in round-robin order from opts.After (a
// skip scan of the claim index, up to max of them), then, one task of each
// partition per round, select the partition's oldest claimable task, apply
// the claim and UPDATE it WHERE its fence is still the one read, until max
// are claimed or none is left.
func (s *Store) Claim(ctx context.Context, worker string, lease time.Duration, max int, opts ...task.ClaimOptions) ([]*task.Record, error) {
	if worker == "" || lease <= 0 || max < 1 {
		return nil, fmt.Errorf("sqlitestore: claim: empty worker, non-positive lease or max: %w", task.ErrInvalid)
	}
	if err := s.check("claim"); err != nil {
		return nil, err
	}
	var o task.ClaimOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	now := s.timestamp()
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: claim: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	parts, err := s.partitions(ctx, tx, o, max)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: claim: %w", err)
	}
	var settled [][2]*task.Record
	var claimed []*task.Record
	for len(parts) > 0 && len(claimed) < max && len(settled) < maxClaimScan {
		next := parts[:0]
		for _, p := range parts {
			if len(claimed) >= max || len(settled) >= maxClaimScan {
				break
			}
			r, err := scanRecord(tx.StmtContext(ctx, s.st.claim).QueryRowContext(ctx, now.UnixNano(), p))
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("sqlitestore: claim: select: %w", err)
			}
			next = append(next, p)
			before := r.Clone()
			ok, changed := r.ApplyClaim(worker, now, lease)
			if !changed {
				return nil, fmt.Errorf("sqlitestore: claim: task %s selected but not claimable", r.ID)
			}
			if err := s.store(ctx, tx, before, r); err != nil {
				return nil, fmt.Errorf("sqlitestore: claim %s: %w", r.ID, err)
			}
			if ok {
				claimed = append(claimed, r)
				continue
			}
			settled = append(settled, [2]*task.Record{before, r})
		}
		parts = next
	}
	if len(claimed) == 0 && len(settled) == 0 {
		return nil, nil
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlitestore: claim: commit: %w", err)
	}
	for _, c := range settled {
		s.publish(ctx, c[0], c[1])
	}
	return claimed, nil
}

// partitions lists up to max partitions with working tasks, not excluded,
// in the round-robin order of o (task.RoundRobin).
func (s *Store) partitions(ctx context.Context, tx *sql.Tx, o task.ClaimOptions, max int) ([]string, error) {
	limit := max + len(o.Exclude)
	var out []string
	list := func(st *sql.Stmt, from string, stop func(string) bool) error {
		rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, from, limit)
		if err != nil {
			return fmt.Errorf("list partitions: %w", err)
		}
		defer rows.Close()
		for rows.Next() && len(out) < max {
			var k string
			if err := rows.Scan(&k); err != nil {
				return fmt.Errorf("list partitions: %w", err)
			}
			if stop(k) {
				break
			}
			if !slices.Contains(o.Exclude, k) {
				out = append(out, k)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list partitions: %w", err)
		}
		return nil
	}
	if err := list(s.st.partsAfter, o.After, func(string) bool { return false }); err != nil {
		return nil, err
	}
	if len(out) < max {
		// Wrap around: from the first key up to After itself.
		if err := list(s.st.partsFrom, "", func(k string) bool { return k > o.After }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ExpireAndPurge implements task.Store: expiry is one write transaction over
// up to Limit tasks, purge one DELETE of up to Limit tasks.
func (s *Store) ExpireAndPurge(ctx context.Context, now time.Time, opts task.SweepOptions) (task.SweepResult, error) {
	var res task.SweepResult
	opts, err := opts.Normalize()
	if err != nil {
		return res, err
	}
	if err := s.check("expire and purge"); err != nil {
		return res, err
	}
	now = now.UTC().Truncate(time.Microsecond)
	changed, err := s.expire(ctx, now, opts)
	if err != nil {
		return res, err
	}
	res.Expired = len(changed)
	for _, c := range changed {
		s.publish(ctx, c[0], c[1])
	}
	out, err := s.st.purge.ExecContext(ctx, now.Add(-opts.Retention).UnixNano(), opts.Limit)
	if err != nil {
		return res, fmt.Errorf("sqlitestore: purge: %w", err)
	}
	n, err := out.RowsAffected()
	if err != nil {
		return res, fmt.Errorf("sqlitestore: purge: %w", err)
	}
	res.Purged = int(n)
	// Owners without live tasks need no count.
	if _, err := s.write.ExecContext(ctx, s.q.liveDrop); err != nil {
		return res, fmt.Errorf("sqlitestore: purge live counts: %w", err)
	}
	return res, nil
}

func (s *Store) expire(ctx context.Context, now time.Time, opts task.SweepOptions) ([][2]*task.Record, error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: expire: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.StmtContext(ctx, s.st.expire).QueryContext(ctx, now.UnixNano(), opts.Limit)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: expire: select: %w", err)
	}
	var recs []*task.Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("sqlitestore: expire: scan: %w", err)
		}
		recs = append(recs, r)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("sqlitestore: expire: select: %w", err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: expire: select: %w", err)
	}
	var changed [][2]*task.Record
	for _, r := range recs {
		before := r.Clone()
		if !r.ApplyExpiry(now, opts.ExpiredError, opts.ExpiredMessage) {
			continue
		}
		if err := s.store(ctx, tx, before, r); err != nil {
			return nil, fmt.Errorf("sqlitestore: expire %s: %w", r.ID, err)
		}
		changed = append(changed, [2]*task.Record{before, r})
	}
	if len(changed) == 0 {
		return nil, nil
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlitestore: expire: commit: %w", err)
	}
	return changed, nil
}

// Close implements task.Store: it closes subscriptions and both connection
// pools. It is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		errs := []error{s.hub.Close()}
		for _, st := range []*sql.Stmt{s.st.insert, s.st.load, s.st.update, s.st.claim, s.st.expire, s.st.purge, s.st.get,
			s.st.partsAfter, s.st.partsFrom, s.st.liveOwner, s.st.livePart, s.st.liveAdd} {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		errs = append(errs, s.write.Close(), s.read.Close())
		s.closeErr = errors.Join(errs...)
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("sqlitestore: close: %w", s.closeErr)
		}
	})
	return s.closeErr
}
