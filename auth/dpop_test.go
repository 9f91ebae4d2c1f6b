package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/weftmcp/weft"
)

type proofOpts struct {
	typ   string
	htm   string
	htu   string
	iat   time.Time
	jti   string
	ath   string
	nonce string
}

func newProofKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// makeProof signs a DPoP proof with key.
func makeProof(t testing.TB, key *ecdsa.PrivateKey, o proofOpts) string {
	t.Helper()
	if o.typ == "" {
		o.typ = "dpop+jwt"
	}
	if o.jti == "" {
		o.jti = base64.RawURLEncoding.EncodeToString([]byte(time.Now().String() + o.htu + o.nonce))
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		o.jti = base64.RawURLEncoding.EncodeToString(b)
	}
	opts := (&jose.SignerOptions{EmbedJWK: true}).WithType(jose.ContentType(o.typ))
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	c := map[string]any{"htm": o.htm, "htu": o.htu, "iat": o.iat.Unix(), "jti": o.jti}
	if o.ath != "" {
		c["ath"] = o.ath
	}
	if o.nonce != "" {
		c["nonce"] = o.nonce
	}
	p, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func athOf(token string) string {
	s := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

func TestDPoPVerify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		key := newProofKey(t)
		const htu = "https://mcp.example.com/mcp"
		v := &DPoPVerifier{Replay: NewMemoryReplayCache(0)}
		now := time.Now()
		good := proofOpts{htm: "POST", htu: htu, iat: now, ath: athOf("tok")}

		p, err := v.Verify(ctx, makeProof(t, key, good), "POST", htu, "tok")
		if err != nil {
			t.Fatalf("valid proof: %v", err)
		}
		jwk := jose.JSONWebKey{Key: key.Public()}
		tp, _ := jwk.Thumbprint(crypto.SHA256)
		if p.JKT != base64.RawURLEncoding.EncodeToString(tp) {
			t.Errorf("jkt %s", p.JKT)
		}

		replayed := makeProof(t, key, good)
		if _, err := v.Verify(ctx, replayed, "POST", htu, "tok"); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(ctx, replayed, "POST", htu, "tok"); !errors.Is(err, ErrDPoPReplay) {
			t.Errorf("replay: %v", err)
		}

		with := func(f func(*proofOpts)) string {
			o := good
			f(&o)
			return makeProof(t, key, o)
		}
		cases := []struct {
			name  string
			proof string
		}{
			{"wrong htm", with(func(o *proofOpts) { o.htm = "GET" })},
			{"wrong htu", with(func(o *proofOpts) { o.htu = "https://other.example.com/mcp" })},
			{"wrong htu path", with(func(o *proofOpts) { o.htu = htu + "/x" })},
			{"stale iat", with(func(o *proofOpts) { o.iat = now.Add(-2 * time.Minute) })},
			{"future iat", with(func(o *proofOpts) { o.iat = now.Add(time.Minute) })},
			{"wrong ath", with(func(o *proofOpts) { o.ath = athOf("other") })},
			{"no ath", with(func(o *proofOpts) { o.ath = "" })},
			{"wrong typ", with(func(o *proofOpts) { o.typ = "JWT" })},
			{"garbage", "a.b.c"},
		}
		for _, c := range cases {
			if _, err := v.Verify(ctx, c.proof, "POST", htu, "tok"); !errors.Is(err, ErrDPoP) {
				t.Errorf("%s: %v, want ErrDPoP", c.name, err)
			}
		}
		// The query of htu is ignored; scheme and host case too.
		if _, err := v.Verify(ctx, with(func(o *proofOpts) { o.htu = "HTTPS://MCP.example.com/mcp?x=1" }), "POST", htu, "tok"); err != nil {
			t.Errorf("htu variant: %v", err)
		}

		// A proof that was fresh goes stale as time passes.
		late := makeProof(t, key, good)
		time.Sleep(DefaultDPoPMaxAge + time.Second)
		if _, err := v.Verify(ctx, late, "POST", htu, "tok"); !errors.Is(err, ErrDPoP) {
			t.Errorf("proof after max age: %v", err)
		}
	})
}

func TestDPoPNonce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		key := newProofKey(t)
		const htu = "https://as.example.com/token"
		nonceKey := []byte("0123456789abcdef0123456789abcdef")
		v := &DPoPVerifier{Replay: NewMemoryReplayCache(0), NonceKey: nonceKey}
		o := proofOpts{htm: "POST", htu: htu, iat: time.Now()}
		if _, err := v.Verify(ctx, makeProof(t, key, o), "POST", htu, ""); !errors.Is(err, ErrDPoPNonce) {
			t.Fatalf("no nonce: %v", err)
		}
		// A nonce from another instance with the same key is accepted.
		other := &DPoPVerifier{Replay: NewMemoryReplayCache(0), NonceKey: nonceKey}
		o.nonce = other.Nonce()
		if _, err := v.Verify(ctx, makeProof(t, key, o), "POST", htu, ""); err != nil {
			t.Fatalf("valid nonce: %v", err)
		}
		o.nonce = (&DPoPVerifier{NonceKey: []byte("another key, another key, another!")}).Nonce()
		if _, err := v.Verify(ctx, makeProof(t, key, o), "POST", htu, ""); !errors.Is(err, ErrDPoPNonce) {
			t.Errorf("foreign nonce: %v", err)
		}
		o.nonce = v.Nonce()
		time.Sleep(DefaultDPoPNonceLifetime + time.Minute)
		o.iat = time.Now()
		if _, err := v.Verify(ctx, makeProof(t, key, o), "POST", htu, ""); !errors.Is(err, ErrDPoPNonce) {
			t.Errorf("expired nonce: %v", err)
		}
	})
}

// FuzzDPoPVerify: a DPoP header is untrusted input; verification never
// panics and accepts nothing it cannot verify.
func FuzzDPoPVerify(f *testing.F) {
	key := newProofKey(f)
	now := time.Unix(1_800_000_000, 0)
	f.Add(makeProof(f, key, proofOpts{htm: "POST", htu: "https://a.example/mcp", iat: now}))
	f.Add("eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6Im5vbmUifQ.e30.")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, proof string) {
		v := &DPoPVerifier{Replay: NewMemoryReplayCache(16), Now: func() time.Time { return now }}
		p, err := v.Verify(context.Background(), proof, "POST", "https://a.example/mcp", "")
		if err == nil && (p.JKT == "" || p.ID == "") {
			t.Fatalf("accepted %+v", p)
		}
	})
}

// TestJWTValidatorDPoPNonce: a resource server requiring DPoP nonces
// answers a bound token's proof without one with 401 use_dpop_nonce and a
// DPoP-Nonce header, and admits the retry carrying it.
func TestJWTValidatorDPoPNonce(t *testing.T) {
	f := newFixture(t)
	f.v.Now = nil
	f.v.DPoP = &DPoPVerifier{Replay: NewMemoryReplayCache(0), NonceKey: []byte("0123456789abcdef0123456789abcdef")}
	adm := f.v.Admission(f.meta)
	key := newProofKey(t)
	jwk := jose.JSONWebKey{Key: key.Public()}
	tp, _ := jwk.Thumbprint(crypto.SHA256)
	tok := sign(t, f.ec, with(claimsAt(time.Now()), "cnf", map[string]any{"jkt": base64.RawURLEncoding.EncodeToString(tp)}), signOpts{})
	call := func(nonce string) (weft.Identity, error) {
		p := makeProof(t, key, proofOpts{htm: "POST", htu: testResource, iat: time.Now(), ath: athOf(tok), nonce: nonce})
		return adm(context.Background(), &weft.AdmissionRequest{Method: "tools/call", Transport: "http",
			Header: http.Header{"Authorization": {"DPoP " + tok}, "Dpop": {p}}})
	}
	_, err := call("")
	var ae *weft.AdmissionError
	if !errors.As(err, &ae) || ae.Status != 401 || !strings.Contains(ae.Challenge, `error="use_dpop_nonce"`) || ae.Header.Get("DPoP-Nonce") == "" {
		t.Fatalf("without nonce: %v %+v", err, ae)
	}
	id, err := call(ae.Header.Get("DPoP-Nonce"))
	if err != nil || id.Principal != "alice" {
		t.Fatalf("with nonce: %v %v", id, err)
	}
}

// TestDPoPCheckThenRecord: Check validates without storing the jti, so a
// proof may be checked again; Record stores it once, and a second Record
// (or Verify) of the same proof is a replay.
func TestDPoPCheckThenRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		key := newProofKey(t)
		const htu = "https://as.example.com/token"
		v := &DPoPVerifier{Replay: NewMemoryReplayCache(0)}
		proof := makeProof(t, key, proofOpts{htm: "POST", htu: htu, iat: time.Now()})
		var p *DPoPProof
		for range 2 {
			var err error
			if p, err = v.Check(ctx, proof, "POST", htu, ""); err != nil {
				t.Fatalf("check: %v", err)
			}
		}
		if err := v.Record(ctx, p); err != nil {
			t.Fatalf("first record: %v", err)
		}
		if err := v.Record(ctx, p); !errors.Is(err, ErrDPoPReplay) {
			t.Errorf("second record: %v, want ErrDPoPReplay", err)
		}
		if _, err := v.Verify(ctx, proof, "POST", htu, ""); !errors.Is(err, ErrDPoPReplay) {
			t.Errorf("verify after record: %v, want ErrDPoPReplay", err)
		}
		if err := v.Record(ctx, &DPoPProof{JKT: "x", ID: "y"}); !errors.Is(err, ErrDPoP) {
			t.Errorf("record of a proof Check did not return: %v, want ErrDPoP", err)
		}
	})
}
