package auth

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/weftmcp/weft"
)

// Error codes of the Bearer scheme (RFC 6750 §3.1).
const (
	// ErrorInvalidRequest: the request is malformed (HTTP 400).
	ErrorInvalidRequest = "invalid_request"
	// ErrorInvalidToken: the token is expired, revoked, malformed or
	// otherwise invalid (HTTP 401).
	ErrorInvalidToken = "invalid_token"
	// ErrorInsufficientScope: the token lacks scopes the request needs
	// (HTTP 403).
	ErrorInsufficientScope = "insufficient_scope"
)

// Challenge is a Bearer WWW-Authenticate challenge (RFC 6750 §3) with the
// resource_metadata parameter of RFC 9728 §5.1. [Challenge.Value] renders
// it; empty fields are left out.
type Challenge struct {
	// Realm is the protection space; optional and rarely useful.
	Realm string
	// ResourceMetadata is the URL of the protected resource metadata
	// ([ResourceMetadata.MetadataURL]). MCP servers include it in every
	// challenge so clients can discover the authorization server.
	ResourceMetadata string
	// Scopes are the scopes the request needs. On a 403 insufficient_scope
	// challenge they are all the scopes the operation needs, in one
	// challenge. Each must be an RFC 6749 scope-token.
	Scopes []string
	// Error is the error code: "" when the request had no token,
	// ErrorInvalidToken, ErrorInsufficientScope or ErrorInvalidRequest.
	Error string
	// ErrorDescription is a human-readable sentence for developers
	// (printable ASCII). Never put a token or secret in it.
	ErrorDescription string
}

// Value renders the challenge as a WWW-Authenticate header value, for
// example
//
//	Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read"
//
// Values are RFC 9110 quoted-strings ('"' and '\' escaped). It fails on a
// value that cannot be sent safely: one with CR, LF or another control
// character, with non-ASCII characters, a scope that is not a scope-token,
// or an Error code that is not a token.
func (c Challenge) Value() (string, error) {
	type param struct{ name, value string }
	var ps []param
	scope := ""
	if len(c.Scopes) > 0 {
		for i, s := range c.Scopes {
			if !isScopeToken(s) {
				return "", fmt.Errorf("auth: challenge scope %d %s is not an RFC 6749 scope-token", i, quoteUntrusted(s))
			}
		}
		scope = strings.Join(c.Scopes, " ")
	}
	if c.Error != "" && !isErrorCode(c.Error) {
		return "", fmt.Errorf("auth: challenge error code %s is not a valid RFC 6750 error code", quoteUntrusted(c.Error))
	}
	add := func(name, value string) {
		if value != "" {
			ps = append(ps, param{name, value})
		}
	}
	add("realm", c.Realm)
	if c.Error == ErrorInsufficientScope {
		// The order of the MCP specification's example.
		add("error", c.Error)
		add("scope", scope)
		add("resource_metadata", c.ResourceMetadata)
	} else {
		add("resource_metadata", c.ResourceMetadata)
		add("scope", scope)
		add("error", c.Error)
	}
	add("error_description", c.ErrorDescription)

	var b strings.Builder
	b.WriteString("Bearer")
	for i, p := range ps {
		q, err := quoteString(p.value)
		if err != nil {
			return "", fmt.Errorf("auth: challenge parameter %s: %w", p.name, err)
		}
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteString(", ")
		}
		b.WriteString(p.name)
		b.WriteByte('=')
		b.WriteString(q)
	}
	return b.String(), nil
}

// quoteString returns s as an RFC 9110 quoted-string, escaping '"' and '\'
// as quoted-pairs. It refuses control characters (CR and LF included),
// DEL and non-ASCII bytes.
func quoteString(s string) (string, error) {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t' || (c >= 0x20 && c < 0x7f):
			b.WriteByte(c)
		case c >= 0x80:
			return "", fmt.Errorf("value contains a non-ASCII byte at offset %d", i)
		default:
			return "", fmt.Errorf("value contains control character 0x%02x at offset %d", c, i)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// isErrorCode reports whether s fits RFC 6750's error attribute:
// 1*( %x20-21 / %x23-5B / %x5D-7E ), without spaces so that it stays a code.
func isErrorCode(s string) bool {
	return isScopeToken(s)
}

// MissingToken returns the 401 rejection of a request without a token: a
// challenge with resource_metadata and scope but no error code (RFC 6750
// §3.1). scopes are the scopes the request needs; when empty, the
// metadata's ScopesSupported are used. m may be nil (no resource_metadata).
func (m *ResourceMetadata) MissingToken(scopes []string) *weft.AdmissionError {
	if len(scopes) == 0 && m != nil {
		scopes = m.ScopesSupported
	}
	return m.reject(http.StatusUnauthorized, "Authorization required",
		Challenge{Scopes: scopes})
}

// InvalidToken returns the 401 rejection of a request whose token is
// invalid, expired or unknown: error="invalid_token" with description,
// resource_metadata and scope. scopes default as in
// [ResourceMetadata.MissingToken].
func (m *ResourceMetadata) InvalidToken(scopes []string, description string) *weft.AdmissionError {
	if len(scopes) == 0 && m != nil {
		scopes = m.ScopesSupported
	}
	return m.reject(http.StatusUnauthorized, "Invalid access token",
		Challenge{Scopes: scopes, Error: ErrorInvalidToken, ErrorDescription: description})
}

// InsufficientScope returns the 403 rejection of a request whose valid
// token lacks scopes: error="insufficient_scope" with scope set to all the
// scopes the operation needs (the MCP specification asks for all of them in
// one challenge, not only the missing ones), resource_metadata and
// description.
func (m *ResourceMetadata) InsufficientScope(scopes []string, description string) *weft.AdmissionError {
	return m.reject(http.StatusForbidden, "Insufficient scope",
		Challenge{Scopes: scopes, Error: ErrorInsufficientScope, ErrorDescription: description})
}

// reject builds an AdmissionError. If the challenge cannot be rendered (a
// description or scope with forbidden characters), it drops the
// description, then the scopes, rather than send a broken header.
func (m *ResourceMetadata) reject(status int, message string, c Challenge) *weft.AdmissionError {
	c.ResourceMetadata = m.MetadataURL()
	v, err := c.Value()
	if err != nil {
		c.ErrorDescription = ""
		v, err = c.Value()
	}
	if err != nil {
		c.Scopes = nil
		v, err = c.Value()
	}
	if err != nil {
		v = "Bearer"
	}
	return &weft.AdmissionError{Status: status, Message: message, Challenge: v}
}
