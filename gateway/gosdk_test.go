package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/internal/partners"
)

// gosdkUpstream fronts internal/partners/gosdkserver, a server built on
// the official Go SDK v1.8.0 (its own module).
func gosdkUpstream(t *testing.T, protocol string) gateway.UpstreamConfig {
	t.Helper()
	return gateway.UpstreamConfig{Name: "gosdk", Command: partners.GoServer(t, "gosdkserver"), Protocol: protocol, Prefix: "sdk_"}
}

// The Go SDK v1.8.0 also speaks 2026-07-28 (where its Elicit refuses to
// run during a call), so the test pins the 2025 session the gateway
// translates.
func TestGoSDKUpstream(t *testing.T) {
	for _, protocol := range []string{gateway.Version20251125, gateway.Version20250618} {
		t.Run("protocol="+protocol, func(t *testing.T) {
			in := startGateway(t, &gateway.Config{Upstreams: []gateway.UpstreamConfig{gosdkUpstream(t, protocol)}}, testKeyring(t), nil)
			var asked string
			c := client.New(client.NewHTTPTransport(in.url, nil), &client.Options{Handlers: client.Handlers{
				Elicit: func(ctx context.Context, p exactjson.Value) (exactjson.Value, error) {
					m, _ := p.Get("message")
					asked, _ = m.AsString()
					return nameAnswer("grace")(ctx, p)
				}}})

			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := c.CallTool(ctx, "sdk_confirm", map[string]any{"topic": "launch"})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Text(); got != "launch confirmed by grace (accept)" || asked != "Who confirms launch?" {
				t.Fatalf("result %q after %q", got, asked)
			}
		})
	}
}
