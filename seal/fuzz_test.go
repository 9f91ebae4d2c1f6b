package seal

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// fuzzOpenSetup returns a manager holding the keys of the envelope test
// vectors and the (token, binding) -> plaintext pairs that Seal produced
// for them: the only inputs FuzzOpen may see succeed.
func fuzzOpenSetup(f *testing.F) (*Manager, map[[2]string]string) {
	data, err := os.ReadFile(vectorsPath)
	if err != nil {
		f.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(data, &vf); err != nil {
		f.Fatal(err)
	}
	var keys []Key
	valid := map[[2]string]string{}
	for _, v := range vf.Envelope {
		k := mustKey(f, v.KeyID, unhexF(f, v.SecretHex))
		keys = append(keys, k)
		binding, plaintext := unhexF(f, v.BindingHex), unhexF(f, v.PlaintextHex)
		tok := mustSeal(f, fixedNonceManager(mustKeyring(f, k), unhexF(f, v.NonceHex)), binding, plaintext)
		valid[[2]string{tok, string(binding)}] = string(plaintext)
		f.Add(tok, binding)
		f.Add(tok, append(bytes.Clone(binding), 'x'))
		f.Add(tok[:len(tok)-1], binding)
		f.Add(tok+"A", binding)
		f.Add(strings.Replace(tok, "weft1.", "weft2.", 1), binding)
	}
	f.Add("", []byte(nil))
	f.Add("weft1.", []byte(nil))
	f.Add("weft1.AQ", []byte(nil))
	return NewManager(mustKeyring(f, keys[0], keys[1:]...), &ManagerOptions{MaxTokenBytes: 4096}), valid
}

func unhexF(f *testing.F, s string) []byte {
	b, err := hexDecode(s)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func FuzzOpen(f *testing.F) {
	m, valid := fuzzOpenSetup(f)
	reasons := map[string]bool{ReasonMalformed: true, ReasonTooLarge: true, ReasonUnknownKey: true, ReasonAuthFailed: true}
	f.Fuzz(func(t *testing.T, token string, binding []byte) {
		pt, err := m.Open(bg, token, binding)
		if err == nil {
			want, ok := valid[[2]string{token, string(binding)}]
			if !ok {
				t.Fatalf("Open succeeded for a token Seal did not produce: %q", token)
			}
			if string(pt) != want {
				t.Fatalf("Open = %q, want %q", pt, want)
			}
			return
		}
		if !isInvalid(err) || !reasons[Reason(err)] || err.Error() != string(ErrInvalidState) {
			t.Fatalf("Open error %v (reason %q)", err, Reason(err))
		}
		// Canonical decoding: whatever parses re-encodes to the same text.
		if p, reason := parseToken(token, m.maxTokenBytes); reason == "" {
			if re := TokenPrefix + b64.EncodeToString(p.raw); re != token {
				t.Fatalf("parsed token re-encodes differently:\n%q\n%q", token, re)
			}
		}
	})
}

func FuzzKeyringFile(f *testing.F) {
	r := mustKeyring(f, mustKey(f, "2026-08", testSecret(0, 32)), mustKey(f, "2026-07", testSecret(32, 48)))
	good, _ := r.MarshalFile()
	f.Add(good)
	f.Add([]byte(`{"version":1,"active":"a","keys":[{"id":"a","secret":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"}]}`))
	f.Add([]byte(`{"version":1,"active":"a","keys":[{"id":"a","secret":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"},{"id":"a","secret":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"version":1,"version":1}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseKeyringFile(data)
		if err != nil {
			if r != nil {
				t.Fatal("keyring returned with an error")
			}
			return
		}
		out, err := r.MarshalFile()
		if err != nil {
			t.Fatal(err)
		}
		r2, err := ParseKeyringFile(out)
		if err != nil {
			t.Fatalf("MarshalFile output does not parse: %v\n%s", err, out)
		}
		if !r2.Fingerprint().Equal(r.Fingerprint()) {
			t.Fatal("fingerprint changed through MarshalFile")
		}
		if out2, _ := r2.MarshalFile(); !bytes.Equal(out, out2) {
			t.Fatal("MarshalFile is not stable")
		}
	})
}
