package client

import "testing"

// FuzzParseMessage feeds parseMessage what a server may send (a JSON body,
// an SSE event's data, a stdio line): it classifies or refuses, never
// panics, and what it accepts is well formed. Seeds are in
// testdata/fuzz/FuzzParseMessage besides these.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"x","method":"elicitation/create","params":{"message":"m","requestedSchema":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`,
		`[1,2]`, `not json`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMessage(b)
		if err != nil {
			return
		}
		switch m.kind {
		case msgResponse:
			if m.resp == nil || (m.resp.Error != nil && !m.resp.Result.IsNull()) {
				t.Fatalf("a response with both or neither of result and error: %q", b)
			}
			if m.resp.Error != nil {
				_ = m.resp.Error.Error()
			}
		case msgRequest, msgNotification:
			if m.method == "" {
				t.Fatalf("a %s without a method: %q", kindName(m.kind), b)
			}
		default:
			t.Fatalf("kind %d: %q", m.kind, b)
		}
	})
}
