package handle_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft/handle"
	"github.com/weftmcp/weft/internal/testpg"
	_ "modernc.org/sqlite"
)

type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time      { return time.UnixMilli(c.t.Load()) }
func (c *clock) add(d time.Duration) { c.t.Add(d.Milliseconds()) }

func stores(t *testing.T) map[string]func(t *testing.T, c *clock) *handle.Store {
	return map[string]func(t *testing.T, c *clock) *handle.Store{
		"sqlite": func(t *testing.T, c *clock) *handle.Store {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "h.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			s, err := handle.New(context.Background(), db, handle.SQLite, &handle.Options{Now: c.now})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"postgres": func(t *testing.T, c *clock) *handle.Store {
			db := testpg.Open(t)
			table := testpg.Name("weft_handles")
			t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
			s, err := handle.New(context.Background(), db, handle.Postgres, &handle.Options{Table: table, Now: c.now})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

func TestStore(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := &clock{}
			c.t.Store(1_700_000_000_000)
			s := open(t, c)
			alice := handle.Binding{Tenant: "acme", Principal: "alice", Partition: "p1", Operation: "cart.checkout"}
			h, err := s.Issue(ctx, alice, []byte(`{"step":1}`), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) != 43 {
				t.Fatalf("handle length %d", len(h))
			}
			// Every wrong binding fails alike and consumes nothing.
			for _, wrong := range []handle.Binding{
				{Tenant: "other", Principal: "alice", Partition: "p1", Operation: "cart.checkout"},
				{Tenant: "acme", Principal: "mallory", Partition: "p1", Operation: "cart.checkout"},
				{Tenant: "acme", Principal: "alice", Partition: "p2", Operation: "cart.checkout"},
				{Tenant: "acme", Principal: "alice", Partition: "p1", Operation: "cart.other"},
			} {
				if _, err := s.Consume(ctx, h, wrong); !errors.Is(err, handle.ErrInvalid) {
					t.Fatalf("wrong binding %+v: got %v", wrong, err)
				}
			}
			for _, bad := range []string{"", "x", h + "A", h[:42] + "*"} {
				if _, err := s.Consume(ctx, bad, alice); !errors.Is(err, handle.ErrInvalid) {
					t.Fatalf("malformed %q: got %v", bad, err)
				}
			}
			// Rotation hands back the payload and a successor; the old one is spent.
			p, next, err := s.Rotate(ctx, h, alice, []byte(`{"step":2}`), time.Minute)
			if err != nil || string(p) != `{"step":1}` || next == h {
				t.Fatalf("rotate: %q %q %v", p, next, err)
			}
			if _, err := s.Consume(ctx, h, alice); !errors.Is(err, handle.ErrInvalid) {
				t.Fatalf("replayed handle: got %v", err)
			}
			if _, _, err := s.Rotate(ctx, h, alice, nil, time.Minute); !errors.Is(err, handle.ErrInvalid) {
				t.Fatalf("rotating a spent handle: got %v", err)
			}
			// Expiry.
			c.add(time.Minute)
			if _, err := s.Consume(ctx, next, alice); !errors.Is(err, handle.ErrInvalid) {
				t.Fatalf("expired handle: got %v", err)
			}
			if n, err := s.Purge(ctx); err != nil || n != 1 {
				t.Fatalf("purge: %d %v", n, err)
			}
		})
	}
}

// TestConcurrentRedemption: of many racing redemptions exactly one wins.
func TestConcurrentRedemption(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := &clock{}
			c.t.Store(1_700_000_000_000)
			s := open(t, c)
			b := handle.Binding{Principal: "bob", Operation: "op"}
			h, err := s.Issue(ctx, b, []byte("x"), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			var wins atomic.Int32
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, _, err := s.Rotate(ctx, h, b, []byte("y"), time.Minute); err == nil {
						wins.Add(1)
					} else if !errors.Is(err, handle.ErrInvalid) {
						// SQLite may report a busy database under contention;
						// that is a failed redemption too, never a double one.
						t.Logf("rotate: %v", err)
					}
				}()
			}
			wg.Wait()
			if wins.Load() != 1 {
				t.Fatalf("%d redemptions succeeded, want exactly 1", wins.Load())
			}
		})
	}
}
