package weft

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weftmcp/weft/sessionstore/pgstore"
)

// pgTestDSN returns the PostgreSQL test database (WEFT_TEST_POSTGRES),
// skipping when it is unreachable, or failing when CI is set.
func pgTestDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("WEFT_TEST_POSTGRES")
	if dsn == "" {
		dsn = "postgres://root@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err == nil {
		err = c.Ping(ctx)
		_ = c.Close(ctx)
	}
	if err != nil {
		msg := "PostgreSQL unreachable (set WEFT_TEST_POSTGRES): " + err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dsn
}

// pgFreshSchema returns a new schema name, dropped when t ends.
func pgFreshSchema(t testing.TB, dsn string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "weft_legacy_test_" + hex.EncodeToString(b[:])
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

// TestLegacyFleetPostgres runs the fleet scenario with two instances, each
// with its own PostgreSQL store (pool and listener) on one schema.
func TestLegacyFleetPostgres(t *testing.T) {
	dsn := pgTestDSN(t)
	schema := pgFreshSchema(t, dsn)
	open := func() *pgstore.Store {
		st, err := pgstore.Open(context.Background(), dsn, pgstore.Options{Schema: schema, PollInterval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	testLegacyFleet(t, open(), open())
}
