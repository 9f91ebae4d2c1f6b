// Package auth makes a weft server an OAuth 2.1 resource server, as the MCP
// 2026-07-28 authorization specification asks of HTTP servers that protect
// themselves.
//
// It has these parts:
//
//   - [ResourceMetadata] is the OAuth 2.0 Protected Resource Metadata document
//     (RFC 9728) that tells clients which authorization servers issue tokens
//     for this server. [ResourceMetadata.Handler] serves it and
//     [ResourceMetadata.WellKnownPaths] says where to mount it. [Challenge]
//     builds the WWW-Authenticate values of 401 and 403 responses.
//   - [StaticTokens] admits requests carrying one of a fixed set of bearer
//     tokens read from a file: for demos, tests and small private
//     deployments.
//   - [JWTValidator] validates JWT access tokens (RFC 9068 profile) against
//     the signing keys of one authorization server ([KeySource]: a JWKS file
//     or URL), checks their audience (RFC 8707), lifetime and scopes, and
//     turns them into a [weft.Identity].
//   - [DPoPVerifier] validates DPoP proofs (RFC 9449); set as
//     [JWTValidator].DPoP it admits sender-constrained tokens (cnf.jkt) only
//     with a proof of their key, its jti remembered in a [ReplayCache].
//   - [Introspector] validates opaque access tokens with the authorization
//     server's token introspection endpoint (RFC 7662), applying the same
//     checks to its answer and caching answers briefly (keyed by the
//     token's SHA-256), so that revocation takes effect within CacheTTL.
//
// Each admission function plugs into [weft.Options].Admission:
//
//	meta := &auth.ResourceMetadata{
//		Resource:             "https://mcp.example.com/mcp",
//		AuthorizationServers: []string{"https://auth.example.com"},
//		ScopesSupported:      []string{"mcp:read"},
//	}
//	keys, _ := auth.JWKSURL("https://auth.example.com/jwks.json", nil)
//	v := &auth.JWTValidator{Issuer: "https://auth.example.com", JWKS: keys}
//	srv, err := weft.NewServer(impl, &weft.Options{Admission: v.Admission(meta)})
//	if err != nil {
//		log.Fatal(err)
//	}
//	h, _ := meta.Handler()
//	mux := http.NewServeMux()
//	mux.Handle("/mcp", srv)
//	for _, p := range meta.WellKnownPaths() {
//		mux.Handle(p, h)
//	}
//
// Authorization applies to the HTTP transport. On stdio a request carries no
// bearer token, so these admission functions reject every stdio request; a
// stdio server takes its credentials from its environment instead.
//
// The package never logs, stores or returns a bearer token: errors and
// challenges describe what failed without quoting the token, and
// [StaticTokens] keeps only SHA-256 digests. It holds no package-level
// mutable state.
package auth
