package sqlitestore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/sessionstore/sqlitestore"
	"github.com/weftmcp/weft/sessionstore/storetest"
)

// Two Stores on one file, as two processes sharing it: the contract suite.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock, limits sessionstore.Limits) (sessionstore.Store, sessionstore.Store) {
		path := filepath.Join(t.TempDir(), "sessions.db")
		open := func() sessionstore.Store {
			s, err := sqlitestore.Open(context.Background(), path, &sqlitestore.Options{Limits: limits, Now: clock.Now, PollInterval: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		return open(), open()
	})
}

// Sessions survive closing and opening the file again (a restart).
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	clock := storetest.NewClock()
	s, err := sqlitestore.Open(ctx, path, &sqlitestore.Options{Now: clock.Now, Prefix: "weft_gateway_"})
	if err != nil {
		t.Fatal(err)
	}
	in := storetest.NewSession(clock, "kept", "i")
	in.Subscriptions = []string{"test://a", "test://b"}
	if err := s.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlitestore.Open(ctx, path, &sqlitestore.Options{Now: clock.Now, Prefix: "weft_gateway_"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Get(ctx, "kept")
	if err != nil || len(got.Subscriptions) != 2 || got.Subscriptions[1] != "test://b" || !got.ExpiresAt.Equal(in.ExpiresAt) {
		t.Fatalf("after reopening: %+v %v", got, err)
	}
	// Another prefix is another set of tables.
	other, err := sqlitestore.Open(ctx, path, &sqlitestore.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Get(ctx, "kept"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("another prefix sees the session: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		path string
		opts sqlitestore.Options
	}{
		{"", sqlitestore.Options{}},
		{":memory:", sqlitestore.Options{}},
		{"file:" + filepath.Join(dir, "x.db"), sqlitestore.Options{}},
		{filepath.Join(dir, "x.db") + "?mode=ro", sqlitestore.Options{}},
		{filepath.Join(dir, "x.db"), sqlitestore.Options{Prefix: "Bad-Prefix"}},
		{filepath.Join(dir, "x.db"), sqlitestore.Options{Limits: sessionstore.Limits{MaxSessions: -1}}},
	} {
		s, err := sqlitestore.Open(context.Background(), tc.path, &tc.opts)
		if !errors.Is(err, sessionstore.ErrInvalid) {
			t.Errorf("Open(%q, %+v) = %v, want ErrInvalid", tc.path, tc.opts, err)
		}
		if s != nil {
			s.Close()
		}
	}
}
