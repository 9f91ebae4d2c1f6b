package seal

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestNewKeyValidation(t *testing.T) {
	secret := testSecret(1, 32)
	cases := []struct {
		id     string
		secret []byte
		ok     bool
	}{
		{"2026-08", secret, true},
		{"a", secret, true},
		{strings.Repeat("k", 64), secret, true},
		{"!#$%&'*+-.^_`|~09azAZ", secret, true},
		{"k", testSecret(1, 64), true},
		{"", secret, false},
		{strings.Repeat("k", 65), secret, false},
		{"has space", secret, false},
		{"colon:", secret, false},
		{"slash/", secret, false},
		{"quote\"", secret, false},
		{"comma,", secret, false},
		{"ünïcode", secret, false},
		{"nul\x00", secret, false},
		{"k", testSecret(1, 31), false},
		{"k", nil, false},
	}
	for _, tc := range cases {
		_, err := NewKey(tc.id, tc.secret)
		if (err == nil) != tc.ok {
			t.Errorf("NewKey(%q, %d bytes) error = %v, want ok=%v", tc.id, len(tc.secret), err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidKey) {
			t.Errorf("NewKey(%q) error %v does not match ErrInvalidKey", tc.id, err)
		}
	}
}

func TestKeyDefensiveCopies(t *testing.T) {
	secret := testSecret(1, 32)
	k := mustKey(t, "k", secret)
	secret[0] ^= 0xff
	if got := k.Secret(); got[0] != 1 {
		t.Fatal("NewKey did not copy the secret")
	}
	s := k.Secret()
	s[0] ^= 0xff
	if k.Secret()[0] != 1 {
		t.Fatal("Secret did not return a copy")
	}
	if (Key{}).Secret() != nil || (Key{}).ID() != "" {
		t.Fatal("zero Key")
	}
}

func TestGenerateKey(t *testing.T) {
	a, b := mustGenerate(t, "a"), mustGenerate(t, "b")
	if len(a.Secret()) != MinKeyBytes || bytes.Equal(a.Secret(), b.Secret()) {
		t.Fatal("GenerateKey")
	}
	if _, err := GenerateKey("bad id"); !errors.Is(err, ErrInvalidKey) {
		t.Fatal(err)
	}
}

// secretForms returns encodings of secret that must never appear in output.
func secretForms(secret []byte) []string {
	return []string{
		hex.EncodeToString(secret),
		strings.ToUpper(hex.EncodeToString(secret)),
		base64.StdEncoding.EncodeToString(secret),
		base64.RawURLEncoding.EncodeToString(secret),
		fmt.Sprint(secret), // [1 2 3 ...]
		fmt.Sprintf("%v", secret[:8]),
		string(secret),
		fmt.Sprintf("%#v", secret), // []byte{0x1, ...}
		"0x" + hex.EncodeToString(secret[:8]),
	}
}

func checkNoSecret(t *testing.T, what, out string, secrets ...[]byte) {
	t.Helper()
	for _, s := range secrets {
		for _, form := range secretForms(s) {
			if strings.Contains(out, form) {
				t.Errorf("%s reveals the secret (%q) in %q", what, form, out)
			}
		}
	}
}

// Secrets with printable bytes so that %s or string() leaks would show.
func printableSecret(seed byte) []byte {
	b := make([]byte, 40)
	for i := range b {
		b[i] = 'A' + (seed+byte(i))%26
	}
	return b
}

func TestKeyRedaction(t *testing.T) {
	secret := printableSecret(3)
	k := mustKey(t, "2026-08", secret)
	const want = `seal.Key{id:"2026-08", secret:REDACTED}`

	type holder struct {
		Name string
		key  Key // unexported: fmt prints it through reflection
		Key  Key
		P    *Key
	}
	outputs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10v", "%-v"} {
		outputs["Key "+verb] = fmt.Sprintf(verb, k)
		outputs["*Key "+verb] = fmt.Sprintf(verb, &k)
		outputs["[]Key "+verb] = fmt.Sprintf(verb, []Key{k})
		outputs["map "+verb] = fmt.Sprintf(verb, map[string]Key{"k": k})
		outputs["holder "+verb] = fmt.Sprintf(verb, holder{"n", k, k, &k})
		outputs["*holder "+verb] = fmt.Sprintf(verb, &holder{"n", k, k, &k})
	}
	outputs["String"] = k.String()
	outputs["GoString"] = k.GoString()
	outputs["Sprint"] = fmt.Sprint(k)
	outputs["Sprintln"] = fmt.Sprintln(k)
	outputs["Errorf"] = fmt.Errorf("wrap %v: %w", k, errors.New("x")).Error()
	j, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	outputs["json"] = string(j)
	j, _ = json.Marshal(holder{"n", k, k, &k})
	outputs["json holder"] = string(j)
	txt, _ := k.MarshalText()
	outputs["text"] = string(txt)

	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var buf bytes.Buffer
		l := slog.New(h(&buf))
		l.Info("key", "key", k, "ptr", &k, "any", slog.AnyValue(k), "holder", holder{"n", k, k, &k})
		outputs["slog "+buf.String()[:20]] = buf.String()
	}

	for what, out := range outputs {
		checkNoSecret(t, what, out, secret)
		if !strings.Contains(out, "REDACTED") {
			t.Errorf("%s: %q does not say REDACTED", what, out)
		}
	}
	if got := fmt.Sprintf("%v|%+v|%#v|%s|%x", k, k, k, k, k); got != strings.Repeat(want+"|", 4)+want {
		t.Errorf("formatted = %s", got)
	}
	if got := fmt.Sprintf("%q", k); got != fmt.Sprintf("%q", want) {
		t.Errorf("%%q = %s", got)
	}
	if string(j) == "" || !json.Valid(j) {
		t.Error("invalid JSON")
	}
	if j, _ := json.Marshal(k); string(j) != `{"id":"2026-08","secret":"REDACTED"}` {
		t.Errorf("json = %s", j)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("m", "key", k)
	if !strings.Contains(buf.String(), `"key":{"id":"2026-08","secret":"REDACTED"}`) {
		t.Errorf("slog JSON = %s", buf.String())
	}
}
