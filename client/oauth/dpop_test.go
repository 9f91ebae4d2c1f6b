package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// checkProof verifies a DPoP proof and returns its claims.
func checkProof(t *testing.T, proof string) map[string]any {
	t.Helper()
	tok, err := jwt.ParseSigned(proof, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Errorf("proof: %v", err)
		return nil
	}
	h := tok.Headers[0]
	var c map[string]any
	if h.ExtraHeaders["typ"] != "dpop+jwt" || h.JSONWebKey == nil || tok.Claims(h.JSONWebKey.Key, &c) != nil {
		t.Errorf("proof header %+v does not verify", h)
		return nil
	}
	return c
}

// TestDPoPNonces: the token request carries a proof and is retried once
// with the authorization server's nonce; the DPoP token is presented with
// the DPoP scheme and a proof bound to it (ath), retried once with the
// resource server's nonce.
func TestDPoPNonces(t *testing.T) {
	var mu sync.Mutex
	var asNonceSeen, rsNonceSeen bool
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"issuer": base, "token_endpoint": base + "/token", "dpop_signing_alg_values_supported": []string{"ES256"}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		c := checkProof(t, r.Header.Get("DPoP"))
		if c == nil || c["htm"] != "POST" || c["htu"] != base+"/token" {
			writeJSON(w, 400, map[string]any{"error": "invalid_dpop_proof"})
			return
		}
		if c["nonce"] != "as-nonce" {
			w.Header().Set("DPoP-Nonce", "as-nonce")
			writeJSON(w, 400, map[string]any{"error": "use_dpop_nonce"})
			return
		}
		mu.Lock()
		asNonceSeen = true
		mu.Unlock()
		writeJSON(w, 200, map[string]any{"access_token": "dpop-token", "token_type": "DPoP", "expires_in": 3600})
	})
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "DPoP dpop-token" {
			w.Header().Set("WWW-Authenticate", `DPoP resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(401)
			return
		}
		c := checkProof(t, r.Header.Get("DPoP"))
		sum := sha256.Sum256([]byte("dpop-token"))
		if c == nil || c["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) || c["htu"] != base+"/mcp" {
			t.Errorf("resource proof claims %v", c)
			w.WriteHeader(401)
			return
		}
		if c["nonce"] != "rs-nonce" {
			w.Header().Set("DPoP-Nonce", "rs-nonce")
			w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
			w.WriteHeader(401)
			return
		}
		mu.Lock()
		rsNonceSeen = true
		mu.Unlock()
		w.WriteHeader(200)
	})
	srv := httptest.NewUnstartedServer(mux)
	base = "http://" + srv.Listener.Addr().String()
	srv.Start()
	defer srv.Close()
	key, err := NewDPoPKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTransport(nil, Config{Grant: GrantClientCredentials, ClientID: "c", ClientSecret: "s", DPoP: key})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/mcp", strings.NewReader("{}"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode != 200 || !asNonceSeen || !rsNonceSeen {
		t.Fatalf("status %d, AS nonce honoured %v, RS nonce honoured %v", resp.StatusCode, asNonceSeen, rsNonceSeen)
	}
}
