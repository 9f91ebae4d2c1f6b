package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
)

// sealOpen measures seal, open and seal+open of 1 KiB and 48 KiB state
// through a seal.Manager with one active key.
func sealOpen(rounds int) ([]micro, error) {
	k, err := seal.GenerateKey("bench-2026")
	if err != nil {
		return nil, err
	}
	ring, err := seal.NewKeyring(k)
	if err != nil {
		return nil, err
	}
	// 48 KiB of plaintext seals to about 65.6 KB, over the default token limit.
	m := seal.NewManager(ring, &seal.ManagerOptions{MaxTokenBytes: 1 << 17})
	// A binding like the one Weft builds: domain, endpoint, version, method,
	// partition and a SHA-256 params digest.
	binding := []byte("weft-request-state-binding-v1\x00\x00\x00\x00\x04/mcp\x00\x00\x00\x0a2026-07-28\x00\x00\x00\x0atools/call\x00\x00\x00\x00\x00" +
		strings.Repeat("\xab", 32))
	ctx := context.Background()
	var benches []bench
	for _, n := range []int{1 << 10, 48 << 10} {
		pt := []byte(strings.Repeat("x", n))
		tok, err := m.Seal(ctx, binding, pt)
		if err != nil {
			return nil, err
		}
		if got, err := m.Open(ctx, tok, binding); err != nil || string(got) != string(pt) {
			return nil, fmt.Errorf("seal round trip of %d bytes failed: %v", n, err)
		}
		size := strconv.Itoa(n>>10) + " KiB"
		benches = append(benches,
			bench{name: "seal " + size, setBytes: int64(n), op: func() error {
				_, err := m.Seal(ctx, binding, pt)
				return err
			}},
			bench{name: "open " + size, setBytes: int64(n), op: func() error {
				_, err := m.Open(ctx, tok, binding)
				return err
			}},
			bench{name: "seal+open " + size, setBytes: int64(n), op: func() error {
				t, err := m.Seal(ctx, binding, pt)
				if err != nil {
					return err
				}
				_, err = m.Open(ctx, t, binding)
				return err
			}})
	}
	return runMicro(rounds, benches)
}

// mcpRequest is a typical ~1 KB tools/call body (the one exactjson's own
// benchmarks use).
const mcpRequest = `{"jsonrpc":"2.0","id":"c0a8012e-6f1d-4b7a-9d3e-2f5b8c9a1e47","method":"tools/call","params":{"name":"search_documents","arguments":{"query":"quarterly revenue report for the EMEA region including currency adjustments","filters":{"departments":["finance","sales","operations"],"date_range":{"from":"2024-01-01T00:00:00Z","to":"2024-12-31T23:59:59Z"},"min_score":0.75,"max_results":25,"include_archived":false,"tags":["q1","q2","q3","q4","revenue","emea"]},"sort":[{"field":"relevance","order":"desc"},{"field":"updated_at","order":"desc"}],"highlight":{"enabled":true,"fragment_size":150,"pre_tag":"<em>","post_tag":"</em>"},"pagination":{"cursor":"eyJvZmZzZXQiOjI1LCJzZWVkIjo0Mn0=","limit":25},"amount":{"value":1234567.89,"currency":"EUR"},"notes":"Caf\u00e9 \"quoted\" text with a newline\nand a tab\tinside","locale":"de-CH","timezone":"Europe/Zurich"},"_meta":{"progressToken":"tok-7f3a9c","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","client":{"name":"weft-bench","version":"1.4.2"}}}}`

// largeDoc is a ~64 KB document: an array of records mixing strings,
// integers, decimals, booleans, nulls and nested arrays and objects.
func largeDoc() []byte {
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i := 0; sb.Len() < 64<<10; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":%d,"name":"item-%d \u00e9t\u00e9 \"q\"","price":%d.%02d,"ratio":0.%03d,"active":%t,"parent":null,`+
			`"tags":["alpha","beta","gamma-%d"],"dims":{"w":%d,"h":%d,"unit":"mm"},"note":"line one\nline two\ttabbed"}`,
			i, i, 10+i%900, i%100, i%1000, i%2 == 0, i%7, i%300, i%500)
	}
	sb.WriteString(`],"total":9007199254740993,"next":"eyJvZmZzZXQiOjI1fQ=="}`)
	return []byte(sb.String())
}

// jsonThroughput compares exactjson.Parse and exactjson.Canonical with
// encoding/json Unmarshal into any and Marshal of the result.
func jsonThroughput(rounds int) ([]micro, error) {
	var benches []bench
	for _, doc := range []struct {
		name string
		data []byte
	}{{"1 KB request", []byte(mcpRequest)}, {"64 KB document", largeDoc()}} {
		data := doc.data
		v, err := exactjson.Parse(data, exactjson.Limits{})
		if err != nil {
			return nil, fmt.Errorf("exactjson.Parse %s: %w", doc.name, err)
		}
		var x any
		if err := json.Unmarshal(data, &x); err != nil {
			return nil, err
		}
		n := int64(len(data))
		benches = append(benches,
			bench{name: "exactjson.Parse, " + doc.name, setBytes: n, op: func() error {
				_, err := exactjson.Parse(data, exactjson.Limits{})
				return err
			}},
			bench{name: "json.Unmarshal any, " + doc.name, setBytes: n, op: func() error {
				var x any
				return json.Unmarshal(data, &x)
			}},
			bench{name: "exactjson.Canonical, " + doc.name, setBytes: n, op: func() error {
				_, err := exactjson.Canonical(v)
				return err
			}},
			bench{name: "json.Marshal any, " + doc.name, setBytes: n, op: func() error {
				_, err := json.Marshal(x)
				return err
			}})
	}
	return runMicro(rounds, benches)
}
