package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
)

// MinKeyBytes is the minimum length of a key's secret.
const MinKeyBytes = 32

// MaxKeyIDLength is the maximum length of a key id in bytes.
const MaxKeyIDLength = 64

// maxSealsPerKey bounds the number of tokens sealed under one key in one
// process: with random 96-bit nonces, NIST SP 800-38D limits a key to 2^32
// invocations.
const maxSealsPerKey = 1 << 32

// Key is a request-state protection key: a non-secret id and at least
// [MinKeyBytes] secret bytes. A Key is immutable and safe to copy; copies
// share the derived cipher and the seal counter. The zero Key is invalid.
//
// The secret never appears in formatted, logged or marshalled output; only
// [Key.Secret] returns it.
type Key struct {
	id string
	// material returns the secret state. It is a func rather than a
	// pointer because fmt, when it prints a Key through reflection (for
	// example as an unexported field of another struct, where it cannot
	// call Format), follows pointers in some cases (%s on a pointer field
	// prints the pointee) but always prints a func as a bare address.
	material func() *keyMaterial
}

type keyMaterial struct {
	secret []byte
	fkey   [sha256.Size]byte // fingerprint key, see fingerprint.go
	aead   cipher.AEAD       // AES-256-GCM under the HKDF-derived key
	seals  atomic.Uint64     // tokens sealed under this key in this process
}

// NewKey returns a key with the given id and a copy of secret.
//
// The id must be 1 to 64 bytes of RFC 9110 token characters (letters,
// digits and !#$%&'*+-.^_`|~). It is not secret: it travels in every token.
// The secret must be at least [MinKeyBytes] bytes from a cryptographically
// secure source.
func NewKey(id string, secret []byte) (Key, error) {
	if !validKeyID(id) {
		return Key{}, fmt.Errorf("%w: id must be 1-%d RFC 9110 token characters, got %q", ErrInvalidKey, MaxKeyIDLength, truncateForError(id))
	}
	if len(secret) < MinKeyBytes {
		return Key{}, fmt.Errorf("%w: key %q: secret must be at least %d bytes, got %d", ErrInvalidKey, id, MinKeyBytes, len(secret))
	}
	m := &keyMaterial{secret: append([]byte(nil), secret...)}
	aeadKey, err := deriveAEADKey(m.secret, id)
	if err != nil {
		return Key{}, err
	}
	block, err := aes.NewCipher(aeadKey)
	clear(aeadKey)
	if err != nil {
		return Key{}, err
	}
	if m.aead, err = cipher.NewGCM(block); err != nil {
		return Key{}, err
	}
	mac := hmac.New(sha256.New, fingerprintExtractKey[:])
	mac.Write(m.secret)
	mac.Sum(m.fkey[:0])
	return Key{id: id, material: func() *keyMaterial { return m }}, nil
}

// GenerateKey returns a key with the given id and [MinKeyBytes] fresh bytes
// from crypto/rand.
func GenerateKey(id string) (Key, error) {
	secret := make([]byte, MinKeyBytes)
	rand.Read(secret) // never fails; crashes the program if the OS source does
	k, err := NewKey(id, secret)
	clear(secret)
	return k, err
}

// deriveAEADKey returns HKDF-SHA-256(ikm = secret, salt = aeadSalt,
// info = aeadInfo || 0x00 || id, L = 32).
func deriveAEADKey(secret []byte, id string) ([]byte, error) {
	return hkdf.Key(sha256.New, secret, []byte(aeadSalt), aeadInfo+"\x00"+id, 32)
}

// ID returns the key id.
func (k Key) ID() string { return k.id }

// Secret returns a copy of the secret bytes, for writing keyring files. It is
// nil for the zero Key.
func (k Key) Secret() []byte {
	if k.material == nil {
		return nil
	}
	return append([]byte(nil), k.material().secret...)
}

func (k Key) valid() bool { return k.material != nil }

// mat returns the key's secret state; k must be valid.
func (k Key) mat() *keyMaterial { return k.material() }

// identical reports whether k and o have the same id and the same bytes.
func (k Key) identical(o Key) bool { return k.id == o.id && sameSecret(k, o) }

func sameSecret(a, b Key) bool {
	am, bm := a.mat(), b.mat()
	return am == bm || subtle.ConstantTimeCompare(am.secret, bm.secret) == 1
}

// String returns a redacted description, e.g.
// seal.Key{id:"2026-08", secret:REDACTED}.
func (k Key) String() string {
	return "seal.Key{id:" + strconv.Quote(k.id) + ", secret:REDACTED}"
}

// GoString is the same as [Key.String].
func (k Key) GoString() string { return k.String() }

// Format implements fmt.Formatter so that every verb (%v, %+v, %#v, %s,
// %x, %d, ...) prints the redacted form; %q quotes it.
func (k Key) Format(f fmt.State, verb rune) { formatRedacted(f, verb, k.String()) }

// LogValue implements slog.LogValuer: a group with the id and a redacted
// secret.
func (k Key) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", k.id), slog.String("secret", "REDACTED"))
}

// MarshalJSON returns {"id":"<id>","secret":"REDACTED"}. Keys cannot be
// unmarshalled; use [ParseKeyringFile].
func (k Key) MarshalJSON() ([]byte, error) {
	b := []byte(`{"id":`)
	b = strconv.AppendQuote(b, k.id) // ids are ASCII token characters: valid JSON
	return append(b, `,"secret":"REDACTED"}`...), nil
}

// MarshalText returns the redacted form of [Key.String].
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func formatRedacted(f fmt.State, verb rune, s string) {
	if verb == 'q' {
		s = strconv.Quote(s)
	}
	f.Write([]byte(s))
}

// validKeyID reports whether id is 1-64 RFC 9110 token characters.
func validKeyID(id string) bool {
	if len(id) == 0 || len(id) > MaxKeyIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isTokenChar(id[i]) {
			return false
		}
	}
	return true
}

func validKeyIDBytes(id []byte) bool {
	if len(id) == 0 || len(id) > MaxKeyIDLength {
		return false
	}
	for _, c := range id {
		if !isTokenChar(c) {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func truncateForError(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
