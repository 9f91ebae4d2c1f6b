package authserver

import (
	"net/http"
	"net/url"
	"testing"
)

// FuzzParseClientMetadata: a fetched client metadata document is untrusted
// input. Whatever it holds, parsing never panics, and an accepted document
// names the URL it was fetched from and only acceptable redirect URIs.
func FuzzParseClientMetadata(f *testing.F) {
	const id = "https://client.example/meta.json"
	f.Add([]byte(cimdDoc(id, "http://127.0.0.1:3000/cb")))
	f.Add([]byte(`{"client_id":"https://client.example/meta.json","client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`))
	f.Add([]byte(`{"client_id":"https://client.example/meta.json","client_name":"x","redirect_uris":["javascript:alert(1)"]}`))
	f.Add([]byte(`{"client_id":"https://client.example/meta.json"}{}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := ParseClientMetadata(id, doc)
		if err != nil {
			return
		}
		if c.ID != id || c.Name == "" || len(c.RedirectURIs) == 0 || len(c.RedirectURIs) > MaxRedirectURIs {
			t.Fatalf("accepted %+v", c)
		}
		for _, r := range c.RedirectURIs {
			if checkRedirectURI(r) != nil {
				t.Fatalf("accepted redirect URI %q", r)
			}
		}
	})
}

// FuzzParseTokenForm: token and revocation request bodies and their
// Authorization header are untrusted input.
func FuzzParseTokenForm(f *testing.F) {
	f.Add("grant_type=authorization_code&code=abc&code_verifier=xyz&client_id=c", "")
	f.Add("grant_type=refresh_token&refresh_token=r", "Basic Yzpz")
	f.Add("resource=a&resource=b&client_id=c", "Basic %%%")
	f.Add("client_id=a&client_id=b", "Bearer x")
	f.Fuzz(func(t *testing.T, body, authz string) {
		form, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		h := http.Header{}
		if authz != "" {
			h.Set("Authorization", authz)
		}
		tr, err := parseTokenForm(form, h)
		if err != nil {
			return
		}
		for k, vs := range form {
			if k != "resource" && len(vs) > 1 {
				t.Fatalf("accepted repeated %s", k)
			}
			for _, v := range vs {
				if len(v) > MaxParamBytes {
					t.Fatalf("accepted an overlong %s", k)
				}
			}
		}
		if tr.hasBasic && tr.params["client_id"] != "" && tr.params["client_id"] != tr.basicID {
			t.Fatal("accepted two client ids")
		}
	})
}
