package quota_test

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/weftmcp/weft/internal/testpg"
	"github.com/weftmcp/weft/quota"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestMemory(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		limit   quota.Limit
		steps   []time.Duration // time advanced before each call
		allowed []bool
	}{
		{"burst then refused", quota.Limit{Calls: 3, Per: time.Minute}, []time.Duration{0, 0, 0, 0}, []bool{true, true, true, false}},
		{"refills one interval", quota.Limit{Calls: 3, Per: time.Minute}, []time.Duration{0, 0, 0, 0, 20 * time.Second, 0}, []bool{true, true, true, false, true, false}},
		{"burst one spaces calls", quota.Limit{Calls: 60, Per: time.Minute, Burst: 1}, []time.Duration{0, 0, time.Second, 500 * time.Millisecond}, []bool{true, false, true, false}},
		{"full refill after idle", quota.Limit{Calls: 2, Per: time.Second}, []time.Duration{0, 0, 0, time.Hour, 0, 0}, []bool{true, true, false, true, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Unix(1e9, 0)}
			m := quota.NewMemory(&quota.MemoryOptions{Now: c.now})
			for i, d := range tt.steps {
				c.t = c.t.Add(d)
				got, err := m.Take(ctx, "k", tt.limit)
				if err != nil {
					t.Fatal(err)
				}
				if got.Allowed != tt.allowed[i] {
					t.Fatalf("call %d: allowed %v, want %v", i+1, got.Allowed, tt.allowed[i])
				}
				if !got.Allowed && got.RetryAfter <= 0 {
					t.Fatalf("call %d: refused without a RetryAfter", i+1)
				}
			}
		})
	}
}

func TestMemoryRetryAfterIsExact(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	m := quota.NewMemory(&quota.MemoryOptions{Now: c.now})
	l := quota.Limit{Calls: 2, Per: time.Minute}
	for range 2 {
		m.Take(context.Background(), "k", l)
	}
	d, _ := m.Take(context.Background(), "k", l)
	if d.Allowed || d.RetryAfter != 30*time.Second {
		t.Fatalf("got %+v, want refused for 30s", d)
	}
	c.t = c.t.Add(d.RetryAfter)
	if d, _ := m.Take(context.Background(), "k", l); !d.Allowed {
		t.Fatalf("after RetryAfter: %+v", d)
	}
}

func TestMemoryKeysApartAndBounded(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	m := quota.NewMemory(&quota.MemoryOptions{Now: c.now, MaxKeys: 2})
	l := quota.Limit{Calls: 1, Per: time.Minute}
	for _, k := range []string{"a", "b"} {
		if d, _ := m.Take(context.Background(), k, l); !d.Allowed {
			t.Fatalf("%s refused", k)
		}
	}
	// Full, and no key has refilled: a new key is refused, not given a
	// fresh quota at another's expense.
	if d, _ := m.Take(context.Background(), "c", l); d.Allowed {
		t.Fatal("a new key got a quota in a full store")
	}
	c.t = c.t.Add(time.Minute)
	if d, _ := m.Take(context.Background(), "c", l); !d.Allowed || m.Len() != 1 {
		t.Fatalf("after refill: %+v, %d keys", d, m.Len())
	}
}

func TestBadInput(t *testing.T) {
	m := quota.NewMemory(nil)
	for _, l := range []quota.Limit{{}, {Calls: 1}, {Calls: 1, Per: time.Second, Burst: -1}} {
		if _, err := m.Take(context.Background(), "k", l); err == nil {
			t.Errorf("%+v: no error", l)
		}
	}
	long := make([]byte, quota.MaxKeyBytes+1)
	if _, err := m.Take(context.Background(), string(long), quota.Limit{Calls: 1, Per: time.Second}); err != quota.ErrKeyTooLong {
		t.Errorf("long key: %v", err)
	}
}

// TestPostgresFleet: two instances (two connection pools) on one table
// count against one quota, concurrently; a refusal's RetryAfter is within
// the interval.
func TestPostgresFleet(t *testing.T) {
	dsn := testpg.Reachable(t)
	schema := testpg.FreshSchema(t, dsn, "quota")
	ctx := context.Background()
	var stores []*quota.Postgres
	for range 2 {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s, err := quota.OpenPostgres(ctx, db, &quota.PostgresOptions{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	l := quota.Limit{Calls: 10, Per: time.Hour}
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := stores[i%2].Take(ctx, "rule|alice", l)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Allowed {
				allowed.Add(1)
			} else if d.RetryAfter <= 0 || d.RetryAfter > 6*time.Minute {
				t.Errorf("RetryAfter %s outside (0, 6m]", d.RetryAfter)
			}
		}()
	}
	wg.Wait()
	if n := allowed.Load(); n != 10 {
		t.Fatalf("%d calls allowed across the fleet, want 10", n)
	}
	// Another key has its own quota.
	if d, err := stores[1].Take(ctx, "rule|bob", l); err != nil || !d.Allowed {
		t.Fatalf("bob: %+v %v", d, err)
	}
	if _, err := quota.OpenPostgres(ctx, nil, &quota.PostgresOptions{Table: "Bad-Name"}); err == nil {
		t.Fatal("a bad table name was accepted")
	}
}
