package quota

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"sync/atomic"
	"time"
)

// PostgresOptions configure OpenPostgres. The zero value is usable.
type PostgresOptions struct {
	// Schema holds the table (created if missing); empty: the search_path.
	Schema string
	// Table names the table (default "weft_quota").
	Table string
}

// Postgres is a Store in PostgreSQL, shared by every instance using the
// table: a quota counts the calls of the whole fleet. Time is the
// database's clock, so instances' clocks need not agree.
type Postgres struct {
	db    *sql.DB
	take  string
	ahead string
	purge string
	n     atomic.Uint64
}

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// purgeEvery is how many Takes pass between purges of refilled keys.
const purgeEvery = 1024

// OpenPostgres creates the table if missing and returns the store. db is
// the caller's (a pgx database/sql handle) and stays open after use.
func OpenPostgres(ctx context.Context, db *sql.DB, o *PostgresOptions) (*Postgres, error) {
	var opts PostgresOptions
	if o != nil {
		opts = *o
	}
	if opts.Table == "" {
		opts.Table = "weft_quota"
	}
	if !identRE.MatchString(opts.Table) || opts.Schema != "" && !identRE.MatchString(opts.Schema) {
		return nil, errors.New("quota: schema and table must be lower-case SQL identifiers")
	}
	t := opts.Table
	if opts.Schema != "" {
		if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+opts.Schema); err != nil {
			return nil, fmt.Errorf("quota: create schema: %w", err)
		}
		t = opts.Schema + "." + t
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+t+" (key text PRIMARY KEY, tat timestamptz NOT NULL)"); err != nil {
		return nil, fmt.Errorf("quota: create table: %w", err)
	}
	p := &Postgres{db: db,
		// One statement counts a call that fits: the theoretical arrival
		// time moves one interval past max(tat, now), unless it already
		// runs more than the tolerance ahead of now. $2 and $3 are
		// microseconds.
		take: `INSERT INTO ` + t + ` AS q (key, tat) VALUES ($1, clock_timestamp() + make_interval(secs => $2::float8 / 1e6))
ON CONFLICT (key) DO UPDATE SET tat = GREATEST(q.tat, clock_timestamp()) + make_interval(secs => $2::float8 / 1e6)
WHERE GREATEST(q.tat, clock_timestamp()) - clock_timestamp() <= make_interval(secs => $3::float8 / 1e6)
RETURNING 1`,
		ahead: `SELECT EXTRACT(EPOCH FROM (tat - clock_timestamp())) * 1e6 - $2::float8 FROM ` + t + ` WHERE key = $1`,
		purge: `DELETE FROM ` + t + ` WHERE tat < clock_timestamp() - interval '1 minute'`,
	}
	return p, nil
}

// Take implements Store.
func (p *Postgres) Take(ctx context.Context, key string, l Limit) (Decision, error) {
	if err := l.Check(); err != nil {
		return Decision{}, err
	}
	if len(key) > MaxKeyBytes {
		return Decision{}, ErrKeyTooLong
	}
	if p.n.Add(1)%purgeEvery == 0 {
		if _, err := p.db.ExecContext(ctx, p.purge); err != nil {
			return Decision{}, fmt.Errorf("quota: purge: %w", err)
		}
	}
	var one int
	err := p.db.QueryRowContext(ctx, p.take, key, l.interval().Microseconds(), l.tolerance().Microseconds()).Scan(&one)
	if err == nil {
		return Decision{Allowed: true}, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return Decision{}, fmt.Errorf("quota: %w", err)
	}
	var us float64
	if err := p.db.QueryRowContext(ctx, p.ahead, key, l.tolerance().Microseconds()).Scan(&us); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Decision{}, fmt.Errorf("quota: %w", err)
	}
	return Decision{RetryAfter: max(time.Duration(us)*time.Microsecond, time.Millisecond)}, nil
}
