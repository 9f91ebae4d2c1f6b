package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// MaxMetadataBytes bounds a metadata document, a registration response
// and a token response read from a server.
const MaxMetadataBytes = 256 << 10

// ResourceMetadata is OAuth 2.0 Protected Resource Metadata (RFC 9728).
type ResourceMetadata struct {
	Resource                          string   `json:"resource"`
	AuthorizationServers              []string `json:"authorization_servers,omitempty"`
	ScopesSupported                   []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported            []string `json:"bearer_methods_supported,omitempty"`
	ResourceName                      string   `json:"resource_name,omitempty"`
	DPoPSigningAlgValuesSupported     []string `json:"dpop_signing_alg_values_supported,omitempty"`
	DPoPBoundAccessTokensRequired     bool     `json:"dpop_bound_access_tokens_required,omitempty"`
	TLSClientCertificateBoundRequired bool     `json:"tls_client_certificate_bound_access_tokens,omitempty"`
}

// ServerMetadata is OAuth 2.0 Authorization Server Metadata (RFC 8414),
// also read from an OpenID Connect discovery document.
type ServerMetadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint,omitempty"`
	TokenEndpoint                              string   `json:"token_endpoint,omitempty"`
	RegistrationEndpoint                       string   `json:"registration_endpoint,omitempty"`
	JWKSURI                                    string   `json:"jwks_uri,omitempty"`
	ScopesSupported                            []string `json:"scopes_supported,omitempty"`
	ResponseTypesSupported                     []string `json:"response_types_supported,omitempty"`
	GrantTypesSupported                        []string `json:"grant_types_supported,omitempty"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported,omitempty"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported,omitempty"`
	DPoPSigningAlgValuesSupported              []string `json:"dpop_signing_alg_values_supported,omitempty"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported,omitempty"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported,omitempty"`
}

// ErrNoMetadata reports that no metadata document was found at any of the
// locations tried.
var ErrNoMetadata = errors.New("oauth: metadata not found")

// ErrMetadata reports a metadata document that is unusable: malformed,
// or failing the validation the specification asks for.
var ErrMetadata = errors.New("oauth: invalid metadata")

// ParseResourceMetadata decodes and checks a protected resource metadata
// document: resource must be an absolute URL without a fragment.
func ParseResourceMetadata(data []byte) (*ResourceMetadata, error) {
	var m ResourceMetadata
	if err := decodeJSONObject(data, &m); err != nil {
		return nil, fmt.Errorf("%w: protected resource metadata: %w", ErrMetadata, err)
	}
	if err := checkAbsURL(m.Resource, false); err != nil {
		return nil, fmt.Errorf("%w: protected resource metadata resource: %w", ErrMetadata, err)
	}
	for _, as := range m.AuthorizationServers {
		if err := checkAbsURL(as, false); err != nil {
			return nil, fmt.Errorf("%w: authorization server %q: %w", ErrMetadata, as, err)
		}
	}
	return &m, nil
}

// ParseServerMetadata decodes an authorization server metadata document
// and checks that its issuer is exactly issuer (RFC 8414 section 3.3: no
// normalisation) and that its endpoints are absolute URLs.
func ParseServerMetadata(data []byte, issuer string) (*ServerMetadata, error) {
	var m ServerMetadata
	if err := decodeJSONObject(data, &m); err != nil {
		return nil, fmt.Errorf("%w: authorization server metadata: %w", ErrMetadata, err)
	}
	if m.Issuer != issuer {
		return nil, fmt.Errorf("%w: the metadata's issuer %q is not the issuer %q it was fetched for", ErrMetadata, m.Issuer, issuer)
	}
	for name, u := range map[string]string{"authorization_endpoint": m.AuthorizationEndpoint, "token_endpoint": m.TokenEndpoint, "registration_endpoint": m.RegistrationEndpoint} {
		if u == "" {
			continue
		}
		if err := checkAbsURL(u, true); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrMetadata, name, err)
		}
	}
	return &m, nil
}

func decodeJSONObject(data []byte, v any) error {
	trim := strings.TrimSpace(string(data))
	if !strings.HasPrefix(trim, "{") {
		return errors.New("not a JSON object")
	}
	return json.Unmarshal(data, v)
}

// checkAbsURL accepts an absolute http(s) URL without a fragment (and,
// unless query is allowed, without a query).
func checkAbsURL(s string, query bool) error {
	if s == "" {
		return errors.New("missing")
	}
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	if u.Fragment != "" || strings.Contains(s, "#") {
		return fmt.Errorf("%q has a fragment", s)
	}
	if !query && u.RawQuery != "" {
		return fmt.Errorf("%q has a query", s)
	}
	return nil
}

// ResourceMetadataURLs returns the well-known locations of the protected
// resource metadata of the MCP endpoint serverURL, in the order the
// specification gives: the path-suffixed one first (when the endpoint has
// a path), then the root.
func ResourceMetadataURLs(serverURL string) ([]string, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, err
	}
	base := u.Scheme + "://" + u.Host
	var out []string
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		out = append(out, base+"/.well-known/oauth-protected-resource"+p)
	}
	return append(out, base+"/.well-known/oauth-protected-resource"), nil
}

// ServerMetadataURLs returns the well-known locations of the metadata of
// the authorization server issuer, in the specification's priority order:
// RFC 8414 then OpenID Connect discovery, path-inserted forms first.
func ServerMetadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, err
	}
	base := u.Scheme + "://" + u.Host
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	if p == "" {
		return []string{base + "/.well-known/oauth-authorization-server", base + "/.well-known/openid-configuration"}, nil
	}
	return []string{
		base + "/.well-known/oauth-authorization-server" + p,
		base + "/.well-known/openid-configuration" + p,
		base + p + "/.well-known/openid-configuration",
	}, nil
}

// fetchJSON GETs u and returns its body: (nil, nil) for a 4xx answer (the
// document is not there), an error for anything else that is not a 200
// with a JSON body.
func fetchJSON(ctx context.Context, hc *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("oauth: GET %s: HTTP %s", u, resp.Status)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "" && mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return nil, fmt.Errorf("oauth: GET %s: Content-Type %q is not JSON", u, mt)
	}
	return readLimited(resp.Body)
}

func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxMetadataBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxMetadataBytes {
		return nil, fmt.Errorf("%w: document exceeds %d bytes", ErrMetadata, MaxMetadataBytes)
	}
	return data, nil
}

// DiscoverResource finds the protected resource metadata of the MCP
// endpoint serverURL: from the challenge's resource_metadata URL when
// given, else from the well-known locations in order. The document's
// resource must identify serverURL (see [ResourceMatches]).
func DiscoverResource(ctx context.Context, hc *http.Client, serverURL, metadataURL string) (*ResourceMetadata, error) {
	urls := []string{}
	if metadataURL != "" {
		if err := checkAbsURL(metadataURL, true); err != nil {
			return nil, fmt.Errorf("%w: resource_metadata: %w", ErrMetadata, err)
		}
		urls = append(urls, metadataURL)
	} else {
		var err error
		if urls, err = ResourceMetadataURLs(serverURL); err != nil {
			return nil, err
		}
	}
	for _, u := range urls {
		data, err := fetchJSON(ctx, hc, u)
		if err != nil {
			return nil, err
		}
		if data == nil {
			continue
		}
		m, err := ParseResourceMetadata(data)
		if err != nil {
			return nil, err
		}
		if !ResourceMatches(m.Resource, serverURL) {
			return nil, fmt.Errorf("%w: the protected resource metadata names resource %q, which is not the server %q", ErrMetadata, m.Resource, serverURL)
		}
		return m, nil
	}
	return nil, fmt.Errorf("%w: no protected resource metadata for %s (tried %s)", ErrNoMetadata, serverURL, strings.Join(urls, ", "))
}

// ResourceMatches reports whether the resource identifier of protected
// resource metadata covers the MCP endpoint serverURL: the same scheme and
// host (case-insensitive) and a path that is the endpoint's or a parent of
// it on a segment boundary.
func ResourceMatches(resource, serverURL string) bool {
	r, err1 := url.Parse(resource)
	s, err2 := url.Parse(serverURL)
	if err1 != nil || err2 != nil {
		return false
	}
	if !strings.EqualFold(r.Scheme, s.Scheme) || !strings.EqualFold(r.Host, s.Host) {
		return false
	}
	rp, sp := strings.TrimSuffix(r.EscapedPath(), "/"), strings.TrimSuffix(s.EscapedPath(), "/")
	return rp == "" || rp == sp || strings.HasPrefix(sp, rp+"/")
}

// DiscoverServer finds and validates the metadata of authorization server
// issuer at the well-known locations, in the specification's order.
func DiscoverServer(ctx context.Context, hc *http.Client, issuer string) (*ServerMetadata, error) {
	urls, err := ServerMetadataURLs(issuer)
	if err != nil {
		return nil, err
	}
	for _, u := range urls {
		data, err := fetchJSON(ctx, hc, u)
		if err != nil {
			return nil, err
		}
		if data == nil {
			continue
		}
		return ParseServerMetadata(data, issuer)
	}
	return nil, fmt.Errorf("%w: no authorization server metadata for %s (tried %s)", ErrNoMetadata, issuer, strings.Join(urls, ", "))
}
