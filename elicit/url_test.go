package elicit

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestURLPolicyCheck(t *testing.T) {
	prod := URLPolicy{AllowedOrigins: []string{"https://app.example.com", "https://auth.example.com:8443/"}}
	dev := URLPolicy{AllowedOrigins: []string{"https://app.example.com"}, Development: true}
	handle := "Xy3kP9qLmN2vB7cR4tW8zA1sD5fG6hJ0kL2mN4pQ6rS"
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	tests := []struct {
		name   string
		policy URLPolicy
		url    string
		want   string // "" means allowed; otherwise a substring of the error
		norm   string // expected normalised URL when allowed and different
	}{
		{"handle in path", prod, "https://app.example.com/elicit/" + handle, "", ""},
		{"root", prod, "https://app.example.com/", "", ""},
		{"default port explicit", prod, "https://app.example.com:443/x", "", ""},
		{"host case", prod, "https://APP.example.com/x", "", ""},
		{"scheme case", prod, "HTTPS://app.example.com/x", "", "https://app.example.com/x"},
		{"second origin with port", prod, "https://auth.example.com:8443/connect", "", ""},
		{"harmless query", prod, "https://app.example.com/connect?provider=github&lang=en", "", ""},
		{"uuid in query", prod, "https://app.example.com/x?project=3f2504e0-4f89-11d3-9a0c-0305e82c3301", "", ""},
		{"slug in query", prod, "https://app.example.com/x?release=release-2024-11-05-final-build-v2", "", ""},
		{"dev loopback http", dev, "http://localhost:8080/elicit/" + handle, "", ""},
		{"dev 127.0.0.1", dev, "http://127.0.0.1:3000/x", "", ""},
		{"dev ipv6 loopback", dev, "http://[::1]:3000/x", "", ""},
		{"dev still allows listed", dev, "https://app.example.com/x", "", ""},

		{"empty", prod, "", "empty", ""},
		{"relative", prod, "/elicit/x", "absolute", ""},
		{"opaque", prod, "https:app.example.com", "absolute", ""},
		{"http in prod", prod, "http://app.example.com/x", "https", ""},
		{"http loopback in prod", prod, "http://localhost:8080/x", "https", ""},
		{"https loopback in prod", prod, "https://localhost/x", "not an allowed origin", ""},
		{"http non-loopback in dev", dev, "http://app.example.com/x", "https", ""},
		{"javascript", prod, "javascript:alert(1)", "absolute", ""},
		{"ftp", prod, "ftp://app.example.com/x", "scheme", ""},
		{"other origin", prod, "https://evil.example.com/x", "not an allowed origin", ""},
		{"subdomain", prod, "https://x.app.example.com/x", "not an allowed origin", ""},
		{"suffix trick", prod, "https://app.example.com.evil.com/x", "not an allowed origin", ""},
		{"other port", prod, "https://app.example.com:444/x", "not an allowed origin", ""},
		{"port out of range", prod, "https://app.example.com:99999/x", "out of range", ""},
		{"empty port", prod, "https://app.example.com:/x", "empty port", ""},
		{"userinfo", prod, "https://user:pass@app.example.com/x", "userinfo", ""},
		{"empty userinfo", prod, "https://@app.example.com/x", "userinfo", ""},
		{"backslash", prod, `https://app.example.com\@evil.com/x`, "backslash", ""},
		{"space", prod, "https://app.example.com/a b", "printable ASCII", ""},
		{"unicode", prod, "https://app.example.com/é", "printable ASCII", ""},
		{"control", prod, "https://app.example.com/\x00", "printable ASCII", ""},
		{"fragment", prod, "https://app.example.com/x#access_token=abc", "fragment", ""},
		{"empty fragment", prod, "https://app.example.com/x#", "fragment", ""},
		{"token param", prod, "https://app.example.com/x?token=abc", "names a credential", ""},
		{"access_token param", prod, "https://app.example.com/x?access_token=abc", "names a credential", ""},
		{"code param", prod, "https://app.example.com/x?code=abc", "names a credential", ""},
		{"api key param", prod, "https://app.example.com/x?apiKey=abc", "names a credential", ""},
		{"key param", prod, "https://app.example.com/x?key=abc", "names a credential", ""},
		{"sig param", prod, "https://app.example.com/x?sig=abc", "names a credential", ""},
		{"signature param", prod, "https://app.example.com/x?X-Amz-Signature=abc", "names a credential", ""},
		{"session param", prod, "https://app.example.com/x?session_id=abc", "names a credential", ""},
		{"password param", prod, "https://app.example.com/x?pwd=abc", "names a credential", ""},
		{"auth param", prod, "https://app.example.com/x?auth=abc", "names a credential", ""},
		{"otp param", prod, "https://app.example.com/x?otp=123456", "names a credential", ""},
		{"policy-flagged param", prod, "https://app.example.com/x?cvv=123", "names a credential", ""},
		{"jwt value", prod, "https://app.example.com/x?state=" + jwt, "JWT", ""},
		{"jwt in path", prod, "https://app.example.com/x/" + jwt, "JWT", ""},
		{"random value", prod, "https://app.example.com/x?h=" + handle, "credential-like", ""},
		{"hex digest", prod, "https://app.example.com/x?d=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "credential-like", ""},
		{"email value", prod, "https://app.example.com/x?user=ann%40example.com", "email", ""},
		{"email in path", prod, "https://app.example.com/users/ann@example.com", "email", ""},
		{"bad query", prod, "https://app.example.com/x?a=%zz", "query", ""},
		{"bad path escape", prod, "https://app.example.com/%zz", "", ""}, // url.Parse rejects
		{"no origins", URLPolicy{}, "https://app.example.com/x", "no allowed origins", ""},
		{"http origin listed", URLPolicy{AllowedOrigins: []string{"http://app.example.com"}}, "https://app.example.com/x", "must use https", ""},
		{"origin with path", URLPolicy{AllowedOrigins: []string{"https://app.example.com/app"}}, "https://app.example.com/x", "https://host", ""},
		{"origin with userinfo", URLPolicy{AllowedOrigins: []string{"https://u@app.example.com"}}, "https://app.example.com/x", "https://host", ""},
		{"too long", prod, "https://app.example.com/" + strings.Repeat("a", maxURLBytes), "longer than", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.policy.Check(tt.url)
			if tt.name == "bad path escape" {
				if err == nil {
					t.Fatal("accepted an invalid escape")
				}
				return
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check(%q) = %v", tt.url, err)
				}
				want := tt.norm
				if want == "" {
					want = tt.url
				}
				if got != want {
					t.Errorf("Check(%q) = %q, want %q", tt.url, got, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check(%q) allowed", tt.url)
			}
			if !errors.Is(err, ErrUnsafeURL) {
				t.Errorf("error %v does not match ErrUnsafeURL", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "abc") || strings.Contains(err.Error(), jwt) {
				t.Errorf("error %q echoes a query value", err)
			}
		})
	}
}

func TestURLPolicySecrets(t *testing.T) {
	pol := URLPolicy{AllowedOrigins: []string{"https://app.example.com"},
		Secrets: DefaultSecretPolicy().With(Rule{ID: "badge", Phrases: []string{"badge"}})}
	if _, err := pol.Check("https://app.example.com/x?badge=1"); !errors.Is(err, ErrUnsafeURL) {
		t.Fatalf("custom secret policy not applied: %v", err)
	}
	pol.Secrets = DefaultSecretPolicy().Without("nope")
	if _, err := pol.Check("https://app.example.com/x?a=1"); err == nil {
		t.Fatal("invalid secret policy accepted")
	}
}

func TestNewHandle(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		h, err := NewHandle()
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 43 {
			t.Fatalf("handle %q has length %d", h, len(h))
		}
		b, err := base64.RawURLEncoding.DecodeString(h)
		if err != nil || len(b) != 32 {
			t.Fatalf("handle %q: %v", h, err)
		}
		if seen[h] {
			t.Fatal("repeated handle")
		}
		seen[h] = true
	}
}

func TestHandleURL(t *testing.T) {
	h := "Xy3kP9qLmN2vB7cR4tW8zA1sD5fG6hJ0kL2mN4pQ6rS"
	tests := []struct {
		base, handle, want string
		wantErr            bool
	}{
		{"https://app.example.com/elicit", h, "https://app.example.com/elicit/" + h, false},
		{"https://app.example.com/elicit/", h, "https://app.example.com/elicit/" + h, false},
		{"https://app.example.com", h, "https://app.example.com/" + h, false},
		{"http://localhost:8080/e", h, "http://localhost:8080/e/" + h, false},
		{"https://app.example.com/e", "short", "", true},
		{"https://app.example.com/e", h + "/..", "", true},
		{"https://app.example.com/e", strings.Repeat("a", 513), "", true},
		{"https://app.example.com/e?x=1", h, "", true},
		{"https://app.example.com/e#f", h, "", true},
		{"https://u@app.example.com/e", h, "", true},
		{"/relative", h, "", true},
		{"ftp://app.example.com/e", h, "", true},
		{"https://app.example.com/a b", h, "", true},
	}
	for _, tt := range tests {
		got, err := HandleURL(tt.base, tt.handle)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("HandleURL(%q, %q) = %q, %v; want %q, err %v", tt.base, tt.handle, got, err, tt.want, tt.wantErr)
		}
	}
	// A fresh handle URL passes the policy.
	fresh, err := NewHandle()
	if err != nil {
		t.Fatal(err)
	}
	u, err := HandleURL("https://app.example.com/elicit", fresh)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (URLPolicy{AllowedOrigins: []string{"https://app.example.com"}}).Check(u); err != nil {
		t.Fatalf("handle URL refused: %v", err)
	}
}

func TestLooksLike(t *testing.T) {
	tests := []struct {
		in         string
		jwt, cred  bool
		emailShape bool
	}{
		{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", true, true, false},
		{"eyJhbGciOiJIUzI1NiJ9.e30", false, false, false},
		{"ghp_16C7e42F292c6912E7710c838347Ae178B4a", false, true, false},
		{"sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", false, true, false},
		{"3f2504e0-4f89-11d3-9a0c-0305e82c3301", false, false, false},
		{"this-is-a-long-but-harmless-slug-value", false, false, false},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGH", false, false, false},
		{"ann@example.com", false, false, true},
		{"@handle", false, false, false},
	}
	for _, tt := range tests {
		if looksLikeJWT(tt.in) != tt.jwt || looksLikeCredential(tt.in) != tt.cred || looksLikeEmail(tt.in) != tt.emailShape {
			t.Errorf("%q: jwt %v cred %v email %v", tt.in, looksLikeJWT(tt.in), looksLikeCredential(tt.in), looksLikeEmail(tt.in))
		}
	}
}
