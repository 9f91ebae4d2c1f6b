package weft

import (
	"strings"
	"testing"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/digestcache"
)

// TestDigestCache: sealing remembers the params digest, a retry with the
// same params finds it and binds exactly as a full computation does; other
// params, re-encoded params, a slot taken by another key and oversized keys
// all compute the digest.
func TestDigestCache(t *testing.T) {
	s, err := NewServer(Implementation{Name: "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(doc string) exactjson.Value {
		v, err := exactjson.ParseString(doc, exactjson.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	key := func(p exactjson.Value) []byte {
		k, err := exactjson.AppendJSONWithout(nil, p, 1, unstableMember)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	check := func(name string, p exactjson.Value, remember bool) {
		t.Helper()
		want, err := stateBinding("/mcp", ProtocolVersion, "tools/call", "tenant", p)
		if err != nil {
			t.Fatal(err)
		}
		req := &Request{Params: p, Endpoint: "/mcp", ProtocolVersion: ProtocolVersion, Method: "tools/call", Identity: Identity{Partition: "tenant"}}
		got, bp, err := s.binding(req, remember)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: binding differs from the full computation", name)
		}
		s.putScratch(bp)
	}
	first := parse(`{"name":"t","arguments":{"b":1,"a":2.50},"_meta":{"progressToken":1,"x":{"y":[1]}}}`)
	retry := parse(`{"name":"t","arguments":{"b":1,"a":2.50},"_meta":{"progressToken":2,"x":{"y":[1]}},"inputResponses":{"k":{"action":"accept"}},"requestState":"weft1.x"}`)
	if _, hit := s.digests.Lookup(key(retry)); hit {
		t.Fatal("hit before anything was sealed")
	}
	check("open before seal", retry, false)
	if _, hit := s.digests.Lookup(key(retry)); hit {
		t.Fatal("opening remembered a digest")
	}
	check("seal", first, true)
	// The retry's stable params encode as round 1's did: a hit.
	if d, hit := s.digests.Lookup(key(retry)); !hit {
		t.Fatal("the retry does not find the digest its state was sealed with")
	} else if want, _ := paramsDigest(retry); d != want {
		t.Fatal("remembered digest differs")
	}
	check("retry", retry, false)
	// Re-encoded (members reordered) or different params miss, and bind
	// correctly.
	for _, doc := range []string{
		`{"arguments":{"b":1,"a":2.50},"name":"t","_meta":{"x":{"y":[1]}}}`,
		`{"name":"t","arguments":{"b":1,"a":2.5},"_meta":{"x":{"y":[1]}}}`,
		`{"name":"t","arguments":{"b":2,"a":2.50},"_meta":{"x":{"y":[1]}}}`,
	} {
		p := parse(doc)
		if _, hit := s.digests.Lookup(key(p)); hit {
			t.Errorf("%s: hit", doc)
		}
		check(doc, p, false)
	}
	// Keys beyond digestcache.MaxKey are not remembered.
	long := parse(`{"name":"t","arguments":{"s":"` + strings.Repeat("x", digestcache.MaxKey) + `"}}`)
	check("long seal", long, true)
	if _, hit := s.digests.Lookup(key(long)); hit {
		t.Fatal("remembered an oversized key")
	}
}
