package weft

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/stateplain"
)

// stateVector is one documented binding test vector (testdata/state_vectors.json).
type stateVector struct {
	Name            string `json:"name"`
	Endpoint        string `json:"endpoint"`
	Version         string `json:"version"`
	Method          string `json:"method"`
	Partition       string `json:"partition"`
	Params          string `json:"params"`
	CanonicalParams string `json:"canonicalParams"`
	ParamsDigestHex string `json:"paramsDigestHex"`
	BindingHex      string `json:"bindingHex"`
	PlaintextHex    string `json:"plaintextHex"`
}

// TestStateVectors checks the binding and plaintext vectors of
// docs/request-state.md: the code must produce them exactly, and the doc must
// show them.
func TestStateVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/state_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []stateVector
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("docs/request-state.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			params, err := exactjson.Parse([]byte(v.Params), exactjson.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			p := params.Without("inputResponses", "requestState")
			if meta, ok := p.Get("_meta"); ok {
				p = p.With("_meta", meta.Without("progressToken", "traceparent", "tracestate", "baggage"))
			}
			canon, err := exactjson.Canonical(p)
			if err != nil {
				t.Fatal(err)
			}
			if string(canon) != v.CanonicalParams {
				t.Errorf("canonical params\n got %s\nwant %s", canon, v.CanonicalParams)
			}
			d, err := paramsDigest(params)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(d[:]); got != v.ParamsDigestHex {
				t.Errorf("params digest got %s want %s", got, v.ParamsDigestHex)
			}
			b, err := stateBinding(v.Endpoint, v.Version, v.Method, v.Partition, params)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(b); got != v.BindingHex {
				t.Errorf("binding got %s want %s", got, v.BindingHex)
			}
			for _, s := range []string{v.CanonicalParams, v.ParamsDigestHex, v.BindingHex, v.PlaintextHex} {
				if !strings.Contains(string(doc), s) {
					t.Errorf("docs/request-state.md does not show %q", s)
				}
			}
		})
	}
	// The plaintext vector.
	m := &stateMeta{IssuedAt: 1764680000000, ExpiresAt: 1764680900000, Round: 1, RequestID: exactjson.Int(7),
		Keys: []stateKey{{Name: "approval", Method: "elicitation/create"}}}
	state := exactjson.Object(exactjson.Field("phase", exactjson.String("waiting-for-approval")),
		exactjson.Field("amount", exactjson.NumberValue(mustNumber(t, "1.50"))))
	pt, err := stateplain.Encode(m, state)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(pt); got != vectors[0].PlaintextHex {
		t.Errorf("plaintext\n got %s\nwant %s", got, vectors[0].PlaintextHex)
	}
	gm, gs, err := stateplain.Decode(pt)
	if err != nil {
		t.Fatal(err)
	}
	if gm.Round != 1 || gm.IssuedAt != m.IssuedAt || gm.ExpiresAt != m.ExpiresAt || !exactjson.Equal(gm.RequestID, exactjson.Int(7)) || gm.Method("approval") != "elicitation/create" {
		t.Errorf("decoded meta %+v", gm)
	}
	if !exactjson.Equal(gs, state) {
		t.Errorf("decoded state %s", gs)
	}
}

func mustNumber(t testing.TB, s string) exactjson.Number {
	t.Helper()
	n, err := exactjson.ParseNumber(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
