package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftmcp/weft"
)

// Introspection defaults and bounds.
const (
	// DefaultIntrospectionCacheTTL is how long an introspection answer is
	// reused by default (never past the token's exp).
	DefaultIntrospectionCacheTTL = 30 * time.Second
	// MaxIntrospectionCacheTTL bounds Introspector.CacheTTL: a revoked
	// token stays usable for at most this long.
	MaxIntrospectionCacheTTL = 10 * time.Minute
	// DefaultIntrospectionCacheEntries bounds the cache by default.
	DefaultIntrospectionCacheEntries = 10_000
	// MaxIntrospectionResponseBytes bounds the endpoint's answer.
	MaxIntrospectionResponseBytes = 64 << 10
	// DefaultIntrospectionTimeout bounds one call to the endpoint when the
	// Introspector's HTTPClient has no timeout of its own.
	DefaultIntrospectionTimeout = 10 * time.Second
)

// Introspector validates opaque access tokens by asking the authorization
// server's token introspection endpoint (RFC 7662), for authorization
// servers that do not issue JWTs or when revocation must take effect
// quickly. It applies the checks [JWTValidator] applies to a JWT's claims
// to the endpoint's answer: active, issuer, audience (RFC 8707), lifetime,
// subject, no sender constraint, and the scopes of each operation.
//
// Answers are cached for CacheTTL, keyed by the token's SHA-256 (the token
// itself is never stored), so that a burst of requests with one token asks
// the endpoint once and invalid tokens cannot be used to flood it; a
// revoked token keeps working until its cached answer expires.
//
// The exported fields are configuration: set them before the first call and
// do not change them afterwards. It is safe for concurrent use.
type Introspector struct {
	// Endpoint is the introspection endpoint: an https URL, or http on a
	// loopback host. Required.
	Endpoint string
	// ClientID and ClientSecret authenticate this resource server to the
	// endpoint with HTTP Basic authentication (RFC 7662 §2.1, RFC 6749
	// §2.3.1). Both empty: no authentication (an endpoint that allows it).
	ClientID     string
	ClientSecret string
	// Issuer is the authorization server's issuer identifier. Required: an
	// answer naming another "iss" is refused, and it namespaces partitions
	// as for JWTValidator ("<issuer>|<PartitionClaim value>").
	Issuer string
	// Audience is this server's canonical URI, which an active token's
	// "aud" must contain. Default: the Resource of the metadata given to
	// Admission. An answer without "aud", "exp" or "sub" is refused, as is
	// one with "cnf" (a sender-constrained token).
	Audience string
	// RequiredScopes, ScopeFunc and ScopeImplies work as for JWTValidator.
	RequiredScopes []string
	ScopeFunc      func(method string, r *weft.AdmissionRequest) []string
	ScopeImplies   func(granted, needed string) bool
	// PartitionClaim names the string member of the answer that partitions
	// state, tasks and subscriptions. Default "sub".
	PartitionClaim string
	// PrincipalClaim and ScopesClaim work as for JWTValidator: the
	// members of the answer that name the principal (default "sub") and
	// hold the granted scopes (default "scope", else "scp").
	PrincipalClaim string
	ScopesClaim    string
	// Leeway is the clock skew tolerated on exp, nbf and iat. Default
	// DefaultLeeway; at most MaxLeeway.
	Leeway time.Duration
	// CacheTTL is how long an answer (active or not) is reused; never
	// beyond the token's exp. Default DefaultIntrospectionCacheTTL, at most
	// MaxIntrospectionCacheTTL; negative disables caching.
	CacheTTL time.Duration
	// CacheEntries bounds the cache. Default
	// DefaultIntrospectionCacheEntries.
	CacheEntries int
	// HTTPClient sends the requests. Default: a client with
	// DefaultIntrospectionTimeout that follows no redirects.
	HTTPClient *http.Client
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger, when set, receives one Info record per rejected token with the
	// reason (never the token).
	Logger *slog.Logger

	once  sync.Once
	cfg   *introspectConfig
	cerr  error
	mu    sync.Mutex
	cache map[[sha256.Size]byte]introspected
}

// introspected is a cached answer: claims of an active token, or the error
// of an inactive or refused one.
type introspected struct {
	claims *Claims
	err    error
	until  time.Time
}

type introspectConfig struct {
	jwt      *jwtConfig // the claim checks (issuer, audience, times, subject) and scopes
	endpoint string
	client   *http.Client
	ttl      time.Duration
	entries  int
}

// CheckConfig reports the first configuration problem of v used with meta
// (which may be nil when Audience is set), or nil.
func (v *Introspector) CheckConfig(meta *ResourceMetadata) error {
	_, err := v.compile(meta)
	return err
}

func (v *Introspector) compile(meta *ResourceMetadata) (*introspectConfig, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: nil Introspector", ErrConfig)
	}
	if err := checkFetchURL(v.Endpoint); err != nil {
		return nil, fmt.Errorf("%w: Introspector.Endpoint: %v", ErrConfig, err)
	}
	if (v.ClientID == "") != (v.ClientSecret == "") {
		return nil, fmt.Errorf("%w: Introspector.ClientID and ClientSecret are set together or not at all", ErrConfig)
	}
	// The claim checks are JWTValidator's; compile them through it (JWKS
	// is not used).
	jv := &JWTValidator{Issuer: v.Issuer, Audience: v.Audience, JWKS: StaticKeys{}, Leeway: v.Leeway,
		RequiredScopes: v.RequiredScopes, ScopeFunc: v.ScopeFunc, ScopeImplies: v.ScopeImplies,
		PartitionClaim: v.PartitionClaim, PrincipalClaim: v.PrincipalClaim, ScopesClaim: v.ScopesClaim, Now: v.Now, Logger: v.Logger}
	jc, err := jv.compile(meta)
	if err != nil {
		return nil, &renamedError{msg: strings.ReplaceAll(err.Error(), "JWTValidator.", "Introspector."), err: err}
	}
	c := &introspectConfig{jwt: jc, endpoint: v.Endpoint, client: v.HTTPClient,
		ttl: v.CacheTTL, entries: v.CacheEntries}
	switch {
	case c.ttl == 0:
		c.ttl = DefaultIntrospectionCacheTTL
	case c.ttl > MaxIntrospectionCacheTTL:
		return nil, fmt.Errorf("%w: Introspector.CacheTTL %s exceeds %s", ErrConfig, c.ttl, MaxIntrospectionCacheTTL)
	}
	switch {
	case c.entries == 0:
		c.entries = DefaultIntrospectionCacheEntries
	case c.entries < 0:
		return nil, fmt.Errorf("%w: Introspector.CacheEntries %d is negative", ErrConfig, c.entries)
	}
	if c.client == nil {
		c.client = &http.Client{Timeout: DefaultIntrospectionTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return c, nil
}

// config compiles v once (without metadata: Audience must be set) for
// Introspect.
func (v *Introspector) config() (*introspectConfig, error) {
	v.once.Do(func() { v.cfg, v.cerr = v.compile(nil) })
	return v.cfg, v.cerr
}

// Introspect asks the endpoint about token (or reuses a cached answer) and
// returns the claims of an active token that passes the checks. It does not
// check the scopes an operation needs (see [Introspector.Admission]), and
// it needs Audience set (Admission can take it from the metadata).
// Errors wrap one of the package's Err values (ErrInactive,
// ErrIntrospection, ErrAudience...) and never contain the token.
func (v *Introspector) Introspect(ctx context.Context, token string) (*Claims, error) {
	c, err := v.config()
	if err != nil {
		return nil, err
	}
	return v.introspect(ctx, c, token)
}

// Admission returns a [weft.Admission] that admits requests whose bearer
// token the endpoint reports active and that pass the checks, with the
// challenges and statuses of [JWTValidator.Admission] (an endpoint failure
// is a 503). meta is the server's protected resource metadata; it also
// provides the default Audience.
func (v *Introspector) Admission(meta *ResourceMetadata) weft.Admission {
	meta = meta.snapshot()
	c, cerr := v.compile(meta)
	if cerr != nil {
		var log *slog.Logger
		if v != nil {
			log = v.Logger
		}
		return failClosed(log, "token introspection", cerr)
	}
	return tokenAdmission(meta, &c.jwt.scopePolicy, func(ctx context.Context, token string) (*Claims, error) {
		return v.introspect(ctx, c, token)
	}, c.jwt.principal, c.jwt.partition)
}

func (v *Introspector) introspect(ctx context.Context, c *introspectConfig, token string) (*Claims, error) {
	if token == "" {
		return nil, ErrNoToken
	}
	key := sha256.Sum256([]byte(token))
	now := c.jwt.now()
	if c.ttl > 0 {
		v.mu.Lock()
		e, ok := v.cache[key]
		v.mu.Unlock()
		if ok && now.Before(e.until) {
			return e.claims.share(), e.err
		}
	}
	claims, err := v.ask(ctx, c, token)
	if err != nil && !isTokenVerdict(err) {
		return nil, err // the endpoint failed: nothing to remember
	}
	if err == nil {
		err = c.check(claims)
		if err != nil {
			claims = nil
		}
	}
	if c.ttl > 0 {
		until := now.Add(c.ttl)
		if claims != nil && claims.Expiry.Before(until) {
			until = claims.Expiry
		}
		v.remember(c, key, introspected{claims: claims, err: err, until: until}, now)
	}
	return claims.share(), err
}

// share returns a copy of cached claims for one request: its slices are its
// own, and Raw (read-only, like all claims) is shared.
func (c *Claims) share() *Claims {
	if c == nil {
		return nil
	}
	out := *c
	out.Audience = slices.Clone(c.Audience)
	out.Scopes = slices.Clone(c.Scopes)
	return &out
}

// isTokenVerdict reports whether err is a verdict on the token (cacheable),
// not a failure to get one.
func isTokenVerdict(err error) bool {
	return !errors.Is(err, ErrIntrospection)
}

// remember caches an answer. A full cache first drops its expired entries
// and then arbitrary ones down to 90% of the bound, so that the sweep runs
// once per many insertions even under a flood of distinct tokens.
func (v *Introspector) remember(c *introspectConfig, key [sha256.Size]byte, e introspected, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.cache == nil {
		v.cache = map[[sha256.Size]byte]introspected{}
	}
	if len(v.cache) >= c.entries {
		for k, old := range v.cache {
			if !now.Before(old.until) {
				delete(v.cache, k)
			}
		}
		keep := c.entries * 9 / 10
		for k := range v.cache {
			if len(v.cache) <= keep {
				break
			}
			delete(v.cache, k)
		}
	}
	if c.entries > 0 {
		v.cache[key] = e
	}
}

// ask posts token to the endpoint and decodes the answer: the claims of an
// active token, ErrInactive, or ErrIntrospection when there is no usable
// answer.
func (v *Introspector) ask(ctx context.Context, c *introspectConfig, token string) (*Claims, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIntrospection, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if v.ClientID != "" {
		req.SetBasicAuth(url.QueryEscape(v.ClientID), url.QueryEscape(v.ClientSecret))
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrIntrospection, redactURLError(err, token))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxIntrospectionResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading the answer: %v", ErrIntrospection, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: the endpoint answered HTTP %d", ErrIntrospection, resp.StatusCode)
	}
	if len(body) > MaxIntrospectionResponseBytes {
		return nil, fmt.Errorf("%w: the answer exceeds %d bytes", ErrIntrospection, MaxIntrospectionResponseBytes)
	}
	return decodeIntrospection(body)
}

// decodeIntrospection reads an endpoint's answer: the claims of an active
// token, ErrInactive, or ErrIntrospection for an answer that is not an
// object with a boolean "active" and well-typed claims.
func decodeIntrospection(body []byte) (*Claims, error) {
	claims, err := parseClaims(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIntrospection, err)
	}
	var active bool
	if raw, ok := claims.Raw["active"]; !ok || json.Unmarshal(raw, &active) != nil {
		return nil, fmt.Errorf("%w: the answer has no boolean \"active\"", ErrIntrospection)
	}
	if !active {
		return nil, ErrInactive
	}
	return claims, nil
}

// check applies the JWT claim checks to an active token's answer. An
// answer without "iss" is taken to be from the configured issuer (RFC 7662
// makes it optional; the endpoint is the issuer's own).
func (c *introspectConfig) check(cl *Claims) error {
	if _, ok := cl.Raw["iss"]; !ok {
		cl.Issuer = c.jwt.issuer
		raw := make(map[string]json.RawMessage, len(cl.Raw)+1)
		for k, v := range cl.Raw {
			raw[k] = v
		}
		b, _ := json.Marshal(c.jwt.issuer)
		raw["iss"] = b
		cl.Raw = raw
	}
	return c.jwt.checkClaims(cl)
}

// redactURLError describes a failed request without the request body (the
// token is only in the body, but a url.Error could quote the URL; the token
// is removed wherever it appears).
func redactURLError(err error, token string) string {
	s := err.Error()
	if token != "" {
		s = strings.ReplaceAll(s, token, "[token]")
	}
	return s
}

// renamedError is a configuration error of the JWTValidator the
// Introspector compiles its checks through, named for the Introspector.
type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }
