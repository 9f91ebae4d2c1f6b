package servers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/auth"
	"github.com/weftmcp/weft/gateway"
)

// NewGateway returns a Weft server fronting the echo tool of the Weft
// server at upstream (a URL ending in [Path]) through package gateway,
// speaking protocol to it (2026-07-28, or 2025-11-25 for a session), with
// no prefix: the tool keeps its name, so the measured request is the same.
// close stops the gateway.
//
// With jwks (a JWKS file; "" for none) the gateway authenticates its
// callers as `weft gateway` with an auth.jwt section does: JWT access
// tokens of [BenchIssuer] for [BenchAudience] (a [BenchKey]'s Token).
func NewGateway(ctx context.Context, upstream, protocol, jwks string) (h http.Handler, close func() error, err error) {
	opts := &weft.Options{Logger: discard}
	if jwks != "" {
		keys, err := auth.JWKSFile(jwks, nil)
		if err != nil {
			return nil, nil, err
		}
		meta := &auth.ResourceMetadata{Resource: BenchAudience, AuthorizationServers: []string{BenchIssuer}}
		v := &auth.JWTValidator{Issuer: BenchIssuer, JWKS: keys, Algorithms: []string{"ES256"}}
		if err := v.CheckConfig(meta); err != nil {
			return nil, nil, err
		}
		opts.Admission = v.Admission(meta)
	}
	s, err := weft.NewServer(weft.Implementation{Name: "bench-gateway", Version: "1.0.0"}, opts)
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
