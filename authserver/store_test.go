package authserver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestStore runs the store contract on SQLite and PostgreSQL: single use
// exactly once under concurrency, reuse reported with the family, insert
// only once, family deletion, expiry, and Trim's bound.
func TestStore(t *testing.T) {
	backends := map[string]func(t *testing.T) *SQLStore{
		"sqlite": func(t *testing.T) *SQLStore {
			st, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
		"postgres": func(t *testing.T) *SQLStore { return pgStore(t).(*SQLStore) },
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			now := time.Now()
			st.now = func() time.Time { return now }
			exp := now.Add(time.Minute)
			if err := st.Put(ctx, Item{Kind: "code", ID: "c1", Family: "f1", Data: []byte("d"), Expires: exp}); err != nil {
				t.Fatal(err)
			}
			// Twenty concurrent takes: exactly one wins.
			var wg sync.WaitGroup
			var mu sync.Mutex
			wins, used := 0, 0
			for i := 0; i < 20; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					it, err := st.Take(ctx, "code", "c1")
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						wins++
					case errors.Is(err, ErrUsed) && it.Family == "f1":
						used++
					default:
						t.Errorf("take: %v", err)
					}
				}()
			}
			wg.Wait()
			if wins != 1 || used != 19 {
				t.Fatalf("wins %d, used %d", wins, used)
			}
			if _, err := st.Get(ctx, "code", "c1"); !errors.Is(err, ErrNotFound) {
				t.Errorf("get after take: %v", err)
			}
			if ok, err := st.Insert(ctx, Item{Kind: "jti", ID: "j", Data: []byte{}, Expires: exp}); !ok || err != nil {
				t.Fatalf("insert: %v %v", ok, err)
			}
			if ok, err := st.Insert(ctx, Item{Kind: "jti", ID: "j", Data: []byte{}, Expires: exp}); ok || err != nil {
				t.Fatalf("second insert: %v %v", ok, err)
			}
			_ = st.Put(ctx, Item{Kind: "refresh", ID: "r1", Family: "f1", Data: []byte{}, Expires: exp})
			if err := st.DeleteFamily(ctx, "f1"); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Take(ctx, "refresh", "r1"); !errors.Is(err, ErrNotFound) {
				t.Errorf("take after family deletion: %v", err)
			}
			// Expiry: an expired item is gone; its key can be inserted again.
			now = now.Add(2 * time.Minute)
			if ok, err := st.Insert(ctx, Item{Kind: "jti", ID: "j", Data: []byte{}, Expires: now.Add(time.Minute)}); !ok || err != nil {
				t.Fatalf("insert after expiry: %v %v", ok, err)
			}
			// Trim keeps the max items expiring last.
			for i := 0; i < 10; i++ {
				_ = st.Put(ctx, Item{Kind: "pending", ID: fmt.Sprint(i), Data: []byte{}, Expires: now.Add(time.Duration(i+1) * time.Minute)})
			}
			if err := st.Trim(ctx, "pending", 3); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10; i++ {
				_, err := st.Get(ctx, "pending", fmt.Sprint(i))
				if (err == nil) != (i >= 7) {
					t.Errorf("after trim, item %d: %v", i, err)
				}
			}
		})
	}
}
