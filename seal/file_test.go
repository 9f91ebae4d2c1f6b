package seal

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func b64s(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func TestKeyringFileRoundTrip(t *testing.T) {
	a, b, c := mustKey(t, "a", testSecret(1, 32)), mustKey(t, "b", testSecret(2, 40)), mustKey(t, "c", testSecret(3, 32))
	r := mustKeyring(t, b, c, a)
	data, err := r.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "version": 1,
  "active": "b",
  "keys": [
    {"id": "b", "secret": "` + b64s(testSecret(2, 40)) + `"},
    {"id": "a", "secret": "` + b64s(testSecret(1, 32)) + `"},
    {"id": "c", "secret": "` + b64s(testSecret(3, 32)) + `"}
  ]
}
`
	if string(data) != want {
		t.Fatalf("MarshalFile =\n%s\nwant\n%s", data, want)
	}
	r2, err := ParseKeyringFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Fingerprint().Equal(r.Fingerprint()) {
		t.Fatal("fingerprint changed through the file")
	}
	// Compact form and any key order parse too.
	compact := `{"keys":[{"secret":"` + b64s(testSecret(1, 32)) + `","id":"a"},{"id":"b","secret":"` + b64s(testSecret(2, 40)) + `"},{"id":"c","secret":"` + b64s(testSecret(3, 32)) + `"}],"active":"b","version":1}`
	r3, err := ParseKeyringFile([]byte(compact))
	if err != nil {
		t.Fatal(err)
	}
	if !r3.Fingerprint().Equal(r.Fingerprint()) {
		t.Fatal("compact form")
	}
}

func TestParseKeyringFileErrors(t *testing.T) {
	s1, s2 := b64s(testSecret(1, 32)), b64s(testSecret(2, 32))
	key := func(id, secret string) string { return `{"id":"` + id + `","secret":"` + secret + `"}` }
	file := func(members string) string { return "{" + members + "}" }
	ok := `"version":1,"active":"a","keys":[` + key("a", s1) + `]`
	if _, err := ParseKeyringFile([]byte(file(ok))); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, data, msg string }{
		{"empty", "", "JSON object"},
		{"array", "[]", "JSON object"},
		{"null", "null", "JSON object"},
		{"not json", "version=1", "JSON object"},
		{"trailing", file(ok) + " {}", "trailing data"},
		{"trailing garbage", file(ok) + "x", "trailing data"},
		{"missing version", file(`"active":"a","keys":[` + key("a", s1) + `]`), "missing version"},
		{"version 2", file(`"version":2,"active":"a","keys":[` + key("a", s1) + `]`), "unsupported version 2"},
		{"version 1.0", file(`"version":1.0,"active":"a","keys":[` + key("a", s1) + `]`), "unsupported version"},
		{"version string", file(`"version":"1","active":"a","keys":[` + key("a", s1) + `]`), "must be the number"},
		{"missing active", file(`"version":1,"keys":[` + key("a", s1) + `]`), "missing active"},
		{"active not string", file(`"version":1,"active":1,"keys":[` + key("a", s1) + `]`), "active must be a string"},
		{"active not listed", file(`"version":1,"active":"z","keys":[` + key("a", s1) + `]`), `active key "z" is not listed`},
		{"no keys", file(`"version":1,"active":"a","keys":[]`), "at least the active key"},
		{"missing keys", file(`"version":1,"active":"a"`), "at least the active key"},
		{"keys object", file(`"version":1,"active":"a","keys":{}`), "keys must be an array"},
		{"key not object", file(`"version":1,"active":"a","keys":["a"]`), "must be an object"},
		{"unknown member", file(ok + `,"extra":1`), `unknown member "extra"`},
		{"duplicate member", file(ok + `,"active":"a"`), `"active" appears twice`},
		{"duplicate version", file(`"version":1,` + ok), `"version" appears twice`},
		{"key unknown member", file(`"version":1,"active":"a","keys":[{"id":"a","secret":"` + s1 + `","x":1}]`), `unknown member "x"`},
		{"key duplicate id", file(`"version":1,"active":"a","keys":[{"id":"a","id":"b","secret":"` + s1 + `"}]`), `"id" appears twice`},
		{"key missing secret", file(`"version":1,"active":"a","keys":[{"id":"a"}]`), "id and secret are required"},
		{"key bad id", file(`"version":1,"active":"a b","keys":[` + key("a b", s1) + `]`), "invalid key"},
		{"secret padded", file(`"version":1,"active":"a","keys":[` + key("a", base64.URLEncoding.EncodeToString(testSecret(1, 32))) + `]`), "canonical unpadded base64url"},
		{"secret std alphabet", file(`"version":1,"active":"a","keys":[` + key("a", base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 33))) + `]`), "canonical unpadded base64url"},
		{"secret non-canonical bits", file(`"version":1,"active":"a","keys":[` + key("a", s1[:len(s1)-1]+"B") + `]`), "canonical unpadded base64url"},
		{"secret short", file(`"version":1,"active":"a","keys":[` + key("a", b64s(testSecret(1, 31))) + `]`), "at least 32 bytes"},
		{"secret not string", file(`"version":1,"active":"a","keys":[{"id":"a","secret":5}]`), "secret must be a string"},
		{"duplicate key", file(`"version":1,"active":"a","keys":[` + key("a", s1) + `,` + key("a", s1) + `]`), "listed twice"},
		{"same id other bytes", file(`"version":1,"active":"a","keys":[` + key("a", s1) + `,` + key("a", s2) + `]`), "two different secrets"},
		{"same bytes other id", file(`"version":1,"active":"a","keys":[` + key("a", s1) + `,` + key("b", s1) + `]`), "same secret bytes"},
		{"too large", file(ok) + strings.Repeat(" ", 1<<20), "exceeds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseKeyringFile([]byte(tc.data))
			if err == nil {
				t.Fatalf("parsed: %v", r)
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "seal: keyring file") {
				t.Fatalf("error %q does not contain %q", err, tc.msg)
			}
			for _, s := range []string{s1, s2} {
				if strings.Contains(err.Error(), s[:10]) {
					t.Fatalf("error %q reveals a secret", err)
				}
			}
		})
	}
}

func TestLoadWriteKeyringFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keyring.json")
	r := mustKeyring(t, mustKey(t, "a", testSecret(1, 32)), mustKey(t, "b", testSecret(2, 32)))
	if err := WriteKeyringFile(path, r); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode())
	}
	r2, err := LoadKeyringFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Fingerprint().Equal(r.Fingerprint()) {
		t.Fatal("fingerprint")
	}
	// Overwrite atomically; no temporary files remain.
	r3 := mustKeyring(t, mustKey(t, "c", testSecret(3, 32)))
	if err := WriteKeyringFile(path, r3); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadKeyringFile(path); err != nil || !got.Fingerprint().Equal(r3.Fingerprint()) {
		t.Fatal("overwrite", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries", len(entries))
	}
	// Missing directory.
	if err := WriteKeyringFile(filepath.Join(dir, "no", "such", "k.json"), r); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	if _, err := LoadKeyringFile(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("load of a missing file succeeded")
	}
	if _, err := LoadKeyringFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("load of a directory: %v", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644, 0o660, 0o610, 0o601} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadKeyringFile(path)
		if err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("mode %#o: %v", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o400, 0o600, 0o700} {
		os.Chmod(path, mode)
		if _, err := LoadKeyringFile(path); err != nil {
			t.Fatalf("mode %#o: %v", mode, err)
		}
	}
	// A corrupt file names the path.
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{}"), 0o600)
	if _, err := LoadKeyringFile(filepath.Join(dir, "bad.json")); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Fatalf("corrupt file: %v", err)
	}
}
