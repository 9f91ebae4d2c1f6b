package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/weftmcp/weft/bench/servers"
)

// BenchmarkMultiRound profiles the plain call, round 1 and the retry:
//
//	go test -run '^$' -bench MultiRound/retry -cpuprofile cpu.prof ./cmd/benchload
func BenchmarkMultiRound(b *testing.B) {
	s, err := newMRTRServer()
	if err != nil {
		b.Fatal(err)
	}
	first := servers.NewCall("tools/call", confirmTool, mrtrParams(confirmTool, ""))
	w := servers.NewInProc(s, first).Do(1)
	var resp servers.Response
	if err := servers.DecodeResponse(w.Header().Get("Content-Type"), w.Body.Bytes(), &resp); err != nil || resp.Result == nil {
		b.Fatal(err, w.Body.String())
	}
	token, _ := json.Marshal(resp.Result.RequestState)
	calls := map[string]*servers.Call{
		"plain":  servers.NewCall("tools/call", servers.ToolName, mrtrParams(servers.ToolName, "")),
		"round1": first,
		"retry": servers.NewCall("tools/call", confirmTool, mrtrParams(confirmTool,
			`,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":`+string(token))),
	}
	for _, name := range []string{"plain", "round1", "retry"} {
		b.Run(name, func(b *testing.B) {
			p := servers.NewInProc(s, calls[name])
			b.ReportAllocs()
			id := int64(1)
			for b.Loop() {
				id++
				if w := p.Do(id); w.Code != http.StatusOK {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}
