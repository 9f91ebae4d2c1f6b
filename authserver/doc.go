// Package authserver is an OAuth 2.1 authorization server for the users of
// Weft servers, in front of the OpenID Connect identity provider a company
// already runs (Entra ID, Okta, Auth0, Google, Ory Hydra…), which it uses
// through one pre-registered client.
//
// MCP clients register with it by Client ID Metadata Document (the
// client_id is an https URL the server fetches, with SSRF protection), by
// pre-registration ([Config].Clients), or optionally by RFC 7591 dynamic
// registration ([Config].DynamicRegistration, off by default). Users sign
// in at the upstream provider, consent once per client on a plain HTML page
// (CSRF-protected, remembered, revocable with [Server.RevokeConsent]), and
// the client gets short-lived JWT access tokens bound to one MCP server
// (RFC 8707) and rotating refresh tokens whose reuse revokes the whole
// grant. The upstream provider's tokens stay on the server, encrypted
// ([Server.UpstreamTokens]).
//
// It implements RFC 8414 metadata (and the OIDC discovery path), the
// authorization code grant with PKCE S256 only, RFC 9207 iss, RFC 7009
// revocation, DPoP-bound tokens (RFC 9449), and the identity assertion
// grant of MCP's enterprise-managed authorization ([Config].IDJAG).
//
// The seam to the rest of Weft is narrow: a Weft server validates the
// tokens with auth.JWTValidator reading [Server.JWKSURL] (or
// [Server.PublicKeys] in the same process), exactly as it would any
// issuer's. State lives in a [Store]: [OpenSQLite] for one process,
// [OpenPostgres] for a fleet, where any instance finishes any flow.
//
// See docs/authorization.md for the flows, a fleet layout and the threats
// handled, and docs/limits.md for its bounds.
package authserver
