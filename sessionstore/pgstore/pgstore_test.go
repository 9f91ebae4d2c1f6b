package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/testpg"
	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/sessionstore/pgstore"
	"github.com/weftmcp/weft/sessionstore/storetest"
)

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
	dsn := testpg.Reachable(t)
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock, limits sessionstore.Limits) (sessionstore.Store, sessionstore.Store) {
		schema := testpg.FreshSchema(t, dsn, "weft_sess_test")
		// A long poll interval: a waiter woken in time proves LISTEN/NOTIFY.
		opts := pgstore.Options{Schema: schema, Limits: limits, Now: clock.Now, PollInterval: time.Minute}
		return open(t, dsn, opts), open(t, dsn, opts)
	})
}

func TestOptions(t *testing.T) {
	dsn := testpg.Reachable(t)
	for _, o := range []pgstore.Options{{Schema: "Bad-Schema"}, {Prefix: "x;drop"}} {
		if s, err := pgstore.Open(context.Background(), dsn, o); err == nil {
			_ = s.Close()
			t.Errorf("Open(%+v) accepted an invalid identifier", o)
		}
	}
	// Two prefixes in one schema are independent.
	schema := testpg.FreshSchema(t, dsn, "weft_sess_test")
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
