// Package testpg connects tests to PostgreSQL: the DSN comes from
// WEFT_TEST_POSTGRES (default postgres://root@127.0.0.1:5432/test?sslmode=disable).
// When the server is unreachable a test fails in CI (env CI set) and is
// skipped elsewhere, so CI can never pass by skipping.
//
// A test that must stop or restart PostgreSQL starts a throwaway [Cluster]
// of its own instead ([StartCluster]), so the shared server is never
// restarted.
package testpg

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// DefaultDSN is used when WEFT_TEST_POSTGRES is empty.
const DefaultDSN = "postgres://root@127.0.0.1:5432/test?sslmode=disable"

// DSN returns the test database DSN.
func DSN() string {
	if d := os.Getenv("WEFT_TEST_POSTGRES"); d != "" {
		return d
	}
	return DefaultDSN
}

// Open returns a database/sql handle on the test database, or fails/skips.
func Open(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", DSN())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = db.PingContext(ctx)
		cancel()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required in CI but unreachable at %s: %v", DSN(), err)
		}
		t.Skipf("PostgreSQL unreachable at %s (set WEFT_TEST_POSTGRES): %v", DSN(), err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Name returns a unique identifier with the given prefix, for tables or schemas.
func Name(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// Reachable returns the test DSN once PostgreSQL answers on it, failing the
// test in CI and skipping it elsewhere when it does not (the message names
// user, host and database, never a password).
func Reachable(t testing.TB) string {
	t.Helper()
	dsn := DSN()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err == nil {
		err = c.Ping(ctx)
		_ = c.Close(ctx)
	}
	if err != nil {
		msg := "PostgreSQL unreachable at " + redact(dsn) + " (set WEFT_TEST_POSTGRES): " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dsn
}

// FreshSchema returns a new schema name with the given prefix (nothing is
// created) and drops the schema, if anything created it, when t ends.
func FreshSchema(t testing.TB, dsn, prefix string) string {
	t.Helper()
	schema := Name(prefix)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

func redact(dsn string) string {
	if cfg, err := pgx.ParseConfig(dsn); err == nil {
		return cfg.User + "@" + cfg.Host + "/" + cfg.Database
	}
	return "<unparsable dsn>"
}
