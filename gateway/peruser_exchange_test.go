package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
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

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/gateway/usertoken"
)

// exchangeAS is a small authorization server offering RFC 8693 token
// exchange (neither Ory Hydra nor package authserver implements it): it
// exchanges a gateway caller's token for one bound to the resource asked
// for, for the client "gw" authenticated with its secret. offer false
// leaves the grant out of its metadata (and refuses it).
type exchangeAS struct {
	url      string
	offer    bool
	mu       sync.Mutex
	issued   map[string]string // token -> "subject resource"
	requests []map[string]string
}

func startExchangeAS(t *testing.T, offer bool, subjects map[string]string) *exchangeAS {
	t.Helper()
	as := &exchangeAS{offer: offer, issued: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		grants := []string{"authorization_code"}
		if as.offer {
			grants = append(grants, "urn:ietf:params:oauth:grant-type:token-exchange")
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": as.url, "token_endpoint": as.url + "/token", "authorization_endpoint": as.url + "/authorize",
			"code_challenge_methods_supported": []string{"S256"}, "grant_types_supported": grants})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		id, secret, _ := r.BasicAuth()
		_ = r.ParseForm()
		as.mu.Lock()
		defer as.mu.Unlock()
		as.requests = append(as.requests, map[string]string{"grant_type": r.PostForm.Get("grant_type"), "resource": r.PostForm.Get("resource"),
			"subject_token_type": r.PostForm.Get("subject_token_type")})
		sub, known := subjects[r.PostForm.Get("subject_token")]
		switch {
		case id != "gw" || secret != "gw-secret":
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "invalid_client"})
		case !as.offer || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange":
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "unsupported_grant_type"})
		case !known || r.PostForm.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:access_token":
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": "invalid_grant"})
		default:
			tok := fmt.Sprintf("xchg-%s-%d", sub, len(as.issued)+1)
			as.issued[tok] = sub + " " + r.PostForm.Get("resource")
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600,
				"issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
		}
	})
	hs := httptest.NewUnstartedServer(mux)
	as.url = "http://" + hs.Listener.Addr().String()
	hs.Start()
	t.Cleanup(hs.Close)
	return as
}

// TestPerUserTokenExchange: with tokenExchange, a caller's first call goes
// through without asking: the gateway exchanges the caller's own token at
// the upstream's authorization server for one issued for the upstream
// (RFC 8693), and the caller's token never reaches the upstream. Where the
// server does not offer the grant, the user is asked with the URL request,
// and a declined request fails the call with a clear error.
func TestPerUserTokenExchange(t *testing.T) {
	callers := map[string]string{"alice-gw-token": "alice", "bob-gw-token": "bob"}
	for _, offer := range []bool{true, false} {
		t.Run(fmt.Sprintf("offered=%v", offer), func(t *testing.T) {
			as := startExchangeAS(t, offer, callers)
			var upMu sync.Mutex
			var upAuths []string
			upURL := protectedUpstream(t, as.url, func(tok, resource string) bool {
				as.mu.Lock()
				defer as.mu.Unlock()
				upMu.Lock()
				upAuths = append(upAuths, tok)
				upMu.Unlock()
				return tok == "list-token" || strings.HasSuffix(as.issued[tok], " "+resource)
			})
			tokenFile := filepath.Join(t.TempDir(), "list-token")
			if err := os.WriteFile(tokenFile, []byte("list-token"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "up", URL: upURL, Prefix: "up_", OAuth: &gateway.UpstreamOAuth{
				TokenFile: tokenFile,
				PerUser:   &gateway.PerUserOAuth{ClientID: "gw", ClientSecret: "gw-secret", TokenExchange: true},
			}}}}
			in := startPerUserGateway(t, cfg, testKeyring(t), usertoken.NewMemory(0), fixedCallers(callers))
			for _, tc := range []struct{ token, who string }{{"alice-gw-token", "alice"}, {"bob-gw-token", "bob"}, {"alice-gw-token", "alice"}} {
				var asked []string
				c := client.New(client.NewHTTPTransport(in.url+"/mcp", &client.HTTPOptions{BearerToken: tc.token}), &client.Options{Handlers: client.Handlers{
					Elicit: func(_ context.Context, p exactjson.Value) (exactjson.Value, error) {
						u, _ := p.Get("url")
						s, _ := u.AsString()
						asked = append(asked, s)
						return exactjson.Object(exactjson.Field("action", exactjson.String("decline"))), nil
					}}})

				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := c.CallTool(ctx, "up_whoami", nil)
				cancel()
				c.Close()
				if !offer {
					var re *client.RPCError
					if len(asked) != 1 || !strings.HasPrefix(asked[0], in.url+"/oauth/start/") {
						t.Fatalf("%s was asked %q, want the gateway's start page once", tc.who, asked)
					}
					if !errors.As(err, &re) || re.Code != gateway.CodeUserAuthorization || !strings.Contains(re.Message, "decline") {
						t.Fatalf("%s declined: %v, want error %d", tc.who, err, gateway.CodeUserAuthorization)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", tc.who, err)
				}
				if len(asked) != 0 {
					t.Errorf("%s was asked %q despite token exchange", tc.who, asked)
				}
				if got := res.Text(); !strings.HasPrefix(got, "auth=Bearer xchg-"+tc.who+"-") {
					t.Errorf("%s: the upstream saw %q", tc.who, got)
				}
			}
			as.mu.Lock()
			defer as.mu.Unlock()
			if offer {
				// One exchange per user (alice's second call reuses hers),
				// each for the upstream's resource.
				if len(as.requests) != 2 {
					t.Errorf("token requests %v, want one exchange per user", as.requests)
				}
				for _, r := range as.requests {
					if r["resource"] != upURL || r["subject_token_type"] != "urn:ietf:params:oauth:token-type:access_token" {
						t.Errorf("token request %v, want an exchange of an access token for %s", r, upURL)
					}
				}
			} else if len(as.requests) != 0 {
				t.Errorf("token requests %v at a server not offering the exchange", as.requests)
			}
			upMu.Lock()
			defer upMu.Unlock()
			for _, a := range upAuths {
				if _, own := callers[a]; own {
					t.Errorf("the upstream received a caller's own token %q", a)
				}
			}
		})
	}
}

// TestUserAuthorizationOptions: an upstream with perUser needs
// Options.UserAuthorization with a usable base URL and a protector; New
// says which.
func TestUserAuthorizationOptions(t *testing.T) {
	upURL := protectedUpstream(t, "http://127.0.0.1:1", func(tok, _ string) bool { return tok == "list-token" })
	tokenFile := filepath.Join(t.TempDir(), "list-token")
	if err := os.WriteFile(tokenFile, []byte("list-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "up", URL: upURL, OAuth: &gateway.UpstreamOAuth{
		TokenFile: tokenFile, PerUser: &gateway.PerUserOAuth{ClientID: "gw"}}}}}
	prot := testKeyring(t)
	for _, tc := range []struct {
		ua   *gateway.UserAuthorization
		want string
	}{
		{nil, "needs Options.UserAuthorization"},
		{&gateway.UserAuthorization{BaseURL: "http://gateway.example.com/oauth", Protector: prot}, "want an https URL"},
		{&gateway.UserAuthorization{BaseURL: "https://gateway.example.com/oauth?x=1", Protector: prot}, "without query"},
		{&gateway.UserAuthorization{BaseURL: "https://gateway.example.com/oauth"}, "Protector is required"},
		{&gateway.UserAuthorization{BaseURL: "https://gateway.example.com/oauth", Protector: prot, LinkLifetime: 2 * time.Hour}, "LinkLifetime"},
		{&gateway.UserAuthorization{BaseURL: "https://gateway.example.com/oauth", Protector: prot}, "needs SignIn or BrowserUser"},
		{&gateway.UserAuthorization{BaseURL: "https://gateway.example.com/oauth", Protector: prot, BrowserUser: anyone,
			SignIn: &gateway.OAuthSignIn{Resource: "https://gateway.example.com/mcp", ClientID: "gw"}}, "not both"},
		{&gateway.UserAuthorization{BaseURL: "https://gateway.example.com/oauth", Protector: prot,
			SignIn: &gateway.OAuthSignIn{Resource: "http://gateway.example.com/mcp", ClientID: "gw"}}, "SignIn.Resource"},
		{&gateway.UserAuthorization{BaseURL: "https://gateway.example.com/oauth", Protector: prot,
			SignIn: &gateway.OAuthSignIn{Resource: "https://gateway.example.com/mcp"}}, "SignIn.ClientID"},
		{&gateway.UserAuthorization{BaseURL: "https://gateway.example.com/oauth", Protector: prot,
			SignIn: &gateway.OAuthSignIn{Resource: "https://gateway.example.com/mcp", ClientID: "gw", SessionLifetime: 48 * time.Hour}}, "SessionLifetime"},
		{&gateway.UserAuthorization{BaseURL: "https://gateway.example.com/oauth", Protector: prot,
			SignIn: &gateway.OAuthSignIn{Resource: "https://gateway.example.com/mcp", ClientID: "gw"}}, "needs the server"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		gw, err := gateway.New(ctx, nil, cfg, &gateway.Options{UserAuthorization: tc.ua})
		cancel()
		if err == nil {
			gw.Close()
			t.Errorf("%+v: no error, want %q", tc.ua, tc.want)
		} else if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `upstream "up"`) {
			t.Errorf("%+v: %v, want %q naming the upstream", tc.ua, err, tc.want)
		}
	}
}

// anyone is a BrowserUser for which every browser is "someone".
func anyone(http.ResponseWriter, *http.Request) (weft.Identity, bool) {
	return weft.Identity{Principal: "someone", Partition: "p"}, true
}

// FuzzAuthorizationHandler: the start page, the callback and the sign-in
// page take a handle, a state and a cookie from any browser; none of
// them, forged, opens a flow: the answer is an error page (never a
// redirect, a 200 or a 5xx).
// Seeds are in testdata/fuzz/FuzzAuthorizationHandler.
func FuzzAuthorizationHandler(f *testing.F) {
	upURL := protectedUpstream(f, "http://127.0.0.1:1", func(tok, _ string) bool { return tok == "list-token" })
	tokenFile := filepath.Join(f.TempDir(), "list-token")
	if err := os.WriteFile(tokenFile, []byte("list-token"), 0o600); err != nil {
		f.Fatal(err)
	}
	cfg := &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "up", URL: upURL, OAuth: &gateway.UpstreamOAuth{
		TokenFile: tokenFile, PerUser: &gateway.PerUserOAuth{ClientID: "gw"}}}}}
	prot := testKeyring(f)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := weft.NewServer(weft.Implementation{Name: "fuzz", Version: "1"}, &weft.Options{Protector: prot})
	if err != nil {
		f.Fatal(err)
	}
	gw, err := gateway.New(ctx, srv, cfg, &gateway.Options{UserAuthorization: &gateway.UserAuthorization{BaseURL: "https://gw.example.com/oauth", Protector: prot,
		SignIn: &gateway.OAuthSignIn{Resource: "https://gw.example.com/mcp", ClientID: "gw"}}})

	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = gw.Close() })
	h := gw.AuthorizationHandler()
	f.Fuzz(func(t *testing.T, path, state, cookie string) {
		for _, target := range []string{"/oauth/start/" + url.PathEscape(path), "/oauth/callback?state=" + url.QueryEscape(state) + "&code=c",
			"/oauth/signin?state=" + url.QueryEscape(state) + "&code=c"} {
			r := httptest.NewRequest(http.MethodGet, "https://gw.example.com"+target, nil)
			if cookie != "" {
				r.Header.Set("Cookie", "weft_gw_authz_"+url.QueryEscape(state)+"="+url.QueryEscape(cookie)+
					"; weft_gw_signin_"+url.QueryEscape(state)+"="+url.QueryEscape(cookie)+"; weft_gw_user="+url.QueryEscape(cookie))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code < 400 || w.Code >= 500 {
				t.Fatalf("%s: %d %s", target, w.Code, w.Header().Get("Location"))
			}
		}
	})
}
