package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/gateway/usertoken"
)

// codeAS is a small authorization server running the authorization code
// flow with PKCE S256 for the client "gw" (no login form: the user is
// whoever the test says), issuing tokens bound to the resource asked for.
type codeAS struct {
	url  string
	mu   sync.Mutex
	user string
	// codes: code -> subject, challenge, redirect, resource
	codes  map[string][4]string
	issued map[string]string // token -> "subject resource"
}

func startCodeAS(t *testing.T) *codeAS {
	t.Helper()
	as := &codeAS{codes: map[string][4]string{}, issued: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": as.url, "token_endpoint": as.url + "/token", "authorization_endpoint": as.url + "/authorize",
			"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": []string{"authorization_code"},
			"authorization_response_iss_parameter_supported": true})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != "gw" || q.Get("code_challenge_method") != "S256" || q.Get("response_type") != "code" || q.Get("resource") == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		as.mu.Lock()
		code := fmt.Sprintf("code-%d", len(as.codes)+1)
		as.codes[code] = [4]string{as.user, q.Get("code_challenge"), q.Get("redirect_uri"), q.Get("resource")}
		as.mu.Unlock()
		back := q.Get("redirect_uri") + "?" + url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {as.url}}.Encode()
		http.Redirect(w, r, back, http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = r.ParseForm()
		as.mu.Lock()
		defer as.mu.Unlock()
		c, ok := as.codes[r.PostForm.Get("code")]
		delete(as.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || r.PostForm.Get("grant_type") != "authorization_code" || base64.RawURLEncoding.EncodeToString(sum[:]) != c[1] ||
			r.PostForm.Get("redirect_uri") != c[2] || r.PostForm.Get("resource") != c[3] || r.PostForm.Get("client_id") != "gw" {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "invalid_grant"})
			return
		}
		tok := fmt.Sprintf("user-%s-%d", c[0], len(as.issued)+1)
		as.issued[tok] = c[0] + " " + c[3]
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	})
	hs := httptest.NewUnstartedServer(mux)
	as.url = "http://" + hs.Listener.Addr().String()
	hs.Start()
	t.Cleanup(hs.Close)
	return as
}

// TestPerUserLegacyClient: a 2025-11-25 client of the gateway gets the
// authorization request as URL-mode elicitation/create (the server's
// legacy bridge); once its user has been through the upstream's
// authorization server, the call goes through with the user's token (a
// public client: PKCE, the resource indicator, RFC 9207 iss).
func TestPerUserLegacyClient(t *testing.T) {
	as := startCodeAS(t)
	upURL := protectedUpstream(t, as.url, func(tok, resource string) bool {
		as.mu.Lock()
		defer as.mu.Unlock()
		return tok == "list-token" || strings.HasSuffix(as.issued[tok], " "+resource)
	})
	tokenFile := filepath.Join(t.TempDir(), "list-token")
	if err := os.WriteFile(tokenFile, []byte("list-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "up", URL: upURL, Prefix: "up_", OAuth: &gateway.UpstreamOAuth{
		TokenFile: tokenFile, PerUser: &gateway.PerUserOAuth{ClientID: "gw"}}}}}
	in := startPerUserGateway(t, cfg, testKeyring(t), usertoken.NewMemory(0), fixedCallers(map[string]string{"carol-gw-token": "carol"}))
	as.mu.Lock()
	as.user = "carol"
	as.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var asked []string
	lc, err := gateway.DialLegacyAs(ctx, in.url+"/mcp", "Bearer carol-gw-token", func(method string, p exactjson.Value) exactjson.Value {
		mode, _ := p.Get("mode")
		m, _ := mode.AsString()
		u, _ := p.Get("url")
		link, _ := u.AsString()
		asked = append(asked, method+":"+m)
		resp, err := newBrowser("carol").Get(link)
		if err != nil {
			t.Errorf("following %s: %v", link, err)
			return exactjson.Object(exactjson.Field("action", exactjson.String("cancel")))
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the browser ended at %s with %s", resp.Request.URL, resp.Status)
		}
		return exactjson.Object(exactjson.Field("action", exactjson.String("accept")))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	res, err := lc.Call(ctx, "tools/call", exactjson.Object(exactjson.Field("name", exactjson.String("up_whoami")), exactjson.Field("arguments", exactjson.Object())))
	if err != nil {
		t.Fatal(err)
	}
	// The answer to the gateway's own request does not reach the upstream.
	if got := res.String(); !strings.Contains(got, "auth=Bearer user-carol-") || strings.Contains(got, "inputResponses") ||
		strings.Join(asked, ",") != "elicitation/create:url" {
		t.Fatalf("result %s after %v", got, asked)
	}
}
