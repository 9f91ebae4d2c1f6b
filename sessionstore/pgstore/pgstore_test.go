package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/sessionstore/pgstore"
	"github.com/weftmcp/weft/sessionstore/storetest"
)

// defaultDSN is the local test database (trust authentication as root).
const defaultDSN = "postgres://root@127.0.0.1:5432/test?sslmode=disable"

// testDSN returns the test database, skipping when PostgreSQL is unreachable
// (failing instead when CI is set: CI must not silently skip).
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("WEFT_TEST_POSTGRES")
	if dsn == "" {
		dsn = defaultDSN
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

// freshSchema returns a new random schema name, dropped when t ends.
func freshSchema(t testing.TB, dsn string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "weft_sess_test_" + hex.EncodeToString(b[:])
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

func open(t testing.TB, dsn string, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestContract runs the store contract with two instances on one schema
// (two connection pools and listeners, as two processes would have).
func TestContract(t *testing.T) {
	dsn := testDSN(t)
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock, limits sessionstore.Limits) (sessionstore.Store, sessionstore.Store) {
		schema := freshSchema(t, dsn)
		// A long poll interval: a waiter woken in time proves LISTEN/NOTIFY.
		opts := pgstore.Options{Schema: schema, Limits: limits, Now: clock.Now, PollInterval: time.Minute}
		return open(t, dsn, opts), open(t, dsn, opts)
	})
}

func TestOptions(t *testing.T) {
	dsn := testDSN(t)
	for _, o := range []pgstore.Options{{Schema: "Bad-Schema"}, {Prefix: "x;drop"}} {
		if s, err := pgstore.Open(context.Background(), dsn, o); err == nil {
			_ = s.Close()
			t.Errorf("Open(%+v) accepted an invalid identifier", o)
		}
	}
	// Two prefixes in one schema are independent.
	schema := freshSchema(t, dsn)
	a := open(t, dsn, pgstore.Options{Schema: schema})
	b := open(t, dsn, pgstore.Options{Schema: schema, Prefix: "other_"})
	clock := storetest.NewClock()
	sess := storetest.NewSession(clock, "p", "i")
	sess.CreatedAt, sess.LastSeen, sess.ExpiresAt = time.Now(), time.Now(), time.Now().Add(time.Hour)
	if err := a.Create(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(context.Background(), "p"); err == nil {
		t.Fatal("a session leaked across table prefixes")
	}
	if _, err := a.Get(context.Background(), "p"); err != nil {
		t.Fatal(err)
	}
}
