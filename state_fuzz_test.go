package weft

import (
	"crypto/sha256"
	"encoding/binary"
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
		// And so does the binding a server builds, sealing (which
		// remembers the digest) and then opening (which finds it), for
		// params and for a one-member variation of them.
		if werr != nil || v.Kind() != exactjson.KindObject {
			return
		}
		s, err := NewServer(Implementation{Name: "fuzz"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		other := v.With("\x00other", exactjson.Int(1))
		for _, p := range []exactjson.Value{v, v, other, v, other} {
			ref, err := stateBinding("/mcp", ProtocolVersion, "tools/call", "", p)
			if err != nil {
				t.Fatal(err)
			}
			for _, remember := range []bool{true, false} {
				b, bp, err := s.binding(&Request{Params: p, Endpoint: "/mcp", ProtocolVersion: ProtocolVersion, Method: "tools/call"}, remember)
				if err != nil {
					t.Fatalf("binding: %v", err)
				}
				if string(b) != string(ref) {
					t.Fatalf("binding of %s (remember %v) differs from the reference", p, remember)
				}
				s.putScratch(bp)
			}
		}
	})
}
