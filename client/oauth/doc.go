// Package oauth is the MCP authorization flow for the client side: an
// http.RoundTripper ([Transport]) that, on a 401 from an MCP server,
// discovers its protected resource metadata (the WWW-Authenticate
// resource_metadata, then the well-known locations), the authorization
// server's metadata (RFC 8414, then OpenID Connect discovery, validating
// the issuer), registers the client (pre-registration, a client ID
// metadata document, or dynamic registration, per authorization server),
// and obtains a token: the authorization code flow with PKCE S256, the
// resource indicator and RFC 9207 issuer validation (the browser step is
// the application's Config.Authorize callback; [Loopback] serves an RFC
// 8252 loopback redirect), client credentials (client_secret_basic,
// client_secret_post, private_key_jwt), or the JWT-bearer grant
// (workload identity federation, and enterprise-managed authorization
// with [IDJAGAssertion]). Tokens may be DPoP-bound ([DPoPKey], nonces
// honoured at both servers); they are kept in a [Store], refreshed
// before they expire, and stepped up on 403 insufficient_scope with the
// union of scopes, a bounded number of times.
//
// Plug it into the MCP client through its HTTP client:
//
//	hc := &http.Client{Transport: oauth.NewTransport(nil, cfg)}
//	c := client.New(client.NewHTTPTransport(url, &client.HTTPOptions{Client: hc}), nil)
package oauth
