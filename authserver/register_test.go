package authserver

import (
	"net/http"
	"strings"
	"testing"
)

// TestDynamicRegistration: off by default (no endpoint, not advertised);
// when on, public clients only, redirect URIs checked, body bounded.
func TestDynamicRegistration(t *testing.T) {
	off := newEnv(t, envOpts{noHydra: true})
	resp, err := http.Post(off.asURL+"/register", "application/json", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:1/cb"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("registration while disabled: %d", resp.StatusCode)
	}

	e := newEnv(t, envOpts{noHydra: true, mutate: func(c *Config) { c.DynamicRegistration = true }})
	post := func(body string) (int, map[string]any) {
		resp, err := http.Post(e.asURL+"/register", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = jsonDecode(resp.Body, &out)
		return resp.StatusCode, out
	}
	st, out := post(`{"client_name":"dyn","redirect_uris":["http://127.0.0.1:7/cb"]}`)
	if st != 201 || out["client_id"] == nil || out["client_secret"] != nil {
		t.Fatalf("register: %d %v", st, out)
	}
	// The registered client can start a flow (it gets as far as the
	// unavailable upstream, past client and redirect checks).
	_, challenge := pkce()
	resp2, body := get(t, e.authorizeURL(out["client_id"].(string), "http://127.0.0.1:7/cb", challenge, "s", nil))
	if resp2.StatusCode != 302 || !strings.Contains(resp2.Header.Get("Location"), "temporarily_unavailable") {
		t.Fatalf("authorize with a registered client: %d %s %s", resp2.StatusCode, resp2.Header.Get("Location"), body)
	}
	for name, body := range map[string]string{
		"confidential":    `{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`,
		"javascript URI":  `{"redirect_uris":["javascript:alert(1)"]}`,
		"http non-local":  `{"redirect_uris":["http://evil.example/cb"]}`,
		"no redirect URI": `{}`,
		"implicit":        `{"redirect_uris":["https://a.example/cb"],"response_types":["token"]}`,
		"oversized":       `{"client_name":"` + strings.Repeat("x", MaxRegistrationBytes) + `","redirect_uris":["https://a.example/cb"]}`,
	} {
		if st, out := post(body); st != 400 {
			t.Errorf("%s: %d %v", name, st, out)
		}
	}
}
