package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/testpg"
	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/sessionstore/pgstore"
	"github.com/weftmcp/weft/sessionstore/storetest"
)

func open(t testing.TB, dsn string, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), dsn, &opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestContract runs the store contract with two instances on one schema
// (two connection pools and listeners, as two processes would have). A
// waiter notices its session's expiry by polling (no event announces it),
// hence the short poll interval; TestNotifyWakesWaiters shows the
// notifications at work.
func TestContract(t *testing.T) {
	dsn := testpg.Reachable(t)
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock, limits sessionstore.Limits) (sessionstore.Store, sessionstore.Store) {
		schema := testpg.FreshSchema(t, dsn, "weft_sess_test")
		opts := pgstore.Options{Schema: schema, Limits: limits, Now: clock.Now, PollInterval: 200 * time.Millisecond}
		return open(t, dsn, opts), open(t, dsn, opts)
	})
}

// With a poll interval longer than the test's patience, a waiter woken in
// time by another instance's Deliver or Delete proves LISTEN/NOTIFY.
func TestNotifyWakesWaiters(t *testing.T) {
	dsn := testpg.Reachable(t)
	schema := testpg.FreshSchema(t, dsn, "weft_sess_test")
	opts := pgstore.Options{Schema: schema, PollInterval: time.Hour}
	a, b := open(t, dsn, opts), open(t, dsn, opts)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		wake    func(id string) error
		wantErr error
	}{
		{"deliver", func(id string) error {
			if ok, err := b.Deliver(ctx, id, "r", []byte(`"x"`)); !ok || err != nil {
				return fmt.Errorf("Deliver = %v, %w", ok, err)
			}
			return nil
		}, nil},
		{"delete", func(id string) error { _, err := b.Delete(ctx, id); return err }, sessionstore.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			sess := storetest.NewSession(storetest.NewClock(), "n-"+tc.name, "i")
			sess.CreatedAt, sess.LastSeen, sess.ExpiresAt = now, now, now.Add(time.Hour)
			if err := a.Create(ctx, sess); err != nil {
				t.Fatal(err)
			}
			if err := a.Expect(ctx, sess.ID, "r", now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() { _, err := a.Await(ctx, sess.ID, "r"); errc <- err }()
			// The waiter's first read may come before or after the wake:
			// either way it must end long before the next poll.
			if err := tc.wake(sess.ID); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-errc:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Await = %v, want %v", err, tc.wantErr)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the waiter was not woken")
			}
		})
	}
}

func TestOptions(t *testing.T) {
	dsn := testpg.Reachable(t)
	for _, o := range []pgstore.Options{{Schema: "Bad-Schema"}, {Prefix: "x;drop"}} {
		if s, err := pgstore.Open(context.Background(), dsn, &o); err == nil {
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
