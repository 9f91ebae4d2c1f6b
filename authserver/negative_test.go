package authserver

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// get fetches an authorization URL without following redirects.
func get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestAuthorizeRefusals covers the authorization requests refused before
// any login: errors that must not redirect (unknown client, unregistered
// redirect URI: an open redirect otherwise) and errors sent back to the
// client with state and iss.
func TestAuthorizeRefusals(t *testing.T) {
	e := newEnv(t, envOpts{noHydra: true, resources: []string{"https://other.example/mcp"}})
	_, challenge := pkce()
	type want struct {
		status int
		page   string // substring of the error page (no redirect)
		err    string // error code in the redirect
	}
	e.docs.set("/other.json", cimdDoc(e.cimd.URL+"/client.json", e.redirect))
	e.docs.set("/https.json", cimdDoc(e.cimd.URL+"/https.json", "https://app.example/cb"))
	e.docs.set("/big.json", `{"client_id":"`+e.cimd.URL+`/big.json","client_name":"`+strings.Repeat("x", 6000)+`","redirect_uris":["`+e.redirect+`"]}`)
	e.docs.set("/secret.json", `{"client_id":"`+e.cimd.URL+`/secret.json","client_name":"x","client_secret":"s","redirect_uris":["`+e.redirect+`"]}`)
	cases := []struct {
		name     string
		clientID string
		redirect string
		extra    url.Values
		want     want
	}{
		{"wrong redirect URI", e.clientID, "http://127.0.0.1:9/evil", nil, want{400, "not registered", ""}},
		{"redirect URI with extra path", e.clientID, e.redirect + "/x", nil, want{400, "not registered", ""}},
		{"loopback redirect on another port, other path", e.clientID, "http://127.0.0.1:54321/other", nil, want{400, "not registered", ""}},
		{"loopback redirect on another port, other query", e.clientID, "http://127.0.0.1:54321/callback?x=1", nil, want{400, "not registered", ""}},
		{"loopback redirect on another loopback host", e.clientID, "http://localhost:9/callback", nil, want{400, "not registered", ""}},
		{"https redirect on another port", e.cimd.URL + "/https.json", "https://app.example:8443/cb", nil, want{400, "not registered", ""}},
		{"unknown client", "plain-client", e.redirect, nil, want{400, "unknown", ""}},
		{"CIMD naming another client_id", e.cimd.URL + "/other.json", e.redirect, nil, want{400, "client_id is not the document", ""}},
		{"CIMD oversized", e.cimd.URL + "/big.json", e.redirect, nil, want{400, "larger than", ""}},
		{"CIMD with a secret", e.cimd.URL + "/secret.json", e.redirect, nil, want{400, "secret", ""}},
		{"CIMD missing", e.cimd.URL + "/none.json", e.redirect, nil, want{400, "could not be fetched", ""}},
		{"CIMD over http", strings.Replace(e.clientID, "https", "http", 1), e.redirect, nil, want{400, "must use https", ""}},
		{"CIMD without path", e.cimd.URL + "/", e.redirect, nil, want{400, "must have a path", ""}},
		{"missing PKCE", e.clientID, e.redirect, url.Values{"code_challenge": nil, "code_challenge_method": nil}, want{302, "", "invalid_request"}},
		{"plain PKCE", e.clientID, e.redirect, url.Values{"code_challenge_method": {"plain"}}, want{302, "", "invalid_request"}},
		{"PKCE method missing", e.clientID, e.redirect, url.Values{"code_challenge_method": nil}, want{302, "", "invalid_request"}},
		{"malformed challenge", e.clientID, e.redirect, url.Values{"code_challenge": {"short"}}, want{302, "", "invalid_request"}},
		{"implicit grant", e.clientID, e.redirect, url.Values{"response_type": {"token"}}, want{302, "", "unsupported_response_type"}},
		{"resource of another server", e.clientID, e.redirect, url.Values{"resource": {"https://evil.example/mcp"}}, want{302, "", "invalid_target"}},
		{"two resources", e.clientID, e.redirect, url.Values{"resource": {e.resource, "https://other.example/mcp"}}, want{302, "", "invalid_target"}},
		{"unknown scope", e.clientID, e.redirect, url.Values{"scope": {"admin"}}, want{302, "", "invalid_scope"}},
		{"repeated parameter", e.clientID, e.redirect, url.Values{"state": {"a", "b"}}, want{400, "repeated", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := get(t, e.authorizeURL(c.clientID, c.redirect, challenge, "st", c.extra))
			if resp.StatusCode != c.want.status {
				t.Fatalf("status %d, want %d; body %s; location %s", resp.StatusCode, c.want.status, body, resp.Header.Get("Location"))
			}
			if c.want.page != "" {
				if resp.Header.Get("Location") != "" || !strings.Contains(body, c.want.page) {
					t.Fatalf("want an error page containing %q, got location %q body %s", c.want.page, resp.Header.Get("Location"), body)
				}
				return
			}
			loc, _ := url.Parse(resp.Header.Get("Location"))
			q := loc.Query()
			if !strings.HasPrefix(loc.String(), e.redirect) || q.Get("error") != c.want.err || q.Get("state") != "st" || q.Get("iss") != e.asURL {
				t.Fatalf("redirect %s, want error %s with state and iss", loc, c.want.err)
			}
		})
	}
}

// TestCIMDSSRF checks that metadata documents are fetched only from
// public addresses unless explicitly allowed: a loopback literal, a name
// resolving to loopback (the dialled address is checked), and a slow
// server bounded by the timeout.
func TestCIMDSSRF(t *testing.T) {
	e := newEnv(t, envOpts{noHydra: true, mutate: func(c *Config) {
		c.CIMD.AllowedNetworks = nil
		c.CIMD.Timeout = 300 * time.Millisecond
	}})
	_, challenge := pkce()
	port := e.cimd.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":")+1:]
	for _, id := range []string{
		e.clientID, // https://127.0.0.1:port/client.json
		"https://localhost:" + port + "/client.json", // a name: refused at dial time
		"https://[::1]:" + port + "/client.json",
		"https://10.0.0.1/client.json",
		"https://169.254.169.254/latest/meta-data.json",
	} {
		resp, body := get(t, e.authorizeURL(id, e.redirect, challenge, "st", nil))
		if resp.StatusCode != 400 || !strings.Contains(body, "address this server does not fetch from") {
			t.Errorf("%s: %d %s", id, resp.StatusCode, body)
		}
	}

	// Slow: allowed network, but the server answers after the timeout.
	slow := newEnv(t, envOpts{noHydra: true, mutate: func(c *Config) { c.CIMD.Timeout = 300 * time.Millisecond }})
	slow.docs.delay = 5 * time.Second
	resp, body := get(t, slow.authorizeURL(slow.clientID, slow.redirect, challenge, "st", nil))
	if resp.StatusCode != 400 || !strings.Contains(body, "could not be fetched") {
		t.Errorf("slow document: %d %s", resp.StatusCode, body)
	}
}

// TestMetadata checks the RFC 8414 document at both discovery paths.
func TestMetadata(t *testing.T) {
	e := newEnv(t, envOpts{noHydra: true})
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		resp, err := http.Get(e.asURL + p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		err = jsonDecode(resp.Body, &m)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", p, resp.StatusCode, err)
		}
		if m["issuer"] != e.asURL || m["authorization_endpoint"] != e.asURL+"/authorize" ||
			m["client_id_metadata_document_supported"] != true || m["authorization_response_iss_parameter_supported"] != true ||
			m["registration_endpoint"] != nil {
			t.Errorf("%s: %v", p, m)
		}
		if got := m["code_challenge_methods_supported"].([]any); len(got) != 1 || got[0] != "S256" {
			t.Errorf("%s: code_challenge_methods_supported %v", p, got)
		}
		// offline_access is listed: clients ask only for listed scopes, and
		// it is how they get a refresh token.
		if got := fmt.Sprint(m["scopes_supported"]); got != "[mcp:read mcp:write offline_access]" {
			t.Errorf("%s: scopes_supported %s", p, got)
		}
	}
}
