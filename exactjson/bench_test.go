package exactjson

import (
	stdjson "encoding/json"
	"testing"
)

// benchRequest is a typical ~1 KB MCP tools/call request body.
const benchRequest = `{"jsonrpc":"2.0","id":"c0a8012e-6f1d-4b7a-9d3e-2f5b8c9a1e47","method":"tools/call","params":{"name":"search_documents","arguments":{"query":"quarterly revenue report for the EMEA region including currency adjustments","filters":{"departments":["finance","sales","operations"],"date_range":{"from":"2024-01-01T00:00:00Z","to":"2024-12-31T23:59:59Z"},"min_score":0.75,"max_results":25,"include_archived":false,"tags":["q1","q2","q3","q4","revenue","emea"]},"sort":[{"field":"relevance","order":"desc"},{"field":"updated_at","order":"desc"}],"highlight":{"enabled":true,"fragment_size":150,"pre_tag":"<em>","post_tag":"</em>"},"pagination":{"cursor":"eyJvZmZzZXQiOjI1LCJzZWVkIjo0Mn0=","limit":25},"amount":{"value":1234567.89,"currency":"EUR"},"notes":"Caf\u00e9 \"quoted\" text with a newline\nand a tab\tinside","locale":"de-CH","timezone":"Europe/Zurich"},"_meta":{"progressToken":"tok-7f3a9c","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","client":{"name":"weft-bench","version":"1.4.2"}}}}`

// BenchmarkParse parses a typical request, a small document (sealed
// request state) and a request whose size is mostly one long string (a
// retry carrying requestState).
func BenchmarkParse(b *testing.B) {
	tok := make([]byte, 400)
	for i := range tok {
		tok[i] = 'A' + byte(i%26)
	}
	for _, bc := range []struct{ name, doc string }{
		{"request", benchRequest},
		{"small", `{"phase":"confirming","amount":1.5}`},
		{"long-string", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_confirm","arguments":{"text":"hello","count":3},"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"` + string(tok) + `"}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := []byte(bc.doc)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(data, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCanonical(b *testing.B) {
	v := mustParse(b, benchRequest)
	buf := make([]byte, 0, 2048)
	b.SetBytes(int64(len(benchRequest)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendCanonical(buf[:0], v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	v := mustParse(b, benchRequest)
	params, _ := v.Get("params")
	args, _ := params.Get("arguments")
	constructed := v.With("params", params.With("arguments", args.With("extra", Bool(true))))
	buf := make([]byte, 0, 2048)
	for _, bc := range []struct {
		name string
		v    Value
	}{{"parsed", v}, {"constructed", constructed}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(benchRequest)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = AppendJSON(buf[:0], bc.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUnmarshalArguments(b *testing.B) {
	v := mustParse(b, benchRequest)
	params, _ := v.Get("params")
	type args struct {
		Query   string `json:"query"`
		Filters struct {
			MaxResults int64    `json:"max_results"`
			MinScore   Number   `json:"min_score"`
			Tags       []string `json:"tags"`
		} `json:"filters"`
	}
	a, _ := params.Get("arguments")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode[args](a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdlibUnmarshalAny is a baseline: encoding/json into any.
func BenchmarkStdlibUnmarshalAny(b *testing.B) {
	data := []byte(benchRequest)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var x any
		if err := stdjson.Unmarshal(data, &x); err != nil {
			b.Fatal(err)
		}
	}
}
