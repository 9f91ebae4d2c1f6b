package auth

import (
	"context"
	"strings"
	"testing"
	"time"
)

// FuzzValidate feeds arbitrary strings to the token validator as bearer
// tokens: none may panic, validate, or come back in the error text. Seeds
// are in testdata/fuzz/FuzzValidate, plus tokens made here with a key the
// validator trusts (tampered, expired, for the wrong audience), so that
// mutations start close to valid tokens.
func FuzzValidate(f *testing.F) {
	trusted := newECKey(f, "fuzz")
	now := time.Unix(1_800_000_000, 0)
	v := &JWTValidator{
		Issuer:     testIssuer,
		Audience:   testResource,
		JWKS:       StaticKeys{trusted.pub},
		Algorithms: []string{"ES256", "RS256", "EdDSA", "HS256"},
		Now:        func() time.Time { return now },
	}
	expired := with(claimsAt(now), "exp", now.Add(-time.Hour).Unix(), "iat", now.Add(-2*time.Hour).Unix(), "nbf", nil)
	f.Add(sign(f, trusted, expired, signOpts{}))
	f.Add(sign(f, trusted, with(claimsAt(now), "aud", "https://other.example.com"), signOpts{}))
	f.Add(sign(f, trusted, with(claimsAt(now), "iss", "https://evil.example.com"), signOpts{}))
	f.Add(sign(f, trusted, with(claimsAt(now), "exp", nil), signOpts{}))
	valid := sign(f, trusted, claimsAt(now), signOpts{})
	// The valid token with its last signature character changed.
	last := valid[len(valid)-1]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	f.Add(valid[:len(valid)-1] + string(repl))
	f.Add(strings.Replace(valid, ".", "..", 1))

	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Validate(context.Background(), token)
		if err == nil {
			t.Fatalf("an arbitrary token validated: %+v", c)
		}
		if len(token) >= 24 && strings.Contains(err.Error(), token) {
			t.Fatalf("the error quotes the token: %v", err)
		}
	})
}
