package auth

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftmcp/weft"
)

const (
	aliceToken = "alice-0123456789abcdef"
	bobToken   = "bob-0123456789abcdef.~+/=="
)

func writeFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

const tokensJSON = `{"tokens":[
 {"token":"` + aliceToken + `","principal":"alice","partition":"tenant-a","scopes":["mcp:read","mcp:write"]},
 {"token":"` + bobToken + `","principal":"bob"}
]}`

func TestLoadStaticTokens(t *testing.T) {
	st, err := LoadStaticTokens(writeFile(t, tokensJSON, 0o600))
	if err != nil {
		t.Fatal(err)
	}
	if st.Len() != 2 {
		t.Fatalf("Len = %d", st.Len())
	}
	id, err := st.Lookup(aliceToken)
	if err != nil || id.Principal != "alice" || id.Partition != "tenant-a" || strings.Join(id.Scopes, ",") != "mcp:read,mcp:write" {
		t.Errorf("alice = %+v, %v", id, err)
	}
	id, err = st.Lookup(bobToken)
	if err != nil || id.Principal != "bob" || id.Partition != "bob" || len(id.Scopes) != 0 {
		t.Errorf("bob = %+v, %v (partition should default to the principal)", id, err)
	}
	for _, bad := range []string{"alice-0123456789abcdeF", aliceToken + "x", aliceToken[:len(aliceToken)-1], "nobody"} {
		if _, err := st.Lookup(bad); !errors.Is(err, ErrUnknownToken) {
			t.Errorf("Lookup(near miss) = %v, want ErrUnknownToken", err)
		}
	}
	if _, err := st.Lookup(""); !errors.Is(err, ErrNoToken) {
		t.Errorf("Lookup(\"\") = %v", err)
	}
	// Only digests are stored.
	for _, e := range st.entries {
		if strings.Contains(string(e.digest[:]), "alice-") {
			t.Error("token stored in clear")
		}
	}
}

func TestLoadStaticTokensRefuses(t *testing.T) {
	secret := "s3cret-0123456789abcdef"
	cases := []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
	}{
		{"world readable", tokensJSON, 0o644, "chmod 600"},
		{"group readable", tokensJSON, 0o640, "chmod 600"},
		{"group writable", tokensJSON, 0o620, "chmod 600"},
		{"duplicate", `{"tokens":[{"token":"` + secret + `","principal":"a"},{"token":"` + secret + `","principal":"b"}]}`, 0o600, "same token as tokens[0]"},
		{"short", `{"tokens":[{"token":"short","principal":"a"}]}`, 0o600, "at least 16"},
		{"bad characters", `{"tokens":[{"token":"` + secret + ` with space","principal":"a"}]}`, 0o600, "b64token"},
		{"no principal", `{"tokens":[{"token":"` + secret + `"}]}`, 0o600, "principal is required"},
		{"empty list", `{"tokens":[]}`, 0o600, "no tokens"},
		{"unknown field", `{"tokens":[{"token":"` + secret + `","principal":"a","admin":true}]}`, 0o600, "unknown field"},
		{"bad scope", `{"tokens":[{"token":"` + secret + `","principal":"a","scopes":["a b"]}]}`, 0o600, "not a valid scope"},
		{"long partition", `{"tokens":[{"token":"` + secret + `","principal":"a","partition":"` + strings.Repeat("p", 257) + `"}]}`, 0o600, "at most 256"},
		{"syntax error", `{"tokens":[{"token":"` + secret + `" "principal":"a"}]}`, 0o600, "invalid JSON at byte offset"},
		{"wrong type", `{"tokens":[{"token":"` + secret + `","principal":7}]}`, 0o600, "wrong JSON type"},
		{"trailing data", tokensJSON + `{}`, 0o600, "trailing data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadStaticTokens(writeFile(t, tc.content, tc.mode))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
			assertNoSecret(t, "error", err.Error(), secret, aliceToken, bobToken)
		})
	}
	if _, err := LoadStaticTokens(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing file loaded")
	}
	if _, err := LoadStaticTokens(t.TempDir()); err == nil || !strings.Contains(err.Error(), "regular file") {
		t.Errorf("directory: %v", err)
	}
}

func TestStaticAdmission(t *testing.T) {
	st, err := LoadStaticTokens(writeFile(t, tokensJSON, 0o600))
	if err != nil {
		t.Fatal(err)
	}
	meta := validMeta()
	admit := st.Admission(meta)
	ctx := context.Background()
	mu := meta.MetadataURL()

	_, err = admit(ctx, &weft.AdmissionRequest{Method: "tools/list", Header: http.Header{}})
	ae := asAdmission(t, err, 401)
	if ae.Challenge != `Bearer resource_metadata="`+mu+`", scope="mcp:read mcp:write"` {
		t.Errorf("missing token challenge = %s", ae.Challenge)
	}

	wrong := "wrong-0123456789abcdef"
	_, err = admit(ctx, &weft.AdmissionRequest{Method: "tools/list", BearerToken: wrong})
	ae = asAdmission(t, err, 401)
	if !strings.Contains(ae.Challenge, `error="invalid_token"`) || !strings.Contains(ae.Challenge, `resource_metadata="`+mu+`"`) {
		t.Errorf("unknown token challenge = %s", ae.Challenge)
	}
	assertNoSecret(t, "rejection", ae.Error()+ae.Message+ae.Challenge, wrong)

	id, err := admit(ctx, &weft.AdmissionRequest{Method: "tools/list", BearerToken: aliceToken})
	if err != nil || id.Principal != "alice" || id.Partition != "tenant-a" {
		t.Errorf("alice = %+v, %v", id, err)
	}
	// Without metadata there is no resource_metadata parameter.
	_, err = st.Admission(nil)(ctx, &weft.AdmissionRequest{Method: "tools/list"})
	if ae := asAdmission(t, err, 401); ae.Challenge != "Bearer" {
		t.Errorf("nil metadata challenge = %s", ae.Challenge)
	}
}
