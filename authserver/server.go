package authserver

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/auth"
)

// Defaults and limits of the authorization server. Every one a client can
// fill is in docs/limits.md.
const (
	// DefaultAccessTokenTTL is the lifetime of an access token.
	DefaultAccessTokenTTL = 5 * time.Minute
	// DefaultRefreshTokenTTL is the lifetime of a refresh token (each
	// rotation starts a new one; the grant itself ends with the last).
	DefaultRefreshTokenTTL = 30 * 24 * time.Hour
	// DefaultCodeTTL is the lifetime of an authorization code.
	DefaultCodeTTL = time.Minute
	// DefaultLoginTTL bounds the time from the authorization request to
	// the user's consent (the upstream login included).
	DefaultLoginTTL = 10 * time.Minute
	// DefaultConsentTTL is how long a remembered consent lasts.
	DefaultConsentTTL = 90 * 24 * time.Hour
	// MaxFormBytes bounds the body of a token, revocation or consent
	// request.
	MaxFormBytes = 16 << 10
	// MaxParamBytes bounds one parameter of an authorization or token
	// request (state, scope, a redirect URI...).
	MaxParamBytes = 2048
	// MaxScopes bounds the scopes of one request.
	MaxScopes = 64
	// MaxRegistrationBytes bounds a dynamic client registration request.
	MaxRegistrationBytes = 16 << 10
	// MaxRedirectURIs bounds the redirect URIs of one client.
	MaxRedirectURIs = 16
	// DefaultMaxDynamicClients bounds the clients dynamic registration
	// keeps; the ones expiring first are dropped beyond it.
	DefaultMaxDynamicClients = 10000
	// DefaultDynamicClientTTL is how long a dynamically registered client
	// lives.
	DefaultDynamicClientTTL = 30 * 24 * time.Hour
	// DefaultMaxPendingAuthorizations bounds the authorization requests
	// waiting for their sign-in and consent (each /authorize stores one);
	// beyond it the oldest are dropped. Expired records are purged at the
	// same time, every purgeEvery authorization requests.
	DefaultMaxPendingAuthorizations = 100000
	purgeEvery                      = 64
	// DefaultAuthorizeRate is how many authorization requests one client
	// address may start per minute on one instance (and at once); beyond
	// it /authorize answers 429.
	DefaultAuthorizeRate = 30
	// maxRateAddresses bounds the addresses the authorization rate is
	// tracked for on one instance.
	maxRateAddresses = 65536
)

// ErrConfig reports an invalid configuration.
var ErrConfig = errors.New("authserver: invalid configuration")

// Config configures a [Server]. Fields are read once by [New].
type Config struct {
	// Issuer is this server's issuer identifier (RFC 8414): an https URL
	// without query or fragment, or http on a loopback host when
	// AllowInsecureIssuer is set. Its endpoints live under its path.
	Issuer string
	// AllowInsecureIssuer allows an http issuer on a loopback host (for
	// development and tests).
	AllowInsecureIssuer bool
	// Resources are the canonical URIs (RFC 8707) of the MCP servers this
	// server issues tokens for. A token is bound to exactly one. Required.
	Resources []string
	// Scopes are the scopes clients may ask for (scopes_supported).
	Scopes []string
	// DefaultScopes are granted when a request names none.
	DefaultScopes []string
	// Upstream is the identity provider users sign in with. Required.
	Upstream Upstream
	// Identity maps the upstream user's claims to the tokens' claims.
	Identity IdentityMapping
	// Store keeps codes, grants, refresh tokens, consents and the client
	// metadata cache. Required: [OpenSQLite] or [OpenPostgres].
	Store Store
	// SigningKeys are private keys (ES256, EdDSA or RS256 JWKs with a
	// "kid"); the first signs new tokens, all are published, so a new key
	// is rotated in by putting it first and an old one out by removing it
	// once its tokens have expired. Every instance of a fleet needs the
	// same keys. When empty, New generates one ES256 key (one instance
	// only; tokens die with the process).
	SigningKeys []jose.JSONWebKey
	// SecretKey (32 bytes) encrypts the upstream tokens (AES-256-GCM) and
	// keys the CSRF and browser-binding MACs. Every instance of a fleet
	// needs the same key. When empty, New generates one (one instance
	// only).
	SecretKey []byte
	// Clients are pre-registered clients.
	Clients []Client
	// CIMD configures client registration by Client ID Metadata Documents.
	CIMD CIMDConfig
	// DynamicRegistration enables RFC 7591 dynamic client registration
	// (deprecated by MCP; off by default).
	DynamicRegistration bool
	// MaxDynamicClients bounds the dynamically registered clients
	// (default DefaultMaxDynamicClients).
	MaxDynamicClients int
	// MaxPendingAuthorizations bounds the authorization requests waiting
	// for sign-in and consent (default DefaultMaxPendingAuthorizations).
	MaxPendingAuthorizations int
	// AuthorizeRate bounds the authorization requests one client address
	// (an IPv6 client by its /64) may start per minute on each instance
	// (default DefaultAuthorizeRate; negative: no bound), so that no one
	// can flood out the sign-ins of others: to fill
	// MaxPendingAuthorizations within LoginTTL takes thousands of
	// addresses.
	AuthorizeRate int
	// ClientAddress returns the address of the browser that sent r
	// (default: the host of r.RemoteAddr). Behind a reverse proxy, return
	// the client address it reports (its X-Forwarded-For entry),
	// otherwise every browser counts as the proxy.
	ClientAddress func(r *http.Request) string
	// IssueRefreshTokens issues a refresh token with every access token
	// when true; otherwise only when the client asks for offline_access.
	IssueRefreshTokens bool
	// AccessTokenTTL, RefreshTokenTTL, CodeTTL, LoginTTL and ConsentTTL
	// default to the Default* constants.
	AccessTokenTTL, RefreshTokenTTL, CodeTTL, LoginTTL, ConsentTTL time.Duration
	// IDJAG enables the identity assertion authorization grant (ext-auth
	// enterprise-managed authorization) for the listed enterprise IdPs.
	IDJAG []TrustedIdP
	// RequireDPoPNonce makes DPoP proofs at the token endpoint carry a
	// server nonce (RFC 9449 §8), derived from SecretKey so that every
	// instance accepts every instance's nonces.
	RequireDPoPNonce bool
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives one record per refused request and per security
	// event (code replay, refresh reuse). Default: no logging.
	Logger *slog.Logger
}

// IdentityMapping says how an upstream user becomes the subject and claims
// of the tokens this server issues.
type IdentityMapping struct {
	// SubjectClaim is the upstream claim (ID token, then userinfo) that
	// becomes "sub" (default "sub").
	SubjectClaim string
	// Claims are upstream claims copied into access tokens under the same
	// name (strings, numbers, booleans or arrays of them), for example
	// "email" or a tenant claim that auth.JWTValidator.PartitionClaim names.
	Claims []string
	// AllowedScopes, when set, returns the scopes this user may be granted
	// from the requested ones (for example by group membership).
	AllowedScopes func(upstreamClaims map[string]any, requested []string) []string
}

// Server is an OAuth 2.1 authorization server for MCP servers, in front of
// an upstream OpenID Connect provider. Mount [Server.Handler].
type Server struct {
	cfg      Config
	issuer   *url.URL
	prefix   string // the issuer's path, without a trailing slash
	store    Store
	signer   jose.Signer
	signKID  string
	signAlg  jose.SignatureAlgorithm
	public   jose.JSONWebKeySet
	aead     cipher.AEAD
	macKey   []byte
	upstream *upstream
	cimd     *cimdFetcher
	clients  map[string]*Client
	now      func() time.Time
	log      *slog.Logger
	idjag    *idjag
	dpop     *auth.DPoPVerifier
	requests atomic.Uint64 // authorization requests, for the periodic purge
	// authorizeRate bounds each address's authorization requests (nil:
	// no bound).
	authorizeRate *weft.TokenBucket
}

// New checks cfg and returns a server. It does not contact the upstream
// provider: that happens on the first login.
func New(cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, now: cfg.Now, log: cfg.Logger, clients: map[string]*Client{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	u, err := url.Parse(cfg.Issuer)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%w: Issuer %q must be an absolute URL without query, fragment or user info", ErrConfig, cfg.Issuer)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && cfg.AllowInsecureIssuer && isLoopbackHost(u.Hostname()):
	default:
		return nil, fmt.Errorf("%w: Issuer %q must be https (http only on loopback with AllowInsecureIssuer)", ErrConfig, cfg.Issuer)
	}
	s.issuer = u
	s.prefix = strings.TrimSuffix(u.Path, "/")
	if len(cfg.Resources) == 0 {
		return nil, fmt.Errorf("%w: Resources is empty", ErrConfig)
	}
	for _, r := range cfg.Resources {
		ru, err := url.Parse(r)
		if err != nil || ru.Host == "" || ru.Fragment != "" || (ru.Scheme != "https" && ru.Scheme != "http") {
			return nil, fmt.Errorf("%w: resource %q is not an absolute http(s) URI without fragment", ErrConfig, r)
		}
	}
	for _, sc := range append(slices.Clone(cfg.Scopes), cfg.DefaultScopes...) {
		if !isScopeToken(sc) {
			return nil, fmt.Errorf("%w: scope %q is not an RFC 6749 scope-token", ErrConfig, sc)
		}
	}
	for _, sc := range cfg.DefaultScopes {
		if !slices.Contains(cfg.Scopes, sc) {
			return nil, fmt.Errorf("%w: default scope %q is not in Scopes", ErrConfig, sc)
		}
	}
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: Store is required", ErrConfig)
	}
	s.store = cfg.Store
	if err := s.setKeys(cfg.SigningKeys); err != nil {
		return nil, err
	}
	secret := cfg.SecretKey
	if len(secret) == 0 {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret)
	}
	if len(secret) != 32 {
		return nil, fmt.Errorf("%w: SecretKey must be 32 bytes, not %d", ErrConfig, len(secret))
	}
	encKey := s.derive(secret, "upstream-token-encryption")
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s.aead, err = cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s.macKey = s.derive(secret, "mac")
	s.dpop = &auth.DPoPVerifier{Replay: ReplayCache(s.store), Now: s.now}
	if cfg.RequireDPoPNonce {
		s.dpop.NonceKey = s.derive(secret, "dpop-nonce")
	}
	for i := range cfg.Clients {
		c := cfg.Clients[i]
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("%w: client %d: %w", ErrConfig, i, err)
		}
		if isURLClientID(c.ID) {
			return nil, fmt.Errorf("%w: pre-registered client %q must not look like a metadata document URL", ErrConfig, c.ID)
		}
		c.kind = "static"
		s.clients[c.ID] = &c
	}
	if s.upstream, err = newUpstream(cfg.Upstream, s.redirectURL()); err != nil {
		return nil, err
	}
	if s.cimd, err = newCIMDFetcher(cfg.CIMD, s.store, s.now); err != nil {
		return nil, err
	}
	if s.idjag, err = newIDJAG(cfg.IDJAG); err != nil {
		return nil, err
	}
	if s.cfg.MaxPendingAuthorizations <= 0 {
		s.cfg.MaxPendingAuthorizations = DefaultMaxPendingAuthorizations
	}
	if s.cfg.AuthorizeRate == 0 {
		s.cfg.AuthorizeRate = DefaultAuthorizeRate
	}
	if s.cfg.AuthorizeRate > 0 {
		s.authorizeRate = &weft.TokenBucket{Rate: float64(s.cfg.AuthorizeRate) / 60, Burst: s.cfg.AuthorizeRate, MaxKeys: maxRateAddresses, Now: s.now}
	}
	if s.cfg.MaxDynamicClients <= 0 {
		s.cfg.MaxDynamicClients = DefaultMaxDynamicClients
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&s.cfg.AccessTokenTTL, DefaultAccessTokenTTL)
	def(&s.cfg.RefreshTokenTTL, DefaultRefreshTokenTTL)
	def(&s.cfg.CodeTTL, DefaultCodeTTL)
	def(&s.cfg.LoginTTL, DefaultLoginTTL)
	def(&s.cfg.ConsentTTL, DefaultConsentTTL)
	if s.cfg.Identity.SubjectClaim == "" {
		s.cfg.Identity.SubjectClaim = "sub"
	}
	return s, nil
}

// derive is HMAC-SHA256(secret, label): independent keys from one secret.
func (s *Server) derive(secret []byte, label string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("weft-authserver/" + label))
	return m.Sum(nil)
}

// mac returns a base64url HMAC of the parts under the server's MAC key.
func (s *Server) mac(parts ...string) string {
	m := hmac.New(sha256.New, s.macKey)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// seal encrypts plaintext with AES-256-GCM, binding it to aad.
func (s *Server) seal(plaintext []byte, aad string) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, plaintext, []byte(aad))
}

// open decrypts what seal encrypted with the same aad.
func (s *Server) open(sealed []byte, aad string) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("authserver: sealed data too short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], []byte(aad))
}

// setKeys installs the signing keys.
func (s *Server) setKeys(keys []jose.JSONWebKey) error {
	if len(keys) == 0 {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("authserver: generate signing key: %w", err)
		}
		keys = []jose.JSONWebKey{{Key: k, Algorithm: string(jose.ES256), Use: "sig"}}
		pub := keys[0].Public()
		kid, _ := pub.Thumbprint(crypto.SHA256)
		keys[0].KeyID = base64.RawURLEncoding.EncodeToString(kid)
	}
	for i, k := range keys {
		if k.IsPublic() || !k.Valid() {
			return fmt.Errorf("%w: signing key %d is not a valid private key", ErrConfig, i)
		}
		if k.KeyID == "" {
			return fmt.Errorf("%w: signing key %d has no kid", ErrConfig, i)
		}
		alg := jose.SignatureAlgorithm(k.Algorithm)
		switch alg {
		case jose.ES256, jose.EdDSA, jose.RS256:
		case "":
			return fmt.Errorf("%w: signing key %d has no alg (ES256, EdDSA or RS256)", ErrConfig, i)
		default:
			return fmt.Errorf("%w: signing key %d has alg %q; use ES256, EdDSA or RS256", ErrConfig, i, k.Algorithm)
		}
		pub := k.Public()
		pub.Use = "sig"
		pub.Algorithm = k.Algorithm
		s.public.Keys = append(s.public.Keys, pub)
	}
	s.signKID = keys[0].KeyID
	s.signAlg = jose.SignatureAlgorithm(keys[0].Algorithm)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: s.signAlg, Key: keys[0]},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		return fmt.Errorf("%w: signing key: %w", ErrConfig, err)
	}
	s.signer = signer
	return nil
}

// Issuer returns the issuer identifier.
func (s *Server) Issuer() string { return s.cfg.Issuer }

// JWKSURL returns the URL of the server's public key set, for
// auth.JWKSURL.
func (s *Server) JWKSURL() string { return s.endpoint("/jwks.json") }

func (s *Server) endpoint(p string) string {
	u := *s.issuer
	u.Path = s.prefix + p
	return u.String()
}

func (s *Server) redirectURL() string { return s.endpoint("/callback") }

// Handler returns the server's HTTP handler: the endpoints under the
// issuer's path and the metadata at its well-known locations. Mount it at
// the root of the issuer's host.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	meta := http.HandlerFunc(s.serveMetadata)
	// RFC 8414 §3 inserts the well-known segment before the issuer's
	// path; OpenID Connect Discovery appends it. Serve both, and for an
	// issuer with a path, the appended form of RFC 8414 as some clients
	// try it.
	mux.Handle("GET /.well-known/oauth-authorization-server"+s.prefix, meta)
	mux.Handle("GET "+s.prefix+"/.well-known/openid-configuration", meta)
	if s.prefix != "" {
		mux.Handle("GET /.well-known/openid-configuration"+s.prefix, meta)
		mux.Handle("GET "+s.prefix+"/.well-known/oauth-authorization-server", meta)
	}
	mux.HandleFunc("GET "+s.prefix+"/jwks.json", s.serveJWKS)
	mux.HandleFunc("GET "+s.prefix+"/authorize", s.serveAuthorize)
	mux.HandleFunc("GET "+s.prefix+"/callback", s.serveCallback)
	mux.HandleFunc("POST "+s.prefix+"/consent", s.serveConsent)
	mux.HandleFunc("POST "+s.prefix+"/token", s.serveToken)
	mux.HandleFunc("POST "+s.prefix+"/revoke", s.serveRevoke)
	if s.cfg.DynamicRegistration {
		mux.HandleFunc("POST "+s.prefix+"/register", s.serveRegister)
	}
	return securityHeaders(mux)
}

// securityHeaders adds the headers every answer carries.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.ServeHTTP(w, r)
	})
}

// Metadata returns the RFC 8414 authorization server metadata.
func (s *Server) Metadata() map[string]any {
	m := map[string]any{
		"issuer":                                         s.cfg.Issuer,
		"authorization_endpoint":                         s.endpoint("/authorize"),
		"token_endpoint":                                 s.endpoint("/token"),
		"revocation_endpoint":                            s.endpoint("/revoke"),
		"jwks_uri":                                       s.JWKSURL(),
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          s.grantTypes(),
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_basic", "client_secret_post"},
		"revocation_endpoint_auth_methods_supported":     []string{"none", "client_secret_basic", "client_secret_post"},
		"scopes_supported":                               s.scopesSupported(),
		"authorization_response_iss_parameter_supported": true,
		"client_id_metadata_document_supported":          !s.cfg.CIMD.Disabled,
		"dpop_signing_alg_values_supported":              auth.DPoPAlgorithms(),
		"subject_types_supported":                        []string{"public"},
		"id_token_signing_alg_values_supported":          []string{string(s.signAlg)},
		"resource_indicators_supported":                  true,
	}
	if s.cfg.DynamicRegistration {
		m["registration_endpoint"] = s.endpoint("/register")
	}
	return m
}

// scopesSupported is Config.Scopes and offline_access, which asks for a
// refresh token: clients ask only for listed scopes (the MCP
// authorization spec's scope selection), so a server that issues refresh
// tokens on request must list it or no client that follows the spec gets
// one.
func (s *Server) scopesSupported() []string {
	if slices.Contains(s.cfg.Scopes, "offline_access") {
		return s.cfg.Scopes
	}
	return append(slices.Clone(s.cfg.Scopes), "offline_access")
}

func (s *Server) grantTypes() []string {
	g := []string{"authorization_code", "refresh_token"}
	if s.idjag != nil {
		g = append(g, grantJWTBearer)
	}
	return g
}

func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, s.Metadata())
}

func (s *Server) serveJWKS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Content-Type", "application/jwk-set+json")
	_ = json.NewEncoder(w).Encode(s.public)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// randomToken returns 32 random bytes, base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// digest returns the hex SHA-256 of a secret: refresh tokens and codes are
// stored under it, never in the clear.
func digest(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

func isLoopbackHost(h string) bool {
	return h == "localhost" || h == "127.0.0.1" || h == "::1" || strings.HasPrefix(h, "127.")
}

// isScopeToken reports whether s is an RFC 6749 scope-token.
func isScopeToken(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// ctxNoCancel keeps values but not cancellation: a security revocation
// must not be skipped because the client hung up.
func ctxNoCancel(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// PublicKeys returns the public signing keys, for an auth.JWTValidator in
// the same process (others read [Server.JWKSURL]).
func (s *Server) PublicKeys() auth.StaticKeys { return auth.StaticKeys(s.public.Keys) }
