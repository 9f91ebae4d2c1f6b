package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

const (
	testIssuer   = "https://auth.example.com"
	testResource = "https://mcp.example.com/mcp"
)

// testKey is a signing key with its public JWK.
type testKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv any
	pub  jose.JSONWebKey
}

func newRSAKey(t testing.TB, kid string) *testKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &testKey{kid: kid, alg: jose.RS256, priv: k,
		pub: jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Use: "sig"}}
}

func newECKey(t testing.TB, kid string) *testKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &testKey{kid: kid, alg: jose.ES256, priv: k,
		pub: jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Use: "sig"}}
}

func newEdKey(t testing.TB, kid string) *testKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &testKey{kid: kid, alg: jose.EdDSA, priv: priv,
		pub: jose.JSONWebKey{Key: pub, KeyID: kid, Use: "sig"}}
}

// signOpts tweak a token's header.
type signOpts struct {
	typ   string // default "at+jwt"; "-" for none
	kid   *string
	alg   jose.SignatureAlgorithm // default the key's
	extra map[jose.HeaderKey]any
}

// sign signs claims with k as a compact JWS.
func sign(t testing.TB, k *testKey, claims any, o signOpts) string {
	t.Helper()
	alg := k.alg
	if o.alg != "" {
		alg = o.alg
	}
	kid := k.kid
	if o.kid != nil {
		kid = *o.kid
	}
	so := &jose.SignerOptions{}
	switch o.typ {
	case "":
		so.WithType("at+jwt")
	case "-":
	default:
		so.WithType(jose.ContentType(o.typ))
	}
	for hk, v := range o.extra {
		so.WithHeader(hk, v)
	}
	var key any = k.priv
	if kid != "" {
		key = jose.JSONWebKey{Key: k.priv, KeyID: kid}
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, so)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// claimsAt returns valid claims for a token issued at now.
func claimsAt(now time.Time) map[string]any {
	return map[string]any{
		"iss":       testIssuer,
		"sub":       "alice",
		"aud":       testResource,
		"exp":       now.Add(5 * time.Minute).Unix(),
		"iat":       now.Unix(),
		"nbf":       now.Unix(),
		"jti":       "t-1",
		"client_id": "client-1",
		"scope":     "mcp:read mcp:write",
		"tenant":    "acme",
	}
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// rawToken builds an unsigned compact token from a header and payload and a
// signature string.
func rawToken(header, payload, sig string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc([]byte(payload)) + "." + sig
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_800_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// jwksServer serves a JWKS on loopback and counts fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []jose.JSONWebKey
	status  int
	body    []byte // when set, served instead of keys
	fetches atomic.Int32
}

func newJWKSServer(t testing.TB, keys ...*testKey) *jwksServer {
	t.Helper()
	s := &jwksServer{status: http.StatusOK}
	s.setKeys(keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		status, body := s.status, s.body
		doc := jose.JSONWebKeySet{Keys: s.keys}
		s.mu.Unlock()
		if body == nil {
			var err error
			if body, err = json.Marshal(doc); err != nil {
				t.Error(err)
			}
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) setKeys(keys ...*testKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = nil
	for _, k := range keys {
		s.keys = append(s.keys, k.pub)
	}
}

func (s *jwksServer) setStatus(code int) {
	s.mu.Lock()
	s.status = code
	s.mu.Unlock()
}

// logBuffer captures slog output safely across goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// assertNoSecret fails if any secret appears in text.
func assertNoSecret(t testing.TB, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s contains a bearer token", where)
		}
		// A token's signature part is secret material too.
		if i := strings.LastIndexByte(s, '.'); i >= 0 && len(s)-i > 20 && strings.Contains(text, s[i+1:]) {
			t.Errorf("%s contains a token signature", where)
		}
	}
}
