package oauth

import (
	"net/url"
	"testing"
)

// FuzzParseWWWAuthenticate: any header value parses or is refused with
// an error, never a panic; what parses has token schemes.
func FuzzParseWWWAuthenticate(f *testing.F) {
	for _, s := range []string{
		`Bearer`, `Bearer realm="x", scope="a b"`, `DPoP error="use_dpop_nonce", Bearer scope="x"`,
		`Basic abc==, Bearer`, `Bearer desc="a \"q\""`, `Bearer scope="x`, `Bearer x="y", z=`, `,,, Bearer ,`,
		`Bearer resource_metadata="https://r/.well-known/oauth-protected-resource/mcp", error="insufficient_scope"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cs, err := ParseWWWAuthenticate(s)
		if err != nil {
			return
		}
		for _, c := range cs {
			if !isToken(c.Scheme) {
				t.Fatalf("%q: scheme %q is not a token", s, c.Scheme)
			}
		}
	})
}

// FuzzParseMetadata: resource and authorization server metadata
// documents from untrusted servers parse or are refused; what parses
// satisfies the checks.
func FuzzParseMetadata(f *testing.F) {
	for _, s := range []string{
		`{"resource":"https://a.example/mcp","authorization_servers":["https://as.example"],"scopes_supported":["x"]}`,
		`{"issuer":"https://as.example","authorization_endpoint":"https://as.example/a","token_endpoint":"https://as.example/t","code_challenge_methods_supported":["S256"]}`,
		`{"resource":"https://a.example/mcp#f"}`, `[]`, `{"issuer":1}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := ParseResourceMetadata(data); err == nil {
			if u, err := url.Parse(m.Resource); err != nil || u.Host == "" || u.Fragment != "" {
				t.Fatalf("accepted resource %q", m.Resource)
			}
		}
		if m, err := ParseServerMetadata(data, "https://as.example"); err == nil && m.Issuer != "https://as.example" {
			t.Fatalf("accepted issuer %q", m.Issuer)
		}
	})
}
