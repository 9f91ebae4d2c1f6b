package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft"
)

// introspectionServer is an RFC 7662 endpoint on loopback: it checks the
// request like an authorization server would and answers from answers
// (token -> response object), counting the calls per token.
type introspectionServer struct {
	*httptest.Server
	mu      sync.Mutex
	answers map[string]map[string]any
	calls   map[string]int
	status  int // non-zero: answer this status instead
}

func newIntrospectionServer(t *testing.T) *introspectionServer {
	s := &introspectionServer{answers: map[string]map[string]any{}, calls: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if r.Method != http.MethodPost || !ok || id != "rs%3A1" || secret != "s%26cret" ||
			r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, "bad client request", http.StatusUnauthorized)
			return
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("token_type_hint") != "access_token" {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		tok := r.PostForm.Get("token")
		s.mu.Lock()
		s.calls[tok]++
		answer, known := s.answers[tok]
		status := s.status
		s.mu.Unlock()
		if status != 0 {
			http.Error(w, "unavailable", status)
			return
		}
		if !known {
			answer = map[string]any{"active": false}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *introspectionServer) set(token string, answer map[string]any) {
	s.mu.Lock()
	s.answers[token] = answer
	s.mu.Unlock()
}

func (s *introspectionServer) count(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[token]
}

func (s *introspectionServer) fail(status int) {
	s.mu.Lock()
	s.status = status
	s.mu.Unlock()
}

func TestIntrospectorAdmission(t *testing.T) {
	ctx := context.Background()
	srv := newIntrospectionServer(t)
	clk := newClock()
	logs := &logBuffer{}
	v := &Introspector{Endpoint: srv.URL, ClientID: "rs:1", ClientSecret: "s&cret", Issuer: testIssuer,
		RequiredScopes: []string{"mcp:read"}, PartitionClaim: "tenant", Now: clk.Now, Logger: logs.logger(),
		ScopeFunc: func(method string, r *weft.AdmissionRequest) []string {
			if method == "tools/call" && r.Name == "delete" {
				return []string{"files:delete"}
			}
			return nil
		}}
	meta := &ResourceMetadata{Resource: testResource, AuthorizationServers: []string{testIssuer}, ScopesSupported: []string{"mcp:read"}}
	if err := v.CheckConfig(meta); err != nil {
		t.Fatal(err)
	}
	admit := v.Admission(meta)
	active := func(kv ...any) map[string]any { return with(with(claimsAt(clk.Now()), "active", true), kv...) }
	call := func(method, name, tok string) (weft.Identity, error) {
		return admit(ctx, &weft.AdmissionRequest{Method: method, Name: name, BearerToken: tok, Transport: "http", Header: http.Header{}})
	}

	srv.set("tok-alice", active())
	id, err := call("tools/list", "", "tok-alice")
	if err != nil {
		t.Fatal(err)
	}
	if id.Principal != "alice" || id.Partition != testIssuer+"|acme" || strings.Join(id.Scopes, " ") != "mcp:read mcp:write" {
		t.Errorf("identity = %+v", id)
	}
	if c, ok := ClaimsOf(id); !ok || c.ClientID != "client-1" {
		t.Errorf("ClaimsOf = %+v, %v", c, ok)
	}
	// The per-operation scope is challenged with 403, every needed scope listed.
	_, err = call("tools/call", "delete", "tok-alice")
	if ae := asAdmission(t, err, 403); !strings.Contains(ae.Challenge, `scope="mcp:read files:delete"`) {
		t.Errorf("challenge %s", ae.Challenge)
	}
	// A request may not change what the next one sees.
	c1, _ := ClaimsOf(id)
	c1.Scopes[0] = "mutated"
	if id2, err := call("tools/list", "", "tok-alice"); err != nil || id2.Scopes[0] != "mcp:read" {
		t.Errorf("a cached answer was changed through an earlier request: %+v, %v", id2, err)
	} else if c2, _ := ClaimsOf(id2); c2.Scopes[0] != "mcp:read" {
		t.Errorf("cached claims shared their scopes: %v", c2.Scopes)
	}
	// Cached: four admissions, one question.
	if n := srv.count("tok-alice"); n != 1 {
		t.Errorf("the endpoint was asked %d times, want 1", n)
	}
	// After CacheTTL it is asked again, and sees the revocation.
	srv.set("tok-alice", map[string]any{"active": false})
	clk.Advance(DefaultIntrospectionCacheTTL)
	_, err = call("tools/list", "", "tok-alice")
	if ae := asAdmission(t, err, 401); !strings.Contains(ae.Challenge, `error_description="The access token is not active"`) {
		t.Errorf("challenge %s", ae.Challenge)
	}
	if n := srv.count("tok-alice"); n != 2 {
		t.Errorf("the endpoint was asked %d times, want 2", n)
	}

	// Answers the checks refuse, each a 401 with invalid_token.
	for name, answer := range map[string]map[string]any{
		"other audience":     active("aud", "https://other.example.com/mcp"),
		"no audience":        active("aud", nil),
		"other issuer":       active("iss", "https://evil.example.com"),
		"expired":            active("exp", clk.Now().Add(-time.Hour).Unix(), "iat", clk.Now().Add(-2*time.Hour).Unix(), "nbf", nil),
		"no subject":         active("sub", nil),
		"sender-constrained": active("cnf", map[string]any{"jkt": "x"}),
		"unknown token":      nil,
	} {
		tok := "tok-" + strings.ReplaceAll(name, " ", "-")
		if answer != nil {
			srv.set(tok, answer)
		}
		_, err := call("tools/list", "", tok)
		ae := asAdmission(t, err, 401)
		if !strings.Contains(ae.Challenge, `error="invalid_token"`) {
			t.Errorf("%s: challenge %s", name, ae.Challenge)
		}
		assertNoSecret(t, name, ae.Error()+ae.Message+ae.Challenge, tok)
	}
	// An answer without "iss" is the configured issuer's.
	srv.set("tok-no-iss", active("iss", nil))
	if id, err := call("tools/list", "", "tok-no-iss"); err != nil || id.Partition != testIssuer+"|acme" {
		t.Errorf("answer without iss: %+v, %v", id, err)
	}
	// A refused answer is cached too: an invalid token cannot flood the endpoint.
	for range 3 {
		_, _ = call("tools/list", "", "tok-unknown-token")
	}
	if n := srv.count("tok-unknown-token"); n != 1 {
		t.Errorf("an unknown token was looked up %d times, want 1", n)
	}
	// The cache never outlives the token: expiring in 5 s, it is asked
	// again after 5 s, not after CacheTTL.
	srv.set("tok-short", active("exp", clk.Now().Add(5*time.Second).Unix()))
	if _, err := call("tools/list", "", "tok-short"); err != nil {
		t.Fatal(err)
	}
	srv.set("tok-short", map[string]any{"active": false})
	clk.Advance(6 * time.Second) // past exp, well within CacheTTL
	if _, err := call("tools/list", "", "tok-short"); err == nil {
		t.Error("a cached answer outlived the token's exp")
	}
	if n := srv.count("tok-short"); n != 2 {
		t.Errorf("the short-lived token was asked %d times, want 2", n)
	}

	// The endpoint failing is a 503 (not the client's fault) and is not cached.
	srv.fail(http.StatusInternalServerError)
	srv.set("tok-bob", active("sub", "bob"))
	_, err = call("tools/list", "", "tok-bob")
	if ae := asAdmission(t, err, 503); ae.Header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After: %+v", ae)
	}
	srv.fail(0)
	if id, err := call("tools/list", "", "tok-bob"); err != nil || id.Principal != "bob" {
		t.Errorf("after the endpoint recovered: %+v, %v", id, err)
	}
	assertNoSecret(t, "logs", logs.String(), "tok-alice", "tok-bob", "s&cret")
	// No token: 401 with the resource metadata, nothing asked.
	_, err = call("tools/list", "", "")
	if ae := asAdmission(t, err, 401); !strings.Contains(ae.Challenge, "resource_metadata=") {
		t.Errorf("challenge %s", ae.Challenge)
	}
}

func TestIntrospectorCacheBound(t *testing.T) {
	srv := newIntrospectionServer(t)
	clk := newClock()
	v := &Introspector{Endpoint: srv.URL, ClientID: "rs:1", ClientSecret: "s&cret", Issuer: testIssuer, Audience: testResource,
		CacheEntries: 2, Now: clk.Now}
	for _, tok := range []string{"a", "b", "c", "d"} {
		srv.set(tok, with(with(claimsAt(clk.Now()), "active", true)))
		if _, err := v.Introspect(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
		if n := len(v.cache); n > 2 {
			t.Fatalf("cache holds %d entries, bound 2", n)
		}
	}
	// Caching off: every call asks.
	off := &Introspector{Endpoint: srv.URL, ClientID: "rs:1", ClientSecret: "s&cret", Issuer: testIssuer, Audience: testResource,
		CacheTTL: -1, Now: clk.Now}
	for range 2 {
		if _, err := off.Introspect(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.count("a"); n != 3 {
		t.Errorf("asked %d times, want 3", n)
	}
}

func TestIntrospectorConfig(t *testing.T) {
	valid := func() *Introspector {
		return &Introspector{Endpoint: "https://auth.example.com/introspect", ClientID: "c", ClientSecret: "s", Issuer: testIssuer, Audience: testResource}
	}
	if err := valid().CheckConfig(nil); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Introspector){
		"no endpoint":          func(v *Introspector) { v.Endpoint = "" },
		"plain http":           func(v *Introspector) { v.Endpoint = "http://auth.example.com/introspect" },
		"id without secret":    func(v *Introspector) { v.ClientSecret = "" },
		"no issuer":            func(v *Introspector) { v.Issuer = "" },
		"no audience":          func(v *Introspector) { v.Audience = "" },
		"cache TTL too long":   func(v *Introspector) { v.CacheTTL = time.Hour },
		"negative cache bound": func(v *Introspector) { v.CacheEntries = -1 },
		"bad required scope":   func(v *Introspector) { v.RequiredScopes = []string{"a b"} },
	} {
		v := valid()
		mod(v)
		err := v.CheckConfig(nil)
		if !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), "JWTValidator") {
			t.Errorf("%s: %v", name, err)
		}
		// Misconfigured admission fails closed.
		if _, aerr := v.Admission(nil)(context.Background(), &weft.AdmissionRequest{Method: "tools/list", BearerToken: "x"}); aerr == nil {
			t.Errorf("%s: admitted", name)
		}
	}
	// An unreachable endpoint is ErrIntrospection, and the error does not
	// quote the token.
	down := valid()
	down.Endpoint = "http://127.0.0.1:1/introspect"
	_, err := down.Introspect(context.Background(), "secret-token-value")
	if !errors.Is(err, ErrIntrospection) || strings.Contains(err.Error(), "secret-token-value") {
		t.Errorf("unreachable endpoint: %v", err)
	}
}

// FuzzDecodeIntrospection: any answer decodes without panicking into the
// claims of an active token, ErrInactive or ErrIntrospection, and an active
// answer then goes through the claim checks without panicking.
func FuzzDecodeIntrospection(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		claims, err := decodeIntrospection(body)
		switch {
		case err == nil:
			if claims == nil {
				t.Fatal("no claims and no error")
			}
			v := &Introspector{Endpoint: "https://auth.example.com/i", Issuer: testIssuer, Audience: testResource, Now: newClock().Now}
			c, cerr := v.compile(nil)
			if cerr != nil {
				t.Fatal(cerr)
			}
			_ = c.check(claims)
		case errors.Is(err, ErrInactive), errors.Is(err, ErrIntrospection):
		default:
			t.Fatalf("decode %q: unexpected error class %v", body, err)
		}
	})
}
