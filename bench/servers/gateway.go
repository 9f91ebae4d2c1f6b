package servers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/gateway"
)

// NewGateway returns a Weft server fronting the echo tool of the Weft
// server at upstream (a URL ending in [Path]) through package gateway,
// speaking protocol to it (2026-07-28, or 2025-11-25 for a session), with
// no prefix: the tool keeps its name, so the measured request is the same.
// close stops the gateway.
func NewGateway(ctx context.Context, upstream, protocol string) (h http.Handler, close func() error, err error) {
	s, err := weft.NewServer(weft.Implementation{Name: "bench-gateway", Version: "1.0.0"}, &weft.Options{Logger: discard})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	gw, err := gateway.New(ctx, s, &gateway.Config{Upstreams: []gateway.UpstreamConfig{
		{Name: "upstream", URL: upstream, Protocol: protocol}}}, &gateway.Options{Logger: discard})

	if err != nil {
		return nil, nil, fmt.Errorf("gateway to %s: %w", upstream, err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, s)
	return mux, gw.Close, nil
}
