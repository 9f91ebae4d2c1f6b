package weft

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/weftmcp/weft/exactjson"
)

// referenceParamsDigest is the params digest written the plain way (copy
// without the unstable members, canonicalize, hash); paramsDigest must agree
// with it byte for byte.
func referenceParamsDigest(params exactjson.Value) ([32]byte, error) {
	p := params.Without("inputResponses", "requestState")
	if meta, ok := p.Get("_meta"); ok && meta.Kind() == exactjson.KindObject {
		p = p.With("_meta", meta.Without("progressToken", "traceparent", "tracestate", "baggage"))
	}
	canon, err := exactjson.Canonical(p)
	if err != nil {
		return [32]byte{}, err
	}
	b := append([]byte(paramsDomain), 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(canon)))
	return sha256.Sum256(append(b, canon...)), nil
}

// FuzzParamsDigest checks the streaming params digest against the reference
// for arbitrary params documents.
func FuzzParamsDigest(f *testing.F) {
	for _, seed := range []string{
		`{"name":"t","arguments":{"b":1,"a":[1.50,{"z":null,"y":"é"}]},"_meta":{"progressToken":"p","traceparent":"x","io.modelcontextprotocol/protocolVersion":"2026-07-28","tracestate":"s","baggage":"b","k":{"d":1E+2,"c":0.0}},"inputResponses":{"a":{}},"requestState":"weft1.x"}`,
		`{"_meta":"not an object","requestState":1}`,
		`{"_meta":{}}`,
		`{}`, `[]`, `"s"`, `1.0`,
		`{"m16":0,"m15":0,"m14":0,"m13":0,"m12":0,"m11":0,"m10":0,"m9":0,"m8":0,"m7":0,"m6":0,"m5":0,"m4":0,"m3":0,"m2":0,"m1":0,"m0":0,"requestState":""}`,
		`{"\u0000":1,"\ud83d\ude00":2,"a\"b":3,"_meta":{"\u2028":{"traceparent":1}}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		v, err := exactjson.ParseString(doc, exactjson.Limits{})
		if err != nil {
			return
		}
		want, werr := referenceParamsDigest(v)
		got, gerr := paramsDigest(v)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: reference %v, streaming %v", werr, gerr)
		}
		if got != want {
			t.Fatalf("digest of %s differs from the reference", doc)
		}
		// The pooled-buffer form agrees too, with a dirty, short buffer.
		again, _, _ := paramsDigestBuf([]byte("dirty scratch"), v)
		if again != want {
			t.Fatalf("digest through a reused buffer differs")
		}
	})
}

// FuzzDecodePlaintext checks the canonical fast path of the plaintext decoder
// against the general decoder: whatever the fast path accepts, the general
// decoder decodes to the same meta and state; and every plaintext
// encodePlaintext writes with plain keys takes the fast path.
func FuzzDecodePlaintext(f *testing.F) {
	st := exactjson.Object(exactjson.Field("phase", exactjson.String("confirming")), exactjson.Field("n", exactjson.NumberValue(mustNumber(f, "1.50"))))
	for _, m := range []*stateMeta{
		{IssuedAt: 1764680000000, ExpiresAt: 1764680900000, Round: 1, RequestID: IntID(7), Keys: []stateKey{{"approval", "elicitation/create"}}},
		{IssuedAt: 1, ExpiresAt: 2, Round: 10, RequestID: StringID("r-1"), Keys: []stateKey{{"a", "roots/list"}, {"b", "sampling/createMessage"}}},
		{IssuedAt: -5, ExpiresAt: 100, Round: 3, RequestID: IntID(100), Args: "00ff00ff00ff00ff"},
		{IssuedAt: 0, ExpiresAt: 0, Round: 0, RequestID: StringID(`q"uote`), Keys: []stateKey{{"k\\", "m"}}},
	} {
		pt, err := encodePlaintext(m, st)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pt)
	}
	f.Add([]byte(`{"exp":2,"iat":1,"keys":{},"rid":1.0,"round":1,"state":null,"v":1}`))
	f.Add([]byte(`{"exp":2,"iat":1,"keys":{"b":"x","a":"y"},"rid":1,"round":1,"state":{},"v":1}`))
	f.Add([]byte(`{"exp":2,"iat":1,"keys":{},"rid":1,"round":1,"state":{,"v":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fm, fs, ok := decodeCanonicalPlaintext(b)
		gm, gs, err := decodePlaintextGeneral(b)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("fast path accepted %q, general decoder refused: %v", b, err)
		}
		if fm.IssuedAt != gm.IssuedAt || fm.ExpiresAt != gm.ExpiresAt || fm.Round != gm.Round || fm.Args != gm.Args ||
			!fm.RequestID.Equal(gm.RequestID) || fm.RequestID.v.Kind() != gm.RequestID.v.Kind() ||
			fm.RequestID.v.String() != gm.RequestID.v.String() || !slices.Equal(fm.Keys, gm.Keys) {
			t.Fatalf("meta differs for %q:\nfast    %+v\ngeneral %+v", b, fm, gm)
		}
		if !exactjson.Equal(fs, gs) || fs.String() != gs.String() {
			t.Fatalf("state differs for %q: %s vs %s", b, fs, gs)
		}
	})
}

func TestEncodedPlaintextTakesFastPath(t *testing.T) {
	st := exactjson.Object(exactjson.Field("deep", exactjson.Array(exactjson.Object(exactjson.Field("x", exactjson.Null())))))
	for _, m := range []*stateMeta{
		{IssuedAt: 1764680000000, ExpiresAt: 1764680900000, Round: 1, RequestID: IntID(7), Keys: []stateKey{{"approval", "elicitation/create"}}},
		{IssuedAt: 1, ExpiresAt: 2, Round: 10, RequestID: StringID("r-1"), Keys: []stateKey{{"a", "roots/list"}, {"b", "sampling/createMessage"}, {"é", "elicitation/create"}}},
		{IssuedAt: 1, ExpiresAt: 120000, Round: 2, RequestID: IntID(-100)},
		{IssuedAt: 1, ExpiresAt: 120000, Round: 2, RequestID: IntID(3), Args: "0123456789abcdef", Keys: []stateKey{{"a", "roots/list"}}},
	} {
		pt, err := encodePlaintext(m, st)
		if err != nil {
			t.Fatal(err)
		}
		fm, fs, ok := decodeCanonicalPlaintext(pt)
		if !ok {
			t.Fatalf("fast path refused %s", pt)
		}
		if fm.IssuedAt != m.IssuedAt || fm.ExpiresAt != m.ExpiresAt || fm.Round != m.Round || fm.Args != m.Args || !fm.RequestID.Equal(m.RequestID) || !slices.Equal(fm.Keys, m.Keys) || !exactjson.Equal(fs, st) {
			t.Errorf("fast path decoded %s to %+v %s", pt, fm, fs)
		}
	}
	// Escaped keys are left to the general decoder, which still decodes them.
	m := &stateMeta{IssuedAt: 1, ExpiresAt: 2, Round: 1, RequestID: StringID("a\nb"), Keys: []stateKey{{"k\"", "elicitation/create"}}}
	pt, err := encodePlaintext(m, exactjson.Null())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := decodeCanonicalPlaintext(pt); ok {
		t.Errorf("fast path took escaped text %s", pt)
	}
	gm, _, err := decodePlaintext(pt)
	if err != nil || gm.method(`k"`) != "elicitation/create" || !gm.RequestID.Equal(StringID("a\nb")) {
		t.Errorf("general decoder: %+v %v", gm, err)
	}
}

func TestCanonicalInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"-42", -42, true}, {"123456789012345678", 123456789012345678, true},
		{"1.7646809E+12", 1764680900000, true}, {"1E+2", 100, true}, {"-1.5E+1", -15, true}, {"9.99E+17", 999000000000000000, true},
		{"1.5E+0", 0, false}, // not an integer
		{"1234567890123456789", 0, false}, {"1E+19", 0, false}, {"01", 0, false}, {"0E+1", 0, false},
		{"1.0", 0, false}, {"1E2", 0, false}, {"1e+2", 0, false}, {"1E-2", 0, false}, {"12.5E+3", 0, false},
		{"", 0, false}, {"-", 0, false}, {"1.E+2", 0, false}, {"1x", 0, false}, {"1E+", 0, false},
	} {
		got, ok := canonicalInt(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("canonicalInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		if ok {
			// Whatever it accepts, the general reading agrees.
			n, err := exactjson.ParseNumber(tc.in)
			v, vok := n.Int64()
			if err != nil || !vok || v != got {
				t.Errorf("canonicalInt(%q) = %d, general reading %d %v %v", tc.in, got, v, vok, err)
			}
		}
	}
}
