// Package pgstore is a task.Store on PostgreSQL, using a pgx/v5 connection
// pool (pgxpool) plus one dedicated listening connection.
//
// Every state change is a read-modify-write of rows in a transaction that
// holds their row locks (SELECT ... FOR UPDATE), applying the task.Record
// rules, so all instances sharing the database agree; concurrent
// read-modify-writes of one Store share a transaction (group.go). Claims select with FOR UPDATE
// SKIP LOCKED, so concurrent claimers on any number of instances never block
// on, or double-claim, the same task.
//
// Change notifications use LISTEN/NOTIFY. A state change is announced once
// its transaction has committed: to this Store's own subscribers at once, in
// process, and to the other instances by a notifier goroutine that sends the
// pending events together in one pg_notify transaction (committed without
// waiting for the WAL flush: events are hints). Notifying from the changing
// transaction itself would serialize every commit: PostgreSQL holds one
// database-wide lock on the notification queue from a notifying
// transaction's pre-commit until its commit record is flushed. Every Store
// keeps one listening connection that fans the events of other instances
// out to its local subscribers. All logical task.Bus channels share one
// PostgreSQL channel per schema and prefix, so every instance hears every
// event; Publish can carry application events too (payload limit
// MaxPayload). Events sent while a listener reconnects, or while an
// instance's notifier is behind by more than notifyQueue events, are lost
// (they are hints; poll as well).
//
// Open creates the schema (Options.Schema, if set) and the table
// (Options.Prefix + "tasks") if missing, under an advisory lock so that
// instances starting together do not race. Tests isolate themselves with a
// fresh random schema.
package pgstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/weftmcp/weft/internal/pglisten"
	"github.com/weftmcp/weft/task"
)

// MaxPayload is the largest channel-plus-payload size Publish accepts
// (PostgreSQL's NOTIFY payload is shorter than 8000 bytes; it carries the
// sending Store's 16-byte origin, the channel and the payload, separated by
// newlines).
const MaxPayload = 7999 - originLen - 2

// originLen is the length of a Store's origin tag, which lets its listener
// skip the events it already delivered in process.
const originLen = 16

// notifyQueue bounds the events waiting for the notifier; notifyBatch bounds
// how many one pg_notify transaction sends.
const (
	notifyQueue = 1 << 16
	notifyBatch = 1000
)

// Options configures Open. The zero value is usable.
type Options struct {
	// Schema is the PostgreSQL schema holding the table; it is created if
	// missing. Empty means the connection's search_path (usually public).
	Schema string
	// Prefix is prepended to the table name "tasks" (default "weft_").
	Prefix string
	// MaxConns caps the connection pool, not counting the listener
	// connection (default 10).
	MaxConns int
	// Now is the clock (default time.Now). Instances should have reasonably
	// synchronized clocks; fencing keeps claims safe when they do not, but
	// leases may then lapse early or late.
	Now func() time.Time
	// Logger receives listener reconnections (default slog.Default()).
	Logger *slog.Logger
}

// Store is a task.Store on PostgreSQL. It is safe for concurrent use.
type Store struct {
	task.RecordMethods // Renew, Finish, SetStatusMessage, SubmitInput, RequestCancel

	pool    *pgxpool.Pool
	hub     *task.Hub
	now     func() time.Time
	log     *slog.Logger
	q       queries
	channel string // the PostgreSQL notification channel

	listener *pglisten.Listener

	origin       string
	out          chan string // events for the other instances, "<origin>\n<channel>\n<payload>"
	dropped      atomic.Int64
	stopNotifier context.CancelFunc
	notifierDone chan struct{}

	updates        chan *pendingUpdate // unbuffered: a send is taken by a committer
	creates        chan *pendingCreate // likewise
	closing        chan struct{}
	committersDone sync.WaitGroup

	closed    atomic.Bool
	closeOnce sync.Once
}

var _ task.Store = (*Store)(nil)

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// Open connects to the database at dsn (a PostgreSQL URL or keyword/value
// string), creates the schema objects if missing, starts the notification
// listener and returns the store.
func Open(ctx context.Context, dsn string, o *Options) (*Store, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Prefix == "" {
		opts.Prefix = "weft_"
	}
	if !identRE.MatchString(opts.Prefix) || (opts.Schema != "" && !identRE.MatchString(opts.Schema)) {
		return nil, fmt.Errorf("pgstore: open: schema %q / prefix %q: lower-case letters, digits and underscores only: %w",
			opts.Schema, opts.Prefix, task.ErrInvalid)
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 10
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: parse dsn: %w", err)
	}
	cfg.MaxConns = int32(min(opts.MaxConns, 1<<20))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	sum := sha256.Sum256([]byte(opts.Schema + "." + opts.Prefix))
	var tag [originLen / 2]byte
	if _, err := rand.Read(tag[:]); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	s := &Store{
		origin:       hex.EncodeToString(tag[:]),
		out:          make(chan string, notifyQueue),
		notifierDone: make(chan struct{}),
		updates:      make(chan *pendingUpdate),
		creates:      make(chan *pendingCreate),
		closing:      make(chan struct{}),
		pool:         pool,
		hub:          task.NewHub(0),
		now:          opts.Now,
		log:          opts.Logger,
		q:            newQueries(opts.Schema, opts.Prefix),
		channel:      "weft_" + hex.EncodeToString(sum[:12]),
	}
	s.RecordMethods = task.NewRecordMethods(s.update)
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.startListener(ctx, cfg.ConnConfig); err != nil {
		pool.Close()
		return nil, err
	}
	nctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stopNotifier = stop
	go s.notifier(nctx)
	for range committers {
		s.committersDone.Add(2)
		go s.committer()
		go s.creator()
	}
	return s, nil
}

type queries struct {
	table                                                string
	schema                                               []string
	insert, load, loadMany, update, claim, expire, purge string
	// live counts, per (partition, principal, bound) row of its arrays,
	// the live tasks up to the bound (principal NULL: the partition's).
	live string
}

// checkedUpdate makes the fenced UPDATE fail (division by zero, mapped to
// task.ErrLeaseLost) when it matches no row, so that a pipelined
// transaction aborts instead of committing around it.
func checkedUpdate(update string) string {
	return `WITH u AS (` + update + ` RETURNING 1) SELECT 1 / count(*) FROM u`
}

const columns = `id, principal, partition_key, operation, params, status, status_message,
	created_at, updated_at, ttl, poll_interval, expires_at,
	input_requests, input_responses, issued_keys, state, result, error,
	cancel_requested, step, attempts, lease_owner, lease_expires_at, fence`

func newQueries(schema, prefix string) queries {
	name := prefix + "tasks"
	t := pgx.Identifier{name}.Sanitize()
	if schema != "" {
		t = pgx.Identifier{schema, name}.Sanitize()
	}
	idx := func(suffix string) string { return pgx.Identifier{name + "_" + suffix}.Sanitize() }
	var ddl []string
	if schema != "" {
		ddl = append(ddl, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize())
	}
	ddl = append(ddl,
		`CREATE TABLE IF NOT EXISTS `+t+` (
	id               text PRIMARY KEY,
	principal        text NOT NULL,
	partition_key    text NOT NULL,
	operation        text NOT NULL,
	params           bytea,
	status           text NOT NULL,
	status_message   text NOT NULL,
	created_at       timestamptz NOT NULL,
	updated_at       timestamptz NOT NULL,
	ttl              bigint NOT NULL, -- nanoseconds; 0 = unlimited
	poll_interval    bigint NOT NULL, -- nanoseconds
	expires_at       timestamptz,     -- NULL = never
	input_requests   bytea,           -- JSON object of outstanding requests
	input_responses  bytea,           -- JSON object
	issued_keys      text[] NOT NULL,
	state            bytea,
	result           bytea,
	error            bytea,
	cancel_requested boolean NOT NULL,
	step             integer NOT NULL,
	attempts         integer NOT NULL,
	lease_owner      text,
	lease_expires_at timestamptz,
	fence            bigint NOT NULL
)`,
		`CREATE INDEX IF NOT EXISTS `+idx("claim_fair")+` ON `+t+` (partition_key, created_at, id) WHERE status = 'working'`,
		`CREATE INDEX IF NOT EXISTS `+idx("live")+` ON `+t+` (partition_key, principal) WHERE status IN ('working', 'input_required')`,
		`CREATE INDEX IF NOT EXISTS `+idx("expiry")+` ON `+t+` (expires_at) WHERE expires_at IS NOT NULL AND status IN ('working', 'input_required')`,
		`CREATE INDEX IF NOT EXISTS `+idx("purge")+` ON `+t+` (updated_at) WHERE status IN ('completed', 'failed', 'cancelled')`,
	)
	return queries{
		table:  t,
		schema: ddl,
		insert: `INSERT INTO ` + t + ` (` + columns + `) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24)
	ON CONFLICT (id) DO NOTHING RETURNING id`,
		load: `SELECT ` + columns + ` FROM ` + t + ` WHERE id = $1`,
		// In id order, so that the row locks of concurrent groups are taken
		// in one order.
		loadMany: `SELECT ` + columns + ` FROM ` + t + ` WHERE id = ANY($1) ORDER BY id FOR UPDATE`,
		update: checkedUpdate(`UPDATE ` + t + ` SET status = $2, status_message = $3, updated_at = $4, ttl = $5, poll_interval = $6, expires_at = $7,
	input_requests = $8, input_responses = $9, issued_keys = $10, state = $11, result = $12, error = $13,
	cancel_requested = $14, step = $15, attempts = $16, lease_owner = $17, lease_expires_at = $18, fence = $19
	WHERE id = $1 AND fence = $20`),
		claim: claimQuery(t),
		live: `SELECT (SELECT count(*) FROM (SELECT 1 FROM ` + t + ` WHERE partition_key = o.p
		AND (o.pr IS NULL OR principal = o.pr) AND status IN ('working', 'input_required') LIMIT o.n) x)
	FROM unnest($1::text[], $2::text[], $3::int[]) WITH ORDINALITY AS o(p, pr, n, i) ORDER BY o.i`,
		expire: `SELECT ` + columns + ` FROM ` + t + ` WHERE expires_at IS NOT NULL AND expires_at <= $1
	AND status IN ('working', 'input_required') LIMIT $2 FOR UPDATE SKIP LOCKED`,
		purge: `DELETE FROM ` + t + ` WHERE id IN (SELECT id FROM ` + t + `
	WHERE status IN ('completed', 'failed', 'cancelled') AND updated_at <= $1
	AND greatest(coalesce(expires_at, updated_at), updated_at) <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
	}
}

// claimQuery is the fair claim: $1 now, $2 the most tasks to claim, $3 the
// partition served last (ClaimOptions.After), $4 the partitions excluded.
// It lists up to $2 partitions with working tasks in key order after $3,
// wrapping around to $3 itself (two skip scans of the claim index, one
// index seek per partition), and takes from each its oldest claimable
// tasks, $2 / (partitions listed) of them (at least one), locking them
// with FOR UPDATE SKIP LOCKED: every listed partition gets a task before
// any gets a second.
func claimQuery(t string) string {
	working := `FROM ` + t + ` WHERE status = 'working'`
	return `WITH RECURSIVE after_p(k) AS (
	SELECT (SELECT min(partition_key) ` + working + ` AND partition_key > $3)
	UNION ALL
	SELECT (SELECT min(partition_key) ` + working + ` AND partition_key > a.k) FROM after_p a WHERE a.k IS NOT NULL
), before_p(k) AS (
	SELECT (SELECT min(partition_key) ` + working + `)
	UNION ALL
	SELECT (SELECT min(partition_key) ` + working + ` AND partition_key > b.k) FROM before_p b WHERE b.k < $3
), cand AS (
	(SELECT k FROM after_p WHERE k IS NOT NULL AND k <> ALL($4) LIMIT $2)
	UNION ALL
	(SELECT k FROM before_p WHERE k <= $3 AND k <> ALL($4) LIMIT $2)
), listed AS (SELECT k FROM cand LIMIT $2),
share AS (SELECT greatest(1, $2 / count(*))::int AS n FROM listed)
SELECT x.* FROM listed CROSS JOIN LATERAL (
	SELECT ` + columns + ` ` + working + ` AND partition_key = listed.k
	AND (lease_owner IS NULL OR lease_expires_at <= $1)
	AND (expires_at IS NULL OR expires_at > $1)
	ORDER BY created_at, id LIMIT (SELECT n FROM share) FOR UPDATE SKIP LOCKED
) x`
}

// migrate creates the schema objects under a transaction-scoped advisory
// lock.
func (s *Store) migrate(ctx context.Context) error {
	h := fnv.New64a()
	h.Write([]byte("weft-task-schema:" + s.q.table))
	return s.withTx(ctx, "create schema", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(h.Sum64())); err != nil {
			return err
		}
		for _, stmt := range s.q.schema {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
}

// check fails with ErrClosed after Close.
func (s *Store) check(op string) error {
	if s.closed.Load() {
		return fmt.Errorf("pgstore: %s: %w", op, task.ErrClosed)
	}
	return nil
}

// withTx runs fn in a transaction on a pooled connection and commits it.
func (s *Store) withTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	if err := s.check(op); err != nil {
		return err
	}
	if err := pgx.BeginFunc(ctx, s.pool, fn); err != nil {
		return fmt.Errorf("pgstore: %s: %w", op, err)
	}
	return nil
}

func scanRecord(row pgx.Row) (*task.Record, error) {
	var (
		r                                          task.Record
		status                                     string
		ttl, poll                                  int64
		expires, leaseExpires                      *time.Time
		leaseOwner                                 *string
		params, reqs, resps, state, result, rpcErr []byte
	)
	err := row.Scan(&r.ID, &r.Owner.Principal, &r.Owner.Partition, &r.Operation, &params, &status, &r.StatusMessage,
		&r.CreatedAt, &r.UpdatedAt, &ttl, &poll, &expires,
		&reqs, &resps, &r.IssuedKeys, &state, &result, &rpcErr,
		&r.CancelRequested, &r.Step, &r.Attempts, &leaseOwner, &leaseExpires, &r.Fence)
	if err != nil {
		return nil, err
	}
	r.Params, r.InputRequests, r.InputResponses = raw(params), raw(reqs), raw(resps)
	r.State, r.Result, r.Error = raw(state), raw(result), raw(rpcErr)
	if len(r.IssuedKeys) == 0 {
		r.IssuedKeys = nil
	}
	r.Status = task.Status(status)
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	r.TTL, r.PollInterval = time.Duration(ttl), time.Duration(poll)
	if expires != nil {
		r.ExpiresAt = expires.UTC()
	}
	if leaseExpires != nil {
		r.LeaseExpiresAt = leaseExpires.UTC()
	}
	if leaseOwner != nil {
		r.LeaseOwner = *leaseOwner
	}
	return &r, nil
}

func raw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

func bytesOrNil(b json.RawMessage) []byte {
	if b == nil {
		return nil
	}
	return []byte(b)
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func stringOrNil(v string) any {
	if v == "" {
		return nil
	}
	return v
}

func keysOf(r *task.Record) []string {
	if r.IssuedKeys == nil {
		return []string{}
	}
	return r.IssuedKeys
}

// timestamp returns the current time as stored (UTC, microseconds: the
// precision of timestamptz).
func (s *Store) timestamp() time.Time {
	return s.now().UTC().Truncate(time.Microsecond)
}

// announce publishes the changes before→after (NotifyChannels) once they
// are committed: to this Store's subscribers at once, and to the other
// instances through the notifier.
func (s *Store) announce(changes ...[2]*task.Record) {
	for _, c := range changes {
		for _, ch := range task.NotifyChannels(c[0], c[1]) {
			_ = s.hub.Publish(context.Background(), ch, c[1].ID)
			s.enqueue(ch, c[1].ID)
		}
	}
}

// enqueue hands an event to the notifier; a full queue drops it (counted
// and logged by the notifier).
func (s *Store) enqueue(channel, payload string) {
	select {
	case s.out <- s.origin + "\n" + channel + "\n" + payload:
	default:
		s.dropped.Add(1)
	}
}

// notifier sends the queued events to PostgreSQL, as many as are waiting
// (up to notifyBatch) in one transaction, until ctx is done; it then sends
// what is still queued, within a few seconds.
func (s *Store) notifier(ctx context.Context) {
	defer close(s.notifierDone)
	batch := make([]string, 0, notifyBatch)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			for {
				batch = s.take(batch[:0])
				if len(batch) == 0 {
					return
				}
				if err := s.sendNotifies(fctx, batch); err != nil {
					s.log.Warn("pgstore: task events lost at close", "events", len(batch), "err", err)
					return
				}
			}
		case p := <-s.out:
			batch = s.take(append(batch, p))
		}
		if err := s.sendNotifies(ctx, batch); err != nil && ctx.Err() == nil {
			s.log.Warn("pgstore: sending task events failed; other instances miss them", "events", len(batch), "err", err)
		}
		if n := s.dropped.Swap(0); n > 0 {
			s.log.Warn("pgstore: task event queue full; events dropped, other instances miss them", "events", n)
		}
	}
}

// take appends to batch the queued events, up to notifyBatch in all.
func (s *Store) take(batch []string) []string {
	for len(batch) < notifyBatch {
		select {
		case p := <-s.out:
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// sendNotifies sends payloads with pg_notify in one transaction that does
// not wait for its commit to be flushed (it changes no data).
func (s *Store) sendNotifies(ctx context.Context, payloads []string) error {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(`SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, s.channel, payloads)
	b.Queue("COMMIT")
	return s.pool.SendBatch(ctx, b).Close()
}

// Create implements task.Store: one INSERT, committed in a group with the
// creates waiting (group.go).
func (s *Store) Create(ctx context.Context, spec task.NewTask) (*task.Record, error) {
	r, err := task.NewRecord(spec, s.timestamp())
	if err != nil {
		return nil, err
	}
	if err := s.check("create " + r.ID); err != nil {
		return nil, err
	}
	if err := s.insert(ctx, r, spec.Quota); err != nil {
		return nil, err
	}
	return r.Clone(), nil
}

// queueInsert queues on b the INSERT of r, which returns its id unless the
// id is taken.
func (s *Store) queueInsert(b *pgx.Batch, r *task.Record) {
	b.Queue(s.q.insert, r.ID, r.Owner.Principal, r.Owner.Partition, r.Operation,
		bytesOrNil(r.Params), string(r.Status), r.StatusMessage, r.CreatedAt, r.UpdatedAt,
		int64(r.TTL), int64(r.PollInterval), timeOrNil(r.ExpiresAt), bytesOrNil(r.InputRequests),
		bytesOrNil(r.InputResponses), keysOf(r), bytesOrNil(r.State), bytesOrNil(r.Result), bytesOrNil(r.Error),
		r.CancelRequested, r.Step, r.Attempts, stringOrNil(r.LeaseOwner), timeOrNil(r.LeaseExpiresAt), r.Fence)
}

// Get implements task.Store: one SELECT.
func (s *Store) Get(ctx context.Context, id string) (*task.Record, error) {
	if err := s.check("get " + id); err != nil {
		return nil, err
	}
	r, err := scanRecord(s.pool.QueryRow(ctx, s.q.load, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("pgstore: get %s: %w", id, task.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: get %s: %w", id, err)
	}
	return r, nil
}

// queueStore queues on b the write of r, guarded by the fence it was loaded
// with (checkedUpdate: the transaction aborts if the fence moved).
func (s *Store) queueStore(b *pgx.Batch, r *task.Record, loadedFence int64) {
	b.Queue(s.q.update, r.ID, string(r.Status), r.StatusMessage, r.UpdatedAt,
		int64(r.TTL), int64(r.PollInterval), timeOrNil(r.ExpiresAt), bytesOrNil(r.InputRequests),
		bytesOrNil(r.InputResponses), keysOf(r), bytesOrNil(r.State), bytesOrNil(r.Result), bytesOrNil(r.Error),
		r.CancelRequested, r.Step, r.Attempts, stringOrNil(r.LeaseOwner), timeOrNil(r.LeaseExpiresAt), r.Fence,
		loadedFence)
}

// maxClaimScan bounds how many cancelled-on-claim tasks one Claim call
// settles before giving up for this call.
const maxClaimScan = 32

// Claim implements task.Store in one pipelined transaction: BEGIN with the
// fair SELECT (claimQuery) of up to max claimable rows FOR UPDATE SKIP
// LOCKED, then the claims applied to them, their UPDATEs and COMMIT. If
// some selected tasks were cancelled on the way, or a partition filled its
// share and fewer than max were taken, it writes what it has and selects
// again (in the same transaction) for the rest, settling at most
// maxClaimScan cancelled tasks per call. The tasks are returned in
// round-robin order: the first of each partition (in the order listed),
// then the second, and so on.
//
// The COMMIT waits for its WAL flush, as those of creates and outcomes do,
// although a lost claim only leaves its tasks claimable again: the claim
// also issued each task a new fence, and a claim lost in a crash of the
// database after its worker started the step would let the next claim issue
// the same fence again. Two runs of the step would then hold one fencing
// token, and the first one's Finish would be accepted under the second's
// lease (docs/reliability.md, "Durability of task writes").
func (s *Store) Claim(ctx context.Context, worker string, lease time.Duration, max int, opts ...task.ClaimOptions) ([]*task.Record, error) {
	if worker == "" || lease <= 0 || max < 1 {
		return nil, fmt.Errorf("pgstore: claim: empty worker, non-positive lease or max: %w", task.ErrInvalid)
	}
	var o task.ClaimOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	now := s.timestamp()
	var claimed []*task.Record
	err := s.inTx(ctx, "claim", func(t *ptx) error {
		claimed = nil
		b := &pgx.Batch{}
		var settled [][2]*task.Record
		exclude := append([]string{}, o.Exclude...)
		for pass := 0; len(claimed) < max && len(settled) < maxClaimScan && pass < maxClaimPasses; pass++ {
			var recs []*task.Record
			want := max - len(claimed)
			err := t.query(ctx, s.q.claim, []any{now, want, o.After, exclude}, func(row pgx.Rows) error {
				r, err := scanRecord(row)
				recs = append(recs, r)
				return err
			})
			if err != nil {
				return fmt.Errorf("select: %w", err)
			}
			if len(recs) == 0 {
				break
			}
			perPart := map[string]int{}
			settledNow := 0
			for _, r := range recs {
				perPart[r.Owner.Partition]++
				before := r.Clone()
				ok, changed := r.ApplyClaim(worker, now, lease)
				if !changed {
					return fmt.Errorf("task %s selected but not claimable", r.ID)
				}
				s.queueStore(b, r, before.Fence)
				if ok {
					claimed = append(claimed, r)
				} else {
					settled = append(settled, [2]*task.Record{before, r})
					settledNow++
				}
			}
			// A partition that gave fewer than its share has nothing more
			// to give now; the others may have more.
			share := 1
			if want > len(perPart) {
				share = want / len(perPart)
			}
			more := false
			for p, n := range perPart {
				if n < share {
					exclude = append(exclude, p)
				} else {
					more = true
				}
			}
			if settledNow == 0 && (len(recs) == want || !more) {
				break // every selected task was claimed: none left, or max reached
			}
			// What was selected must be written before selecting again
			// (the next SELECT sees the tasks as they are now).
			if err := t.exec(ctx, b); err != nil {
				return err
			}
			b = &pgx.Batch{}
		}
		if len(claimed) == 0 && len(settled) == 0 {
			return nil // nothing claimable: rolled back
		}
		if err := t.commit(ctx, b); err != nil {
			return err
		}
		s.announce(settled...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return roundRobin(claimed, o.After), nil
}

// maxClaimPasses bounds the SELECTs of one Claim.
const maxClaimPasses = 4

// roundRobin orders recs, the claimed tasks, as a claim returns them: the
// oldest of each partition in the round-robin order from after
// (task.RoundRobin), then the second oldest of each, and so on.
func roundRobin(recs []*task.Record, after string) []*task.Record {
	byPart := map[string][]*task.Record{}
	for _, r := range recs {
		byPart[r.Owner.Partition] = append(byPart[r.Owner.Partition], r)
	}
	if len(byPart) < 2 {
		return recs
	}
	order := task.RoundRobin(slices.Collect(maps.Keys(byPart)), after)
	for _, p := range order {
		slices.SortFunc(byPart[p], func(a, b *task.Record) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
	}
	out := make([]*task.Record, 0, len(recs))
	for i := 0; len(out) < len(recs); i++ {
		for _, p := range order {
			if i < len(byPart[p]) {
				out = append(out, byPart[p][i])
			}
		}
	}
	return out
}

// ExpireAndPurge implements task.Store: expiry is one transaction over up to
// Limit rows (locked with SKIP LOCKED, so concurrent sweepers split the
// work), purge one DELETE of up to Limit rows.
func (s *Store) ExpireAndPurge(ctx context.Context, now time.Time, opts task.SweepOptions) (task.SweepResult, error) {
	var res task.SweepResult
	opts, err := opts.Normalize()
	if err != nil {
		return res, err
	}
	now = now.UTC().Truncate(time.Microsecond)
	err = s.inTx(ctx, "expire", func(t *ptx) error {
		res.Expired = 0
		var recs []*task.Record
		err := t.query(ctx, s.q.expire, []any{now, opts.Limit}, func(row pgx.Rows) error {
			r, err := scanRecord(row)
			recs = append(recs, r)
			return err
		})
		if err != nil {
			return fmt.Errorf("select: %w", err)
		}
		b := &pgx.Batch{}
		var changed [][2]*task.Record
		for _, r := range recs {
			before := r.Clone()
			if !r.ApplyExpiry(now, opts.ExpiredError, opts.ExpiredMessage) {
				continue
			}
			s.queueStore(b, r, before.Fence)
			changed = append(changed, [2]*task.Record{before, r})
		}
		if len(changed) == 0 {
			return nil
		}
		if err := t.commit(ctx, b); err != nil {
			return err
		}
		res.Expired = len(changed)
		s.announce(changed...)
		return nil
	})
	if err != nil {
		return task.SweepResult{}, err
	}
	tag, err := s.pool.Exec(ctx, s.q.purge, now.Add(-opts.Retention), opts.Limit)
	res.Purged = int(tag.RowsAffected())
	if err != nil {
		return res, fmt.Errorf("pgstore: purge: %w", err)
	}
	return res, nil
}

// Publish implements task.Bus with pg_notify: every Store on the same
// database, schema and prefix delivers payload to its subscribers of
// channel. len(channel)+len(payload) must not exceed MaxPayload, and payload
// must be valid UTF-8 without NUL bytes.
func (s *Store) Publish(ctx context.Context, channel, payload string) error {
	if err := task.ValidateChannel(channel); err != nil {
		return err
	}
	if len(channel)+len(payload) > MaxPayload || strings.ContainsRune(payload, 0) {
		return fmt.Errorf("pgstore: publish on %q: payload of %d bytes (max %d, no NUL): %w",
			channel, len(payload), MaxPayload-len(channel), task.ErrInvalid)
	}
	if err := s.check("publish"); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel, s.origin+"\n"+channel+"\n"+payload); err != nil {
		return fmt.Errorf("pgstore: publish on %q: %w", channel, err)
	}
	return s.hub.Publish(ctx, channel, payload)
}

// NotifyChannel returns the PostgreSQL notification channel this store
// listens and publishes on (derived from the schema and prefix), for
// operators and tests.
func (s *Store) NotifyChannel() string { return s.channel }

// Subscribe implements task.Bus: it subscribes to the events this store's
// listener receives from PostgreSQL.
func (s *Store) Subscribe(ctx context.Context, channel string) (<-chan string, error) {
	return s.hub.Subscribe(ctx, channel)
}

// Close implements task.Store: it stops the listener, closes subscriptions
// and the connection pool (waiting for operations in flight). It is
// idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.closing)
		s.committersDone.Wait()
		s.stopNotifier()
		<-s.notifierDone
		s.listener.Stop()
		_ = s.hub.Close()
		s.pool.Close()
	})
	return nil
}
