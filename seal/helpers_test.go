package seal

import (
	"bytes"
	"context"
	"encoding/hex"
	"testing"
)

var bg = context.Background()

// testSecret returns n deterministic secret bytes starting at seed.
func testSecret(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i)
	}
	return b
}

func mustKey(t testing.TB, id string, secret []byte) Key {
	t.Helper()
	k, err := NewKey(id, secret)
	if err != nil {
		t.Fatalf("NewKey(%q): %v", id, err)
	}
	return k
}

func mustGenerate(t testing.TB, id string) Key {
	t.Helper()
	k, err := GenerateKey(id)
	if err != nil {
		t.Fatalf("GenerateKey(%q): %v", id, err)
	}
	return k
}

func mustKeyring(t testing.TB, active Key, verification ...Key) *Keyring {
	t.Helper()
	r, err := NewKeyring(active, verification...)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	return r
}

// repeatReader yields the same bytes forever, so a manager using it seals
// deterministically.
type repeatReader struct{ b []byte }

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.b[i%len(r.b)]
	}
	return len(p), nil
}

// fixedNonceManager returns a manager over r whose nonces are always nonce.
func fixedNonceManager(r *Keyring, nonce []byte) *Manager {
	m := NewManager(r, nil)
	m.nonces = repeatReader{bytes.Clone(nonce)}
	return m
}

func mustSeal(t testing.TB, m *Manager, binding, plaintext []byte) string {
	t.Helper()
	tok, err := m.Seal(bg, binding, plaintext)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return tok
}

// wantInvalid checks that err is an *OpenError matching ErrInvalidState
// with the given reason ("" accepts any reason).
func wantInvalid(t testing.TB, err error, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Open succeeded, want ErrInvalidState (%s)", reason)
	}
	if !isInvalid(err) {
		t.Fatalf("Open error %v does not match ErrInvalidState", err)
	}
	if err.Error() != string(ErrInvalidState) {
		t.Fatalf("Open error text %q reveals more than %q", err.Error(), ErrInvalidState)
	}
	if got := Reason(err); reason != "" && got != reason {
		t.Fatalf("Reason = %q, want %q", got, reason)
	}
}

func hexDecode(s string) ([]byte, error) { return hex.DecodeString(s) }
