package seal

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateVectors = flag.Bool("update-vectors", false, "recompute the outputs in testdata/vectors.json from its inputs")

const vectorsPath = "testdata/vectors.json"

// vectorFile is testdata/vectors.json. Inputs are hex (binary) or text;
// every other field is an output that the test recomputes and compares.
type vectorFile struct {
	Comment      string              `json:"comment"`
	Envelope     []envelopeVector    `json:"envelope"`
	Fingerprints []fingerprintVector `json:"fingerprints"`
}

type envelopeVector struct {
	Name string `json:"name"`
	// Inputs.
	KeyID        string `json:"keyID"`
	SecretHex    string `json:"secretHex"`
	NonceHex     string `json:"nonceHex"`
	BindingHex   string `json:"bindingHex"`
	PlaintextHex string `json:"plaintextHex"`
	// Outputs.
	AEADKeyHex  string `json:"aeadKeyHex"`
	HeaderHex   string `json:"headerHex"`
	AADHex      string `json:"aadHex"`
	EnvelopeHex string `json:"envelopeHex"` // decoded token body
	Token       string `json:"token"`
}

type vectorKey struct {
	ID        string `json:"id"`
	SecretHex string `json:"secretHex"`
}

type fingerprintVector struct {
	Name         string      `json:"name"`
	Active       vectorKey   `json:"active"`
	Verification []vectorKey `json:"verification"`
	Fingerprint  string      `json:"fingerprint"` // output
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVectors(t *testing.T) {
	data, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&vf); err != nil {
		t.Fatal(err)
	}
	if len(vf.Envelope) == 0 || len(vf.Fingerprints) == 0 {
		t.Fatal("no vectors")
	}
	for i := range vf.Envelope {
		v := &vf.Envelope[i]
		t.Run("envelope/"+v.Name, func(t *testing.T) {
			k := mustKey(t, v.KeyID, unhex(t, v.SecretHex))
			nonce, binding, plaintext := unhex(t, v.NonceHex), unhex(t, v.BindingHex), unhex(t, v.PlaintextHex)
			aeadKey, err := deriveAEADKey(k.Secret(), k.ID())
			if err != nil {
				t.Fatal(err)
			}
			header := append([]byte{envelopeVersion, byte(len(v.KeyID))}, v.KeyID...)
			aad := appendAAD(nil, header, binding)
			m := fixedNonceManager(mustKeyring(t, k), nonce)
			tok := mustSeal(t, m, binding, plaintext)
			got := envelopeVector{
				Name: v.Name, KeyID: v.KeyID, SecretHex: v.SecretHex, NonceHex: v.NonceHex,
				BindingHex: v.BindingHex, PlaintextHex: v.PlaintextHex,
				AEADKeyHex:  hex.EncodeToString(aeadKey),
				HeaderHex:   hex.EncodeToString(header),
				AADHex:      hex.EncodeToString(aad),
				EnvelopeHex: hex.EncodeToString(decodeBody(t, tok)),
				Token:       tok,
			}
			if *updateVectors {
				*v = got
			} else if got != *v {
				gj, _ := json.MarshalIndent(got, "", "  ")
				t.Fatalf("vector mismatch; computed:\n%s", gj)
			}
			// The published token opens (with any manager holding the key)
			// and yields the plaintext.
			pt, err := NewManager(mustKeyring(t, k), nil).Open(bg, v.Token, binding)
			if err != nil || !bytes.Equal(pt, plaintext) {
				t.Fatalf("Open(vector token) = %q, %v", pt, err)
			}
		})
	}
	for i := range vf.Fingerprints {
		v := &vf.Fingerprints[i]
		t.Run("fingerprint/"+v.Name, func(t *testing.T) {
			ver := make([]Key, len(v.Verification))
			for j, vk := range v.Verification {
				ver[j] = mustKey(t, vk.ID, unhex(t, vk.SecretHex))
			}
			r := mustKeyring(t, mustKey(t, v.Active.ID, unhex(t, v.Active.SecretHex)), ver...)
			got := r.Fingerprint().String()
			if *updateVectors {
				v.Fingerprint = got
			} else if got != v.Fingerprint {
				t.Fatalf("fingerprint = %s, want %s", got, v.Fingerprint)
			}
		})
	}
	if *updateVectors {
		out, err := json.MarshalIndent(vf, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.FromSlash(vectorsPath), append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("rewrote", vectorsPath)
	}
}
