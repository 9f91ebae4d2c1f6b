// Package usertoken keeps the OAuth tokens a gateway holds for its users at
// the upstreams they authorized it for (per-user upstream authorization):
// one record per user and upstream, sealed under the gateway's keyring
// (AES-256-GCM, bound to the user and upstream it belongs to, so that a
// record copied to another row does not open) before it reaches a [Store].
//
// [Vault] is what the gateway uses: it seals and opens tokens and
// serializes their refreshes across every instance sharing the store, so
// that a rotating refresh token is redeemed exactly once. The stores are
// [NewMemory] (one process, the default), [OpenSQLite] (one process,
// surviving restarts) and [OpenPostgres] (a fleet).
package usertoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/weftmcp/weft/client/oauth"
	"github.com/weftmcp/weft/seal"
)

// Key names one user's record at one upstream.
type Key struct {
	// Upstream is the upstream's configured name.
	Upstream string
	// Identity names the user; the gateway uses a digest of the caller's
	// authorization partition and principal, never a token.
	Identity string
}

// ErrFull reports a store holding as many records as it may.
var ErrFull = errors.New("usertoken: store full")

// Store keeps sealed records. Implementations must be safe for concurrent
// use, and Update must be serialized per key across every process sharing
// the store.
type Store interface {
	// Get returns the record of k, or nil when there is none.
	Get(ctx context.Context, k Key) ([]byte, error)
	// Update runs fn with the record of k (nil when none) while no other
	// Update of k runs anywhere, and stores what fn returns (nil deletes
	// the record). An error of fn leaves the record as it was and is
	// returned.
	Update(ctx context.Context, k Key, fn func(cur []byte) ([]byte, error)) error
	// Close releases the store's resources.
	Close() error
}

// Vault seals a user's tokens into a Store.
type Vault struct {
	store Store
	prot  seal.Protector
}

// NewVault returns a vault sealing with prot (a fleet shares its keyring)
// into store.
func NewVault(store Store, prot seal.Protector) *Vault { return &Vault{store: store, prot: prot} }

func binding(k Key) []byte {
	return []byte("weft-gateway-usertoken\x00" + k.Upstream + "\x00" + k.Identity)
}

func (v *Vault) open(ctx context.Context, k Key, rec []byte) (*oauth.Token, error) {
	if rec == nil {
		return nil, nil
	}
	pt, err := v.prot.Open(ctx, string(rec), binding(k))
	if err != nil {
		return nil, fmt.Errorf("usertoken: opening the token of upstream %q: %w (was the keyring changed without keeping the old key for verification?)", k.Upstream, err)
	}
	var t oauth.Token
	if err := json.Unmarshal(pt, &t); err != nil {
		return nil, fmt.Errorf("usertoken: token of upstream %q: %w", k.Upstream, err)
	}
	return &t, nil
}

func (v *Vault) sealToken(ctx context.Context, k Key, t *oauth.Token) ([]byte, error) {
	pt, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	s, err := v.prot.Seal(ctx, binding(k), pt)
	if err != nil {
		return nil, fmt.Errorf("usertoken: sealing the token of upstream %q: %w", k.Upstream, err)
	}
	return []byte(s), nil
}

// Token returns the user's token, or nil when there is none.
func (v *Vault) Token(ctx context.Context, k Key) (*oauth.Token, error) {
	rec, err := v.store.Get(ctx, k)
	if err != nil {
		return nil, err
	}
	return v.open(ctx, k, rec)
}

// Save stores t as the user's token.
func (v *Vault) Save(ctx context.Context, k Key, t *oauth.Token) error {
	rec, err := v.sealToken(ctx, k, t)
	if err != nil {
		return err
	}
	return v.store.Update(ctx, k, func([]byte) ([]byte, error) { return rec, nil })
}

// Drop deletes the user's token if it is still the one whose access token
// is accessToken (the one an upstream refused), so that a token another
// instance obtained meanwhile is kept.
func (v *Vault) Drop(ctx context.Context, k Key, accessToken string) error {
	return v.store.Update(ctx, k, func(cur []byte) ([]byte, error) {
		t, err := v.open(ctx, k, cur)
		if err != nil || t == nil || t.AccessToken == accessToken {
			return nil, nil // an unreadable record goes too
		}
		return cur, nil
	})
}

// Refresh replaces stale, the user's token, by what refresh returns, unless
// another process replaced it meanwhile (then that token is returned). The
// refresh runs while no other refresh of the user's token runs anywhere.
// When refresh fails with an OAuth error (the grant was revoked or
// expired) the token is dropped: the user must authorize again, and
// (nil, err) is returned.
func (v *Vault) Refresh(ctx context.Context, k Key, stale *oauth.Token, refresh func(context.Context, *oauth.Token) (*oauth.Token, error)) (*oauth.Token, error) {
	var out *oauth.Token
	var dropped error
	err := v.store.Update(ctx, k, func(cur []byte) ([]byte, error) {
		t, err := v.open(ctx, k, cur)
		if err != nil {
			return nil, err
		}
		if t == nil {
			return nil, nil
		}
		if t.AccessToken != stale.AccessToken {
			out = t
			return cur, nil
		}
		nt, err := refresh(ctx, t)
		if err != nil {
			var oe *oauth.OAuthError
			if errors.As(err, &oe) && oe.StatusCode >= 400 && oe.StatusCode < 500 {
				dropped = err
				return nil, nil
			}
			return nil, err
		}
		rec, err := v.sealToken(ctx, k, nt)
		if err != nil {
			return nil, err
		}
		out = nt
		return rec, nil
	})
	if err != nil {
		return nil, err
	}
	if dropped != nil {
		return nil, fmt.Errorf("usertoken: the refresh was refused, the token is dropped: %w", dropped)
	}
	return out, nil
}

// DefaultMaxMemoryRecords bounds a memory store by default.
const DefaultMaxMemoryRecords = 100_000

// Memory is a [Store] in memory, for one gateway process.
type Memory struct {
	max int

	mu   sync.Mutex
	recs map[Key]*memRec
}

type memRec struct {
	mu   sync.Mutex // held by Update
	data []byte     // guarded by Memory.mu
	gone bool       // removed from the map (guarded by mu)
}

// NewMemory returns a memory store of at most maxRecords records (0:
// DefaultMaxMemoryRecords).
func NewMemory(maxRecords int) *Memory {
	if maxRecords <= 0 {
		maxRecords = DefaultMaxMemoryRecords
	}
	return &Memory{max: maxRecords, recs: map[Key]*memRec{}}
}

// Get implements [Store].
func (m *Memory) Get(_ context.Context, k Key) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.recs[k]; r != nil {
		return r.data, nil
	}
	return nil, nil
}

// Update implements [Store].
func (m *Memory) Update(ctx context.Context, k Key, fn func([]byte) ([]byte, error)) error {
	for {
		m.mu.Lock()
		r := m.recs[k]
		if r == nil {
			if len(m.recs) >= m.max {
				m.mu.Unlock()
				return fmt.Errorf("%w: %d records", ErrFull, m.max)
			}
			r = &memRec{}
			m.recs[k] = r
		}
		m.mu.Unlock()
		r.mu.Lock()
		m.mu.Lock()
		if r.gone {
			m.mu.Unlock()
			r.mu.Unlock()
			continue
		}
		cur := r.data
		m.mu.Unlock()
		next, err := fn(cur)
		m.mu.Lock()
		switch {
		case err != nil:
		case next == nil:
			r.data = nil
		default:
			r.data = next
		}
		if r.data == nil {
			r.gone = true
			delete(m.recs, k)
		}
		m.mu.Unlock()
		r.mu.Unlock()
		return err
	}
}

// Len returns the number of records.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}

// Close implements [Store].
func (m *Memory) Close() error { return nil }

// MaxClaims bounds the one-time handles of one user at one upstream
// claimed and not yet expired.
const MaxClaims = 1024

// claimsKey is the record of k's claimed handles: an identity no digest
// can spell.
func claimsKey(k Key) Key { return Key{Upstream: k.Upstream, Identity: k.Identity + "/claimed"} }

// Claim records the use of the one-time handle id of k's user, valid
// until expires: true the first time, false when it was claimed before.
// Claims are kept until their handle expires, in one record per user and
// upstream beside the token, so every instance sharing the store sees
// them.
func (v *Vault) Claim(ctx context.Context, k Key, id string, expires time.Time) (bool, error) {
	if id == "" {
		return false, errors.New("usertoken: claim of an empty handle")
	}
	first := false
	now := time.Now().Unix()
	err := v.store.Update(ctx, claimsKey(k), func(cur []byte) ([]byte, error) {
		claims := map[string]int64{}
		if cur != nil {
			if err := json.Unmarshal(cur, &claims); err != nil {
				return nil, fmt.Errorf("usertoken: claims of %s: %w", k.Upstream, err)
			}
		}
		maps.DeleteFunc(claims, func(_ string, exp int64) bool { return exp < now })
		if _, used := claims[id]; used {
			return nil, errClaimed
		}
		if len(claims) >= MaxClaims {
			return nil, fmt.Errorf("usertoken: %d handles of one user claimed and not expired", MaxClaims)
		}
		claims[id] = expires.Unix()
		first = true
		return json.Marshal(claims)
	})
	if errors.Is(err, errClaimed) {
		return false, nil
	}
	return first, err
}

var errClaimed = errors.New("usertoken: claimed")
