package auth

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Defaults and limits of DPoP proof validation (RFC 9449).
const (
	// DefaultDPoPMaxAge is how old a proof's iat may be.
	DefaultDPoPMaxAge = 60 * time.Second
	// DefaultDPoPLeeway is the clock skew tolerated on a proof's iat in
	// the future.
	DefaultDPoPLeeway = 5 * time.Second
	// DefaultDPoPNonceLifetime is how long a server nonce is accepted.
	DefaultDPoPNonceLifetime = 5 * time.Minute
	// MaxDPoPJTIBytes bounds a proof's jti.
	MaxDPoPJTIBytes = 256
	// DefaultReplayCacheEntries bounds a [MemoryReplayCache].
	DefaultReplayCacheEntries = 100000
)

// Errors of DPoP proof validation.
var (
	// ErrDPoP: the DPoP proof is missing, malformed or does not match the
	// request or the token.
	ErrDPoP = errors.New("auth: invalid DPoP proof")
	// ErrDPoPReplay: the proof's jti was seen before.
	ErrDPoPReplay = errors.New("auth: DPoP proof replayed")
	// ErrDPoPNonce: the proof lacks a valid server nonce; answer with
	// error "use_dpop_nonce" and a fresh DPoP-Nonce header.
	ErrDPoPNonce = errors.New("auth: DPoP proof needs a server nonce")
)

// DPoPAlgorithms are the proof algorithms accepted by default.
func DPoPAlgorithms() []string { return []string{"ES256", "EdDSA", "RS256", "PS256"} }

// ReplayCache remembers DPoP proof identifiers until they expire. Share
// one across a fleet (authserver.SQLStore implements it on PostgreSQL),
// or a proof replayed against another instance is accepted there.
type ReplayCache interface {
	// Add records key until exp and reports whether it was new. An error
	// makes the proof be refused (fail closed).
	Add(ctx context.Context, key string, exp time.Time) (bool, error)
}

// MemoryReplayCache is a [ReplayCache] for one process, bounded.
type MemoryReplayCache struct {
	mu   sync.Mutex
	seen map[string]time.Time
	max  int
	now  func() time.Time
}

// NewMemoryReplayCache returns a cache holding at most max live entries
// (DefaultReplayCacheEntries when max <= 0). When full of live entries, it
// refuses new proofs rather than forget a live one.
func NewMemoryReplayCache(max int) *MemoryReplayCache {
	if max <= 0 {
		max = DefaultReplayCacheEntries
	}
	return &MemoryReplayCache{seen: map[string]time.Time{}, max: max, now: time.Now}
}

// Add implements [ReplayCache].
func (m *MemoryReplayCache) Add(_ context.Context, key string, exp time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if e, ok := m.seen[key]; ok && now.Before(e) {
		return false, nil
	}
	if len(m.seen) >= m.max {
		for k, e := range m.seen {
			if !now.Before(e) {
				delete(m.seen, k)
			}
		}
		if len(m.seen) >= m.max {
			return false, errors.New("auth: DPoP replay cache is full")
		}
	}
	m.seen[key] = exp
	return true, nil
}

// DPoPVerifier validates DPoP proofs (RFC 9449 §4.3): the "dpop+jwt" type,
// an asymmetric algorithm, a public JWK in the header that verifies the
// signature, htm and htu equal to the request's, iat within MaxAge, a jti
// not seen before (Replay), ath equal to the access token's hash, and,
// when NonceKey is set, a nonce this server issued.
type DPoPVerifier struct {
	// Algorithms accepted (default [DPoPAlgorithms]).
	Algorithms []string
	// MaxAge bounds the age of a proof (default DefaultDPoPMaxAge).
	MaxAge time.Duration
	// Leeway is the clock skew tolerated in the future (default
	// DefaultDPoPLeeway).
	Leeway time.Duration
	// Replay remembers jti values. Required.
	Replay ReplayCache
	// NonceKey, when set (at least 32 bytes), makes proofs carry a nonce
	// from [DPoPVerifier.Nonce]: stateless (a MAC of a time window), so
	// every instance with the same key accepts every instance's nonces.
	NonceKey []byte
	// NonceLifetime is how long a nonce stays valid (default
	// DefaultDPoPNonceLifetime).
	NonceLifetime time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// DPoPProof is a validated proof.
type DPoPProof struct {
	// JKT is the JWK SHA-256 thumbprint (RFC 7638) of the proof's key,
	// base64url: what a bound token's cnf.jkt names.
	JKT string
	// ID is the proof's jti.
	ID string
	// IssuedAt is the proof's iat.
	IssuedAt time.Time

	// replayKey and replayExp are what Record stores.
	replayKey string
	replayExp time.Time
}

type dpopHeader struct {
	Typ string          `json:"typ"`
	Alg string          `json:"alg"`
	JWK json.RawMessage `json:"jwk"`
}

type dpopClaims struct {
	JTI   *string      `json:"jti"`
	HTM   *string      `json:"htm"`
	HTU   *string      `json:"htu"`
	IAT   *json.Number `json:"iat"`
	ATH   *string      `json:"ath"`
	Nonce *string      `json:"nonce"`
}

func (v *DPoPVerifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// Verify validates proof for an HTTP request of method to htu (the URL
// without query and fragment), and, when accessToken is not empty, its
// ath, and records its jti: [DPoPVerifier.Check] then
// [DPoPVerifier.Record]. Errors wrap ErrDPoP, ErrDPoPReplay or
// ErrDPoPNonce.
func (v *DPoPVerifier) Verify(ctx context.Context, proof, method, htu, accessToken string) (*DPoPProof, error) {
	p, err := v.Check(ctx, proof, method, htu, accessToken)
	if err != nil {
		return nil, err
	}
	if err := v.Record(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// Record records the jti of a proof [DPoPVerifier.Check] accepted, and
// refuses a proof seen before (ErrDPoPReplay). A server that must not
// store anything for a request it refuses (a token endpoint, before the
// grant is checked) calls Check first and Record once the request is
// good.
func (v *DPoPVerifier) Record(ctx context.Context, p *DPoPProof) error {
	if p == nil || p.replayKey == "" {
		return fmt.Errorf("%w: Record needs a proof from Check", ErrDPoP)
	}
	fresh, err := v.Replay.Add(ctx, p.replayKey, p.replayExp)
	if err != nil {
		return fmt.Errorf("%w: replay cache: %v", ErrDPoP, err)
	}
	if !fresh {
		return ErrDPoPReplay
	}
	return nil
}

// Check validates proof as Verify does, without recording its jti: the
// proof is not yet protected against replay until [DPoPVerifier.Record].
func (v *DPoPVerifier) Check(ctx context.Context, proof, method, htu, accessToken string) (*DPoPProof, error) {
	if v == nil || v.Replay == nil {
		return nil, fmt.Errorf("%w: DPoPVerifier.Replay is required", ErrConfig)
	}
	if proof == "" || len(proof) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: the proof is empty or longer than %d bytes", ErrDPoP, MaxTokenBytes)
	}
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: not a compact JWS", ErrDPoP)
	}
	rawHeader, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, fmt.Errorf("%w: the header is not base64url", ErrDPoP)
	}
	var h dpopHeader
	if err := json.Unmarshal(rawHeader, &h); err != nil {
		return nil, fmt.Errorf("%w: the header is not a JSON object", ErrDPoP)
	}
	if h.Typ != "dpop+jwt" {
		return nil, fmt.Errorf("%w: typ is not dpop+jwt", ErrDPoP)
	}
	algs := v.Algorithms
	if len(algs) == 0 {
		algs = DPoPAlgorithms()
	}
	if !slices.Contains(algs, h.Alg) || strings.HasPrefix(h.Alg, "HS") || strings.EqualFold(h.Alg, "none") {
		return nil, fmt.Errorf("%w: alg %s is not accepted", ErrDPoP, quoteUntrusted(h.Alg))
	}
	var jwk jose.JSONWebKey
	if len(h.JWK) == 0 || jwk.UnmarshalJSON(h.JWK) != nil {
		return nil, fmt.Errorf("%w: the header has no valid jwk", ErrDPoP)
	}
	if !jwk.IsPublic() || !jwk.Valid() {
		return nil, fmt.Errorf("%w: the header's jwk is not a public key", ErrDPoP)
	}
	if err := keyFits(jwk, h.Alg); err != nil {
		return nil, fmt.Errorf("%w: the jwk cannot verify %s", ErrDPoP, h.Alg)
	}
	jws, err := jose.ParseSignedCompact(proof, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(h.Alg)})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: the proof does not parse as a signed JWS", ErrDPoP)
	}
	payload, err := jws.Verify(jwk.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: the signature does not verify with the header's jwk", ErrDPoP)
	}
	var c dpopClaims
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w: the claims are not a JSON object", ErrDPoP)
	}
	if c.JTI == nil || *c.JTI == "" || len(*c.JTI) > MaxDPoPJTIBytes {
		return nil, fmt.Errorf("%w: jti is missing or too long", ErrDPoP)
	}
	if c.HTM == nil || *c.HTM != method {
		return nil, fmt.Errorf("%w: htm is not %s", ErrDPoP, method)
	}
	if c.HTU == nil || !sameHTU(*c.HTU, htu) {
		return nil, fmt.Errorf("%w: htu is not this endpoint", ErrDPoP)
	}
	if c.IAT == nil {
		return nil, fmt.Errorf("%w: iat is missing", ErrDPoP)
	}
	f, err := c.IAT.Float64()
	if err != nil {
		return nil, fmt.Errorf("%w: iat is not a number", ErrDPoP)
	}
	iat := time.Unix(int64(f), 0)
	maxAge, leeway := v.MaxAge, v.Leeway
	if maxAge <= 0 {
		maxAge = DefaultDPoPMaxAge
	}
	if leeway <= 0 {
		leeway = DefaultDPoPLeeway
	}
	now := v.now()
	if iat.After(now.Add(leeway)) || iat.Before(now.Add(-maxAge)) {
		return nil, fmt.Errorf("%w: iat is outside the accepted window", ErrDPoP)
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		if c.ATH == nil || *c.ATH != base64.RawURLEncoding.EncodeToString(sum[:]) {
			return nil, fmt.Errorf("%w: ath does not match the access token", ErrDPoP)
		}
	}
	if len(v.NonceKey) > 0 {
		if c.Nonce == nil || !v.nonceValid(*c.Nonce, now) {
			return nil, ErrDPoPNonce
		}
	}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%w: thumbprint: %v", ErrDPoP, err)
	}
	jkt := base64.RawURLEncoding.EncodeToString(tp)
	key := sha256.Sum256([]byte(jkt + "\x00" + *c.JTI))
	return &DPoPProof{JKT: jkt, ID: *c.JTI, IssuedAt: iat,
		replayKey: "dpop:" + base64.RawURLEncoding.EncodeToString(key[:]), replayExp: now.Add(maxAge + leeway)}, nil
}

// sameHTU compares htu values ignoring query, fragment and the case of
// scheme and host (RFC 9449 §4.3 item 9).
func sameHTU(got, want string) bool {
	g, err1 := url.Parse(got)
	w, err2 := url.Parse(want)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(g.Scheme, w.Scheme) && strings.EqualFold(g.Host, w.Host) && g.EscapedPath() == w.EscapedPath()
}

// Nonce returns a fresh server nonce for the DPoP-Nonce header ("" when
// NonceKey is not set).
func (v *DPoPVerifier) Nonce() string {
	if len(v.NonceKey) == 0 {
		return ""
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v.now().Unix()))
	m := hmac.New(sha256.New, v.NonceKey)
	m.Write(b[:])
	return base64.RawURLEncoding.EncodeToString(append(b[:], m.Sum(nil)[:16]...))
}

func (v *DPoPVerifier) nonceValid(n string, now time.Time) bool {
	raw, err := base64.RawURLEncoding.DecodeString(n)
	if err != nil || len(raw) != 24 {
		return false
	}
	m := hmac.New(sha256.New, v.NonceKey)
	m.Write(raw[:8])
	if !hmac.Equal(m.Sum(nil)[:16], raw[8:]) {
		return false
	}
	life := v.NonceLifetime
	if life <= 0 {
		life = DefaultDPoPNonceLifetime
	}
	t := time.Unix(int64(binary.BigEndian.Uint64(raw[:8])), 0)
	return !t.After(now.Add(DefaultDPoPLeeway)) && now.Sub(t) <= life
}
