package usertoken_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft/client/oauth"
	"github.com/weftmcp/weft/gateway/usertoken"
	"github.com/weftmcp/weft/internal/testpg"
	"github.com/weftmcp/weft/seal"
)

func keyring(t *testing.T) seal.Protector {
	t.Helper()
	k, err := seal.GenerateKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	kr, err := seal.NewKeyring(k)
	if err != nil {
		t.Fatal(err)
	}
	return seal.NewManager(kr, nil)
}

// backends returns, per store kind, two handles on one store (two
// processes of a fleet for PostgreSQL).
func backends(t *testing.T) map[string]func(t *testing.T) (usertoken.Store, usertoken.Store) {
	return map[string]func(t *testing.T) (usertoken.Store, usertoken.Store){
		"memory": func(t *testing.T) (usertoken.Store, usertoken.Store) {
			m := usertoken.NewMemory(0)
			return m, m
		},
		"sqlite": func(t *testing.T) (usertoken.Store, usertoken.Store) {
			s, err := usertoken.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "tokens.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s, s
		},
		"postgres": func(t *testing.T) (usertoken.Store, usertoken.Store) {
			table := testpg.Name("ut")
			var out [2]usertoken.Store
			for i := range out {
				s, err := usertoken.OpenPostgres(context.Background(), testpg.Open(t), table)
				if err != nil {
					t.Fatal(err)
				}
				out[i] = s
			}
			t.Cleanup(func() { _, _ = testpg.Open(t).Exec("DROP TABLE IF EXISTS " + table) })
			return out[0], out[1]
		},
	}
}

func TestVault(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s1, s2 := open(t)
			prot := keyring(t)
			v1, v2 := usertoken.NewVault(s1, prot), usertoken.NewVault(s2, prot)
			alice := usertoken.Key{Upstream: "up", Identity: "alice"}
			bob := usertoken.Key{Upstream: "up", Identity: "bob"}
			if tok, err := v1.Token(ctx, alice); tok != nil || err != nil {
				t.Fatalf("empty store: %v, %v", tok, err)
			}
			// Secrets long enough that random ciphertext never holds them
			// by chance (two bytes would, one time in a few hundred).
			const accessA1, refreshR1 = "access-token-of-alice-a1", "refresh-token-of-alice-r1"
			if err := v1.Save(ctx, alice, &oauth.Token{AccessToken: accessA1, RefreshToken: refreshR1, TokenType: "Bearer"}); err != nil {
				t.Fatal(err)
			}
			got, err := v2.Token(ctx, alice)
			if err != nil || got == nil || got.AccessToken != accessA1 || got.RefreshToken != refreshR1 {
				t.Fatalf("the other handle reads %+v, %v", got, err)
			}
			// Sealed, and bound to its key: alice's record does not open
			// as bob's.
			rec, err := s1.Get(ctx, alice)
			if err != nil || len(rec) == 0 {
				t.Fatalf("record: %q, %v", rec, err)
			}
			for _, secret := range []string{accessA1, refreshR1} {
				if contains(rec, secret) {
					t.Fatalf("the record holds %q in the clear", secret)
				}
			}
			if err := s1.Update(ctx, bob, func([]byte) ([]byte, error) { return rec, nil }); err != nil {
				t.Fatal(err)
			}
			if tok, err := v1.Token(ctx, bob); err == nil || tok != nil {
				t.Fatalf("alice's record copied to bob opened: %+v, %v", tok, err)
			}
			// Drop keeps a token replaced meanwhile.
			if err := v2.Drop(ctx, alice, "other"); err != nil {
				t.Fatal(err)
			}
			if tok, _ := v1.Token(ctx, alice); tok == nil {
				t.Fatal("Drop of another access token dropped the current one")
			}

			// Concurrent refreshes of one stale token on both handles: one
			// refresh; every caller gets its result.
			var refreshes atomic.Int32
			refresh := func(_ context.Context, old *oauth.Token) (*oauth.Token, error) {
				n := refreshes.Add(1)
				return &oauth.Token{AccessToken: "a" + strconv.Itoa(int(n)+1), RefreshToken: old.RefreshToken + "x", TokenType: "Bearer"}, nil
			}
			stale := &oauth.Token{AccessToken: accessA1}
			var wg sync.WaitGroup
			results := make([]string, 8)
			for i := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					v := []*usertoken.Vault{v1, v2}[i%2]
					tok, err := v.Refresh(ctx, alice, stale, refresh)
					if err != nil {
						t.Error(err)
						return
					}
					results[i] = tok.AccessToken
				}()
			}
			wg.Wait()
			if refreshes.Load() != 1 {
				t.Errorf("%d refreshes of one token, want 1", refreshes.Load())
			}
			for _, r := range results {
				if r != "a2" {
					t.Errorf("refresh results %q, want a2 for every caller", results)
					break
				}
			}
			// A refused refresh drops the token.
			refused := func(context.Context, *oauth.Token) (*oauth.Token, error) {
				return nil, &oauth.OAuthError{Code: "invalid_grant", StatusCode: 400}
			}
			cur, _ := v1.Token(ctx, alice)
			if _, err := v2.Refresh(ctx, alice, cur, refused); err == nil {
				t.Fatal("a refused refresh reported no error")
			}
			if tok, _ := v1.Token(ctx, alice); tok != nil {
				t.Fatalf("a refused refresh kept the token %+v", tok)
			}
			// A failure of the server keeps it.
			if err := v1.Save(ctx, alice, &oauth.Token{AccessToken: "a9", RefreshToken: "r9"}); err != nil {
				t.Fatal(err)
			}
			down := errors.New("connection refused")
			if _, err := v2.Refresh(ctx, alice, &oauth.Token{AccessToken: "a9"}, func(context.Context, *oauth.Token) (*oauth.Token, error) { return nil, down }); !errors.Is(err, down) {
				t.Fatalf("refresh failure: %v", err)
			}
			if tok, _ := v1.Token(ctx, alice); tok == nil || tok.AccessToken != "a9" {
				t.Fatalf("a failed refresh lost the token: %+v", tok)
			}
		})
	}
}

// TestStoreUpdateSerialized: concurrent updates of one key on two handles
// never lose one.
func TestStoreUpdateSerialized(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			s1, s2 := open(t)
			k := usertoken.Key{Upstream: "up", Identity: "n"}
			var wg sync.WaitGroup
			const n = 20
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := []usertoken.Store{s1, s2}[i%2]
					err := s.Update(context.Background(), k, func(cur []byte) ([]byte, error) {
						v, _ := strconv.Atoi(string(cur))
						return []byte(strconv.Itoa(v + 1)), nil
					})
					if err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			got, err := s1.Get(context.Background(), k)
			if err != nil || string(got) != strconv.Itoa(n) {
				t.Fatalf("after %d increments: %q, %v", n, got, err)
			}
			if err := s2.Update(context.Background(), k, func([]byte) ([]byte, error) { return nil, nil }); err != nil {
				t.Fatal(err)
			}
			if got, err := s1.Get(context.Background(), k); got != nil || err != nil {
				t.Fatalf("deleted record: %q, %v", got, err)
			}
		})
	}
}

func TestMemoryFull(t *testing.T) {
	m := usertoken.NewMemory(1)
	put := func(id string) error {
		return m.Update(context.Background(), usertoken.Key{Upstream: "u", Identity: id}, func([]byte) ([]byte, error) { return []byte("x"), nil })
	}
	if err := put("a"); err != nil {
		t.Fatal(err)
	}
	if err := put("b"); !errors.Is(err, usertoken.ErrFull) {
		t.Fatalf("second record: %v, want ErrFull", err)
	}
	if err := put("a"); err != nil {
		t.Fatalf("replacing the record: %v", err)
	}
}

func contains(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			return true
		}
	}
	return false
}

// TestVaultClaim: a one-time handle is claimed once across the instances
// sharing a store, even when they race; claims of one user do not affect
// another's or the user's token; expired claims are forgotten.
func TestVaultClaim(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s1, s2 := open(t)
			prot := keyring(t)
			v := []*usertoken.Vault{usertoken.NewVault(s1, prot), usertoken.NewVault(s2, prot)}
			alice := usertoken.Key{Upstream: "up", Identity: "alice"}
			bob := usertoken.Key{Upstream: "up", Identity: "bob"}
			if err := v[0].Save(ctx, alice, &oauth.Token{AccessToken: "a1", TokenType: "Bearer"}); err != nil {
				t.Fatal(err)
			}
			later := time.Now().Add(time.Hour)
			var wg sync.WaitGroup
			var mu sync.Mutex
			wins := 0
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := v[i%2].Claim(ctx, alice, "link-1", later)
					if err != nil {
						t.Error(err)
					}
					if ok {
						mu.Lock()
						wins++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if wins != 1 {
				t.Fatalf("link-1 claimed %d times, want once", wins)
			}
			for _, tc := range []struct {
				v    *usertoken.Vault
				k    usertoken.Key
				id   string
				want bool
			}{
				{v[1], alice, "link-1", false},
				{v[1], alice, "link-2", true},
				{v[0], bob, "link-1", true},
				{v[0], bob, "link-1", false},
			} {
				if got, err := tc.v.Claim(ctx, tc.k, tc.id, later); err != nil || got != tc.want {
					t.Errorf("claim %s of %s: %v, %v; want %v", tc.id, tc.k.Identity, got, err, tc.want)
				}
			}
			if tok, err := v[1].Token(ctx, alice); err != nil || tok == nil || tok.AccessToken != "a1" {
				t.Errorf("alice's token after claims: %+v, %v", tok, err)
			}
			// An expired claim is forgotten when the user's next claim
			// prunes it.
			if ok, err := v[0].Claim(ctx, bob, "old", time.Now().Add(-time.Minute)); err != nil || !ok {
				t.Fatalf("claim of old: %v, %v", ok, err)
			}
			if ok, err := v[0].Claim(ctx, bob, "old", later); err != nil || !ok {
				t.Errorf("an expired claim still held: %v, %v", ok, err)
			}
			if _, err := v[0].Claim(ctx, bob, "", later); err == nil {
				t.Error("an empty handle was claimed")
			}
		})
	}
}
