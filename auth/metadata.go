package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// WellKnownPath is the RFC 9728 well-known path suffix of protected resource
// metadata.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// DefaultMetadataMaxAge is how long clients and caches may keep the
// metadata document served by [ResourceMetadata.Handler], in seconds.
const DefaultMetadataMaxAge = 3600

// ResourceMetadata is the OAuth 2.0 Protected Resource Metadata document
// (RFC 9728 §2) of an MCP server. MCP requires it: clients read it to find
// the authorization servers that issue tokens for this server.
//
// The zero value is not valid; [ResourceMetadata.Validate] says what is
// missing. [ResourceMetadata.Handler] and the Admission methods take a
// snapshot: changes made afterwards do not affect them.
type ResourceMetadata struct {
	// Resource is the canonical URI of the MCP server (RFC 8707 §2): an
	// absolute https URL of scheme, host, optional port and optional path,
	// with no query, fragment or user info, scheme and host in lower case,
	// for example "https://mcp.example.com/mcp". Plain http is accepted only
	// for loopback hosts (development and tests). Clients send it as the
	// "resource" parameter, and JWT access tokens carry it as audience.
	Resource string `json:"resource"`
	// AuthorizationServers are the issuer identifiers (RFC 8414) of the
	// authorization servers whose tokens this server accepts. At least one
	// is required; each is an https URL without query or fragment (http
	// only for loopback hosts).
	AuthorizationServers []string `json:"authorization_servers"`
	// JWKSURI is the URL of the resource's own JSON Web Key Set, if it signs
	// responses. Rarely needed; optional.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// ScopesSupported is the minimal set of scopes needed for basic use of
	// the server. It must not contain "offline_access" (SEP-2207): refresh
	// tokens are a matter between client and authorization server.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported lists how tokens are sent. Default ["header"],
	// the only method MCP allows ("query" and "body" are refused).
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// ResourceSigningAlgValuesSupported lists the JWS algorithms the
	// resource signs responses with. Optional.
	ResourceSigningAlgValuesSupported []string `json:"resource_signing_alg_values_supported,omitempty"`
	// ResourceName is a human-readable name of the server, shown to users.
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is the URL of developer documentation.
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
	// ResourcePolicyURI is the URL of the data usage policy.
	ResourcePolicyURI string `json:"resource_policy_uri,omitempty"`
	// ResourceTOSURI is the URL of the terms of service.
	ResourceTOSURI string `json:"resource_tos_uri,omitempty"`
}

// Validate reports the first problem that makes m unusable, or nil.
func (m *ResourceMetadata) Validate() error {
	if m == nil {
		return fmt.Errorf("%w: resource metadata is nil", ErrConfig)
	}
	if _, err := parseResource(m.Resource); err != nil {
		return err
	}
	if len(m.AuthorizationServers) == 0 {
		return fmt.Errorf("%w: resource metadata needs at least one authorization server (authorization_servers)", ErrConfig)
	}
	seen := map[string]bool{}
	for i, as := range m.AuthorizationServers {
		if err := checkIssuerURL(as); err != nil {
			return fmt.Errorf("%w: authorization_servers[%d]: %v", ErrConfig, i, err)
		}
		if seen[as] {
			return fmt.Errorf("%w: authorization_servers[%d] %q is listed twice", ErrConfig, i, as)
		}
		seen[as] = true
	}
	if err := checkScopes("scopes_supported", m.ScopesSupported); err != nil {
		return err
	}
	for i, s := range m.ScopesSupported {
		if s == "offline_access" {
			return fmt.Errorf("%w: scopes_supported[%d] is \"offline_access\", which a protected resource must not advertise (SEP-2207)", ErrConfig, i)
		}
	}
	for i, bm := range m.BearerMethodsSupported {
		switch bm {
		case "header":
		case "query":
			return fmt.Errorf("%w: bearer_methods_supported[%d] is \"query\": MCP forbids access tokens in the query string", ErrConfig, i)
		case "body":
			return fmt.Errorf("%w: bearer_methods_supported[%d] is \"body\": this package reads tokens only from the Authorization header", ErrConfig, i)
		default:
			return fmt.Errorf("%w: bearer_methods_supported[%d] is %q; the only supported method is \"header\"", ErrConfig, i, bm)
		}
	}
	for _, f := range []struct{ name, value string }{
		{"jwks_uri", m.JWKSURI},
		{"resource_documentation", m.ResourceDocumentation},
		{"resource_policy_uri", m.ResourcePolicyURI},
		{"resource_tos_uri", m.ResourceTOSURI},
	} {
		if f.value == "" {
			continue
		}
		u, err := url.Parse(f.value)
		if err != nil || !u.IsAbs() || u.Host == "" {
			return fmt.Errorf("%w: %s %q is not an absolute URL", ErrConfig, f.name, f.value)
		}
	}
	return nil
}

// MetadataURL returns the URL of the metadata document derived from
// Resource by RFC 9728 §3.1 path insertion: the well-known path goes between
// the host and the path, so "https://example.com/mcp" has its metadata at
// "https://example.com/.well-known/oauth-protected-resource/mcp". This is
// the resource_metadata value of challenges. It returns "" when Resource
// is invalid.
func (m *ResourceMetadata) MetadataURL() string {
	if m == nil {
		return ""
	}
	u, err := parseResource(m.Resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + insertedPath(u)
}

// WellKnownPaths returns the paths at which to mount [ResourceMetadata.Handler]:
// the path-inserted one ("/.well-known/oauth-protected-resource/mcp" for a
// Resource with path "/mcp") first, then the root one
// ("/.well-known/oauth-protected-resource"), which clients try last. For a
// Resource without a path both are the same and only one is returned. It
// returns nil when Resource is invalid.
func (m *ResourceMetadata) WellKnownPaths() []string {
	if m == nil {
		return nil
	}
	u, err := parseResource(m.Resource)
	if err != nil {
		return nil
	}
	p := insertedPath(u)
	if p == WellKnownPath {
		return []string{WellKnownPath}
	}
	return []string{p, WellKnownPath}
}

// insertedPath is the RFC 9728 §3.1 path of the metadata of resource u.
func insertedPath(u *url.URL) string {
	p := u.EscapedPath()
	if p == "/" {
		p = "" // a terminating slash after the host is removed
	}
	return WellKnownPath + p
}

// snapshot returns a deep copy of m (nil for nil), so that later changes to
// m do not race with admission.
func (m *ResourceMetadata) snapshot() *ResourceMetadata {
	if m == nil {
		return nil
	}
	c := *m
	c.AuthorizationServers = slices.Clone(m.AuthorizationServers)
	c.ScopesSupported = slices.Clone(m.ScopesSupported)
	c.BearerMethodsSupported = slices.Clone(m.BearerMethodsSupported)
	c.ResourceSigningAlgValuesSupported = slices.Clone(m.ResourceSigningAlgValuesSupported)
	return &c
}

// document returns the metadata as served: validated, with defaults.
func (m *ResourceMetadata) document() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	d := *m
	if len(d.BearerMethodsSupported) == 0 {
		d.BearerMethodsSupported = []string{"header"}
	}
	b, err := json.Marshal(&d)
	if err != nil {
		return nil, fmt.Errorf("auth: encode resource metadata: %w", err)
	}
	return b, nil
}

// Handler returns an http.Handler serving the metadata document as JSON
// (application/json) with caching headers: Cache-Control public for
// [DefaultMetadataMaxAge] seconds, a strong ETag and 304 answers to a
// matching If-None-Match. It answers GET and HEAD, OPTIONS preflights, and
// 405 otherwise, and allows cross-origin reads (the document is public and
// browser-based clients fetch it). The document is a snapshot of m taken
// now; the error says why m is invalid.
func (m *ResourceMetadata) Handler() (http.Handler, error) {
	body, err := m.document()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	return &metadataHandler{
		body: body,
		etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`,
	}, nil
}

type metadataHandler struct {
	body []byte
	etag string
}

func (h *metadataHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", "*")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		hd.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		hd.Set("Access-Control-Allow-Headers", "*")
		hd.Set("Access-Control-Max-Age", "86400")
		hd.Set("Allow", "GET, HEAD, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		hd.Set("Allow", "GET, HEAD, OPTIONS")
		hd.Set("Content-Type", "text/plain; charset=utf-8")
		hd.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write([]byte("Method not allowed: use GET\n"))
		return
	}
	hd.Set("Cache-Control", "public, max-age="+strconv.Itoa(DefaultMetadataMaxAge))
	hd.Set("ETag", h.etag)
	hd.Set("X-Content-Type-Options", "nosniff")
	if etagMatches(r.Header.Get("If-None-Match"), h.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(h.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(h.body)
	}
}

// etagMatches implements the weak comparison of If-None-Match (RFC 9110
// §13.1.2).
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// parseResource checks a canonical MCP server URI and returns it parsed.
func parseResource(s string) (*url.URL, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: resource (the server's canonical URI) is required", ErrConfig)
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: resource %q is not a URL: %v", ErrConfig, s, err)
	}
	if !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("%w: resource %q must be an absolute URL with scheme and host, like https://mcp.example.com/mcp", ErrConfig, s)
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return nil, fmt.Errorf("%w: resource %q must not have a fragment", ErrConfig, s)
	}
	if u.RawQuery != "" || u.ForceQuery {
		return nil, fmt.Errorf("%w: resource %q must not have a query", ErrConfig, s)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: resource %q must not have user info", ErrConfig, s)
	}
	if err := checkSchemeHost(u); err != nil {
		return nil, fmt.Errorf("%w: resource %q: %v", ErrConfig, s, err)
	}
	if u.Scheme != strings.ToLower(u.Scheme) || u.Host != strings.ToLower(u.Host) {
		return nil, fmt.Errorf("%w: resource %q is not canonical: scheme and host must be lower case", ErrConfig, s)
	}
	return u, nil
}

// checkIssuerURL checks an authorization server issuer identifier
// (RFC 8414 §2).
func checkIssuerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", s, err)
	}
	if !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("%q must be an absolute URL with scheme and host", s)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return fmt.Errorf("%q must not have a query or fragment", s)
	}
	if u.User != nil {
		return fmt.Errorf("%q must not have user info", s)
	}
	if err := checkSchemeHost(u); err != nil {
		return fmt.Errorf("%q: %v", s, err)
	}
	return nil
}

// checkSchemeHost requires https, or http on a loopback host.
func checkSchemeHost(u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("plain http is allowed only for loopback hosts; use https")
	}
	return fmt.Errorf("scheme %q is not https", u.Scheme)
}

// isLoopback reports whether host (without port) is localhost or a loopback
// IP address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkScopes requires each scope to be an RFC 6749 §3.3 scope-token and
// forbids duplicates.
func checkScopes(field string, scopes []string) error {
	seen := map[string]bool{}
	for i, s := range scopes {
		if !isScopeToken(s) {
			return fmt.Errorf("%w: %s[%d] %s is not a valid scope (RFC 6749 scope-token: printable ASCII without space, '\"' or '\\')", ErrConfig, field, i, quoteUntrusted(s))
		}
		if seen[s] {
			return fmt.Errorf("%w: %s[%d] %q is listed twice", ErrConfig, field, i, s)
		}
		seen[s] = true
	}
	return nil
}

// isScopeToken reports whether s is an RFC 6749 scope-token:
// 1*( %x21 / %x23-5B / %x5D-7E ).
func isScopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
