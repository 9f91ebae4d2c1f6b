package seal

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/weftmcp/weft/internal/race"
)

func isInvalid(err error) bool { return errors.Is(err, ErrInvalidState) }

func TestRoundTrip(t *testing.T) {
	k := mustKey(t, "2026-08", testSecret(1, 32))
	m := NewManager(mustKeyring(t, k), &ManagerOptions{MaxTokenBytes: 1 << 17})
	cases := []struct {
		name               string
		binding, plaintext []byte
	}{
		{"empty", nil, nil},
		{"empty-binding", nil, []byte(`{"a":1}`)},
		{"empty-plaintext", []byte("binding"), nil},
		{"small", []byte("/mcp\x00tools/call"), []byte(`{"state":{"phase":"approve"}}`)},
		{"binary", bytes.Repeat([]byte{0, 0xff}, 100), bytes.Repeat([]byte{0xfe, 0}, 1000)},
		{"48KiB", []byte("b"), bytes.Repeat([]byte("x"), 48<<10)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok := mustSeal(t, m, tc.binding, tc.plaintext)
			if !strings.HasPrefix(tok, TokenPrefix) {
				t.Fatalf("token %q lacks prefix", tok[:10])
			}
			if want := sealedLen(len(k.ID()), len(tc.plaintext)); len(tok) != want {
				t.Errorf("len(token) = %d, want %d", len(tok), want)
			}
			got, err := m.Open(bg, tok, tc.binding)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !bytes.Equal(got, tc.plaintext) || got == nil {
				t.Fatalf("Open = %q (nil=%v), want %q", got, got == nil, tc.plaintext)
			}
			// Two seals of the same input differ (random nonces).
			if tok2 := mustSeal(t, m, tc.binding, tc.plaintext); tok2 == tok {
				t.Fatal("two seals produced the same token")
			}
		})
	}
}

// decodeBody returns the decoded envelope of a token.
func decodeBody(t testing.TB, tok string) []byte {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, TokenPrefix))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func encodeBody(raw []byte) string { return TokenPrefix + base64.RawURLEncoding.EncodeToString(raw) }

func TestEveryBitFlipFails(t *testing.T) {
	m := NewManager(mustKeyring(t, mustKey(t, "k1", testSecret(1, 32)), mustKey(t, "k2", testSecret(2, 32))), nil)
	binding := []byte("endpoint=/mcp;method=tools/call")
	tok := mustSeal(t, m, binding, []byte(`{"phase":"one"}`))
	raw := decodeBody(t, tok)
	for i := range raw {
		for bit := range 8 {
			mut := bytes.Clone(raw)
			mut[i] ^= 1 << bit
			_, err := m.Open(bg, encodeBody(mut), binding)
			if err == nil {
				t.Fatalf("flip byte %d bit %d: Open succeeded", i, bit)
			}
			wantInvalid(t, err, "")
		}
	}
}

func TestEveryBindingFlipFails(t *testing.T) {
	m := NewManager(mustKeyring(t, mustKey(t, "k1", testSecret(1, 32))), nil)
	binding := []byte("endpoint=/mcp;version=2026-07-28;method=tools/call;partition=alice;digest=0123456789abcdef")
	tok := mustSeal(t, m, binding, []byte(`{"phase":"one"}`))
	for i := range binding {
		for bit := range 8 {
			mut := bytes.Clone(binding)
			mut[i] ^= 1 << bit
			_, err := m.Open(bg, tok, mut)
			wantInvalid(t, err, ReasonAuthFailed)
		}
	}
	// Truncated, extended and empty bindings fail too.
	for _, b := range [][]byte{binding[:len(binding)-1], append(bytes.Clone(binding), 0), nil} {
		_, err := m.Open(bg, tok, b)
		wantInvalid(t, err, ReasonAuthFailed)
	}
}

func TestMalformedTokens(t *testing.T) {
	k := mustKey(t, "k1", testSecret(1, 32))
	m := NewManager(mustKeyring(t, k), nil)
	binding := []byte("b")
	tok := mustSeal(t, m, binding, []byte("hello"))
	raw := decodeBody(t, tok)
	body := strings.TrimPrefix(tok, TokenPrefix)

	withHeader := func(f func(raw []byte) []byte) string { return encodeBody(f(bytes.Clone(raw))) }
	cases := []struct {
		name, token, reason string
	}{
		{"empty", "", ReasonMalformed},
		{"prefix-only", TokenPrefix, ReasonMalformed},
		{"no-prefix", body, ReasonMalformed},
		{"wrong-prefix", "weft2." + body, ReasonMalformed},
		{"upper-prefix", "WEFT1." + body, ReasonMalformed},
		{"prefix-without-dot", "weft1" + body, ReasonMalformed},
		{"padding", tok + strings.Repeat("=", (4-len(body)%4)%4+4), ReasonMalformed},
		{"std-alphabet", TokenPrefix + base64.RawStdEncoding.EncodeToString(append(bytes.Clone(raw), 0xfb, 0xff)), ReasonMalformed},
		{"newline", tok[:20] + "\n" + tok[20:], ReasonMalformed},
		{"cr", tok[:20] + "\r" + tok[20:], ReasonMalformed},
		{"space", tok + " ", ReasonMalformed},
		{"impossible-length", tok + strings.Repeat("A", (5-len(body)%4)%4), ReasonMalformed},
		{"truncated-to-header", withHeader(func(r []byte) []byte { return r[:2+2] }), ReasonMalformed},
		{"short-by-one", withHeader(func(r []byte) []byte { return r[:2+2+nonceSize+tagSize-1] }), ReasonMalformed},
		{"version-0", withHeader(func(r []byte) []byte { r[0] = 0; return r }), ReasonMalformed},
		{"version-2", withHeader(func(r []byte) []byte { r[0] = 2; return r }), ReasonMalformed},
		{"id-len-0", withHeader(func(r []byte) []byte { r[1] = 0; return r }), ReasonMalformed},
		{"id-len-65", withHeader(func(r []byte) []byte {
			return append([]byte{1, 65}, bytes.Repeat([]byte("a"), 65+nonceSize+tagSize)...)
		}), ReasonMalformed},
		{"id-len-beyond-end", withHeader(func(r []byte) []byte { r[1] = 255; return r }), ReasonMalformed},
		{"id-non-token", withHeader(func(r []byte) []byte { r[2] = ' '; return r }), ReasonMalformed},
		{"unknown-key", withHeader(func(r []byte) []byte { r[3] = '9'; return r }), ReasonUnknownKey},
		{"extended", withHeader(func(r []byte) []byte { return append(r, 0) }), ReasonAuthFailed},
		{"truncated-tag", withHeader(func(r []byte) []byte { return r[:len(r)-1] }), ReasonAuthFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Open(bg, tc.token, binding)
			wantInvalid(t, err, tc.reason)
		})
	}
	// Every proper prefix and every one-character extension of the token fails.
	for i := range len(tok) {
		if _, err := m.Open(bg, tok[:i], binding); err == nil {
			t.Fatalf("truncation to %d characters opened", i)
		}
	}
	for _, c := range "AQgw-_=" {
		if _, err := m.Open(bg, tok+string(c), binding); err == nil {
			t.Fatalf("extension by %q opened", c)
		}
	}
}

func TestNonCanonicalBase64(t *testing.T) {
	m := NewManager(mustKeyring(t, mustKey(t, "k1", testSecret(1, 32))), nil)
	// Find a token whose last base64 character carries unused low bits, and
	// set them: the decoded bytes are unchanged, the string is not canonical.
	for n := range 3 {
		tok := mustSeal(t, m, nil, make([]byte, n))
		body := strings.TrimPrefix(tok, TokenPrefix)
		var unused int
		switch len(body) % 4 {
		case 2:
			unused = 4
		case 3:
			unused = 2
		default:
			continue
		}
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		last := strings.IndexByte(alphabet, body[len(body)-1])
		for v := 1; v < 1<<unused; v++ {
			alt := TokenPrefix + body[:len(body)-1] + string(alphabet[last|v])
			// The lenient decoder maps alt to the same bytes ...
			a, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(alt, TokenPrefix))
			if !bytes.Equal(a, decodeBody(t, tok)) {
				t.Fatalf("test bug: alt decodes differently")
			}
			// ... but Open rejects it.
			_, err := m.Open(bg, alt, nil)
			wantInvalid(t, err, ReasonMalformed)
		}
		return
	}
	t.Fatal("test bug: no token with unused bits")
}

func TestOversizeToken(t *testing.T) {
	k := mustKey(t, "k1", testSecret(1, 32))
	m := NewManager(mustKeyring(t, k), &ManagerOptions{MaxTokenBytes: 200})
	// The largest plaintext that fits seals and opens.
	n := 0
	for sealedLen(len(k.ID()), n+1) <= 200 {
		n++
	}
	tok := mustSeal(t, m, nil, make([]byte, n))
	if _, err := m.Open(bg, tok, nil); err != nil {
		t.Fatalf("Open of a maximal token: %v", err)
	}
	// One more byte does not seal.
	if _, err := m.Seal(bg, nil, make([]byte, n+1)); !errors.Is(err, ErrStateTooLarge) {
		t.Fatalf("Seal of oversize plaintext: %v, want ErrStateTooLarge", err)
	}
	// A token longer than the limit is rejected before decoding, even if valid.
	big := NewManager(mustKeyring(t, k), nil)
	long := mustSeal(t, big, nil, make([]byte, n+10))
	if _, err := big.Open(bg, long, nil); err != nil {
		t.Fatal(err)
	}
	_, err := m.Open(bg, long, nil)
	wantInvalid(t, err, ReasonTooLarge)
	_, err = m.Open(bg, strings.Repeat("!", 201), nil)
	wantInvalid(t, err, ReasonTooLarge)
	// The default limit.
	def := NewManager(mustKeyring(t, k), nil)
	_, err = def.Open(bg, TokenPrefix+strings.Repeat("A", DefaultMaxTokenBytes), nil)
	wantInvalid(t, err, ReasonTooLarge)
	// The largest plaintext under the default limit: (65536-6)*3/4 bytes of
	// envelope, less 2+len(id)+12+16 bytes of overhead.
	maxPlain := (DefaultMaxTokenBytes-len(TokenPrefix))*3/4 - (2 + len(k.ID()) + nonceSize + tagSize)
	if _, err := def.Seal(bg, nil, make([]byte, maxPlain)); err != nil {
		t.Fatalf("default limit must fit %d bytes of plaintext: %v", maxPlain, err)
	}
	if _, err := def.Seal(bg, nil, make([]byte, maxPlain+1)); !errors.Is(err, ErrStateTooLarge) {
		t.Fatalf("Seal of %d bytes: %v", maxPlain+1, err)
	}
}

func TestNegativeMaxTokenBytesPanics(t *testing.T) {
	k := mustKey(t, "k1", testSecret(1, 32))
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	NewManager(mustKeyring(t, k), &ManagerOptions{MaxTokenBytes: -1})
}

func TestKeyExhausted(t *testing.T) {
	k := mustKey(t, "k1", testSecret(1, 32))
	m := NewManager(mustKeyring(t, k), nil)
	k.mat().seals.Store(maxSealsPerKey - 1)
	tok := mustSeal(t, m, nil, []byte("last")) // seal number 2^32 succeeds
	if _, err := m.Seal(bg, nil, []byte("x")); !errors.Is(err, ErrKeyExhausted) {
		t.Fatalf("Seal after 2^32 seals: %v, want ErrKeyExhausted", err)
	}
	if _, err := m.Reserve(); !errors.Is(err, ErrKeyExhausted) {
		t.Fatalf("Reserve: %v, want ErrKeyExhausted", err)
	}
	// Opening still works; rotation restores sealing.
	if _, err := m.Open(bg, tok, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Rotate(mustKey(t, "k2", testSecret(2, 32))); err != nil {
		t.Fatal(err)
	}
	mustSeal(t, m, nil, []byte("x"))
	// The exhausted key cannot be re-activated.
	if err := m.Activate("k1"); !errors.Is(err, ErrKeyExhausted) {
		t.Fatalf("Activate(exhausted): %v", err)
	}
	if got := m.Snapshot().ActiveID; got != "k2" {
		t.Fatalf("active = %q after failed Activate", got)
	}
}

func TestSealFailsOnNonceSource(t *testing.T) {
	m := NewManager(mustKeyring(t, mustKey(t, "k1", testSecret(1, 32))), nil)
	m.nonces = bytes.NewReader(make([]byte, 5))
	if _, err := m.Seal(bg, nil, nil); err == nil {
		t.Fatal("Seal succeeded with a short nonce source")
	}
}

func TestOpenErrorAndReason(t *testing.T) {
	err := error(&OpenError{Reason: ReasonAuthFailed})
	if !errors.Is(err, ErrInvalidState) || err.Error() != "seal: invalid request state" {
		t.Fatal(err)
	}
	wrapped := errors.Join(errors.New("ctx"), err)
	if Reason(wrapped) != ReasonAuthFailed {
		t.Fatal(Reason(wrapped))
	}
	if Reason(ErrInvalidState) != "" || Reason(nil) != "" {
		t.Fatal("Reason of a bare sentinel")
	}
}

func TestEncodeB64MatchesStdlib(t *testing.T) {
	src := make([]byte, 300)
	for i := range src {
		src[i] = byte(i*151 + 7)
	}
	for n := range len(src) + 1 {
		want := base64.RawURLEncoding.EncodeToString(src[:n])
		got := make([]byte, len(want))
		encodeB64(got, src[:n])
		if string(got) != want {
			t.Fatalf("encodeB64 of %d bytes = %q, want %q", n, got, want)
		}
	}
}

func FuzzEncodeB64(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xfe, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, src []byte) {
		want := base64.RawURLEncoding.EncodeToString(src)
		got := make([]byte, len(want))
		encodeB64(got, src)
		if string(got) != want {
			t.Fatalf("encodeB64(%x) = %q, want %q", src, got, want)
		}
	})
}

func FuzzDecodeB64(f *testing.F) {
	f.Add("")
	f.Add("QUJD")
	f.Add("QUJDREVGR0hJSktM-_0123")
	f.Add("QUJDREVGR0hJS*tM")
	f.Add("QUJDREVGR0hJSktMTQ")
	f.Add("QUJDREVGR0hJSktMTR")
	f.Add("QUJDREVGR0hJSktMTQ\n")
	f.Add("QUJD\rREVG")
	f.Add("QUJDREVGR0hJSktMTUZ")
	f.Fuzz(func(t *testing.T, s string) {
		want, werr := b64.DecodeString(s)
		if strings.ContainsAny(s, "\r\n") {
			werr = errors.New("CR or LF") // skipped by the standard library, refused here
		}
		got := make([]byte, b64.DecodedLen(len(s)))
		n, ok := decodeB64(got, s)
		if (werr == nil) != ok {
			t.Fatalf("decodeB64(%q): ok %v, stdlib %v", s, ok, werr)
		}
		if ok && !bytes.Equal(got[:n], want) {
			t.Fatalf("decodeB64(%q) = %x, want %x", s, got[:n], want)
		}
	})
}

// TestOpenAllocatesOnlyThePlaintext: Open decodes and authenticates in one
// allocation, the plaintext, with no spare capacity kept alive by it (the
// AAD is built in pooled scratch), whatever the key id length. The race
// detector makes sync.Pool drop a random share of what is put back, so the
// allocation count is checked only without it (`make test` runs this test
// once more without -race for that).
func TestOpenAllocatesOnlyThePlaintext(t *testing.T) {
	for _, id := range []string{"k", "2026-08", strings.Repeat("x", MaxKeyIDLength)} {
		k := mustKey(t, id, testSecret(3, 32))
		m := NewManager(mustKeyring(t, k), nil)
		binding := []byte("binding bytes")
		tok := mustSeal(t, m, binding, []byte("plaintext"))
		pt, err := m.Open(context.Background(), tok, binding)
		if err != nil {
			t.Fatal(err)
		}
		// The plaintext is decrypted in place: only the tag follows it.
		if spare := cap(pt) - len(pt); spare != tagSize {
			t.Errorf("id %q: plaintext has %d bytes of capacity past it, want the tag's %d", id, spare, tagSize)
		}
		if race.Enabled {
			continue
		}
		allocs := testing.AllocsPerRun(50, func() {
			if _, err := m.Open(context.Background(), tok, binding); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 1 {
			t.Errorf("id %q: Open made %v allocations, want 1", id, allocs)
		}
	}
}
