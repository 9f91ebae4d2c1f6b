package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
)

// floodUpstream is a 2025-11-25 Streamable HTTP server whose one tool
// answers a call with n elicitation requests on the call's stream, all at
// once, and never its response: an upstream flooding the gateway with
// requests of its own.
func floodUpstream(n int, answered *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			return
		}
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if m.ID == nil || m.Method == "" { // a notification, or an answer to one of ours
			if m.Method == "" {
				answered.Add(1)
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
		reply := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
		}
		switch m.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "flood-session")
			reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"1"}}`)
		case "tools/list":
			reply(`{"tools":[{"name":"flood","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range n {
				fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"e%d\",\"method\":\"elicitation/create\","+
					"\"params\":{\"message\":\"q%d\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}\n\n", i, i)
			}
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			reply(`{}`)
		}
	})
}

// An upstream that sends more requests of its own during a call than a
// round of input can hold breaks that call with a clear error at once:
// the gateway holds no goroutine or queue entry per excess request, and
// the client is not left waiting for the upstream's deadline.
func TestUpstreamFloodsServerRequests(t *testing.T) {
	var answered atomic.Int64
	url := serveHTTP(t, floodUpstream(10*client.MaxServerRequests, &answered))
	up := gateway.UpstreamConfig{Name: "up", URL: url, Protocol: gateway.Version20251125,
		CallTimeout: gateway.Duration(time.Minute)} // a hang would fail the test's own deadline
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	caps := client.Options{Capabilities: exactjson.Object(exactjson.Field("elicitation", exactjson.Object()))}
	c := client.New(client.NewHTTPTransport(in.url, nil), &caps)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Call(ctx, "tools/call", map[string]any{"name": "flood", "arguments": map[string]any{}})
	// Rounds may go out before the flood passes the bound (the gateway
	// gathers a round's requests briefly): their retries get the call's end.
	for round := 0; err == nil; round++ {
		reqs, _ := res.Get("inputRequests")
		state, _ := res.Get("requestState")
		t.Logf("round %d: %d input requests", round, reqs.Len())
		if n := reqs.Len(); n == 0 || n > client.MaxServerRequests || round > 3 {
			t.Fatalf("round %d: %s: want input_required with 1..%d requests, and the call's end by round 3", round, res, client.MaxServerRequests)
		}
		var answers []exactjson.Member
		for _, m := range reqs.Members() {
			answers = append(answers, exactjson.Field(m.Name, exactjson.Object(exactjson.Field("action", exactjson.String("decline")))))
		}
		res, err = c.Call(ctx, "tools/call", exactjson.Object(
			exactjson.Field("name", exactjson.String("flood")), exactjson.Field("arguments", exactjson.Object()),
			exactjson.Field("inputResponses", exactjson.Object(answers...)),
			exactjson.Field("requestState", state)))
	}
	if rpcCode(err) != gateway.CodeUpstreamUnavailable || !strings.Contains(err.Error(), "broke the protocol") {
		t.Fatalf("error %v, want code %d saying the upstream broke the protocol", err, gateway.CodeUpstreamUnavailable)
	}
	if n := answered.Load(); n > client.MaxServerRequests {
		t.Errorf("the upstream got %d answers, more than the %d requests the gateway may hold", n, client.MaxServerRequests)
	}
	waitFor(t, "no parked calls", func() bool { return in.gw.Parked() == 0 })
	// Nothing of the call stays: no reader of its stream, no answer being
	// sent, no parked call (idle keep-alive connections may).
	var stacks string
	waitFor(t, "the call's goroutines to end", func() bool {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		return !strings.Contains(stacks, "(*HTTPTransport).answer") && !strings.Contains(stacks, "(*HTTPTransport).readEvents") &&
			!strings.Contains(stacks, "(*parkedCall)")
	})
}

// A 2025 HTTP upstream whose call's stream ends before the response (it
// stopped during the call) fails the call as a broken connection, not as
// a protocol error.
func TestLegacyHTTPStreamEndsEarly(t *testing.T) {
	var answered atomic.Int64
	flood := floodUpstream(0, &answered)
	url := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			if strings.Contains(string(b), `"method":"tools/call"`) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.(http.Flusher).Flush()
				return // the stream ends, without the response
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		flood.ServeHTTP(w, r)
	}))
	up := gateway.UpstreamConfig{Name: "up", URL: url, Protocol: gateway.Version20251125}
	in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{up}}, testKeyring(t), nil)
	c := client.New(client.NewHTTPTransport(in.url, nil), nil)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Call(ctx, "tools/call", map[string]any{"name": "flood", "arguments": map[string]any{}})
	if rpcCode(err) != gateway.CodeUpstreamUnavailable || !strings.Contains(err.Error(), "the connection to it broke") {
		t.Fatalf("error %v, want code %d saying the connection to the upstream broke", err, gateway.CodeUpstreamUnavailable)
	}
}
