package authserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Client is an OAuth client known to the server.
type Client struct {
	// ID is the client_id: an https URL for a metadata-document client.
	ID string `json:"client_id"`
	// Secret is the client secret of a confidential pre-registered client
	// (client_secret_basic or client_secret_post); empty for a public
	// client. Dynamically registered clients are public.
	Secret string `json:"-"`
	// Name is shown on the consent page.
	Name string `json:"client_name,omitempty"`
	// URI is the client's home page, shown on the consent page.
	URI string `json:"client_uri,omitempty"`
	// RedirectURIs are compared exactly with the redirect_uri of a request.
	RedirectURIs []string `json:"redirect_uris"`
	// Scopes, when set, bound the scopes the client may ask for.
	Scopes []string `json:"-"`
	// kind says how the client registered: "static", "cimd" or "dynamic".
	kind string
}

// check validates a client's fields.
func (c *Client) check() error {
	if c.ID == "" || len(c.ID) > MaxParamBytes {
		return errors.New("client_id is empty or too long")
	}
	if len(c.RedirectURIs) == 0 {
		return errors.New("redirect_uris is empty")
	}
	if len(c.RedirectURIs) > MaxRedirectURIs {
		return fmt.Errorf("more than %d redirect_uris", MaxRedirectURIs)
	}
	for _, r := range c.RedirectURIs {
		if err := checkRedirectURI(r); err != nil {
			return err
		}
	}
	if len(c.Name) > 200 {
		return errors.New("client_name is longer than 200 bytes")
	}
	if c.URI != "" {
		u, err := url.Parse(c.URI)
		if err != nil || u.Scheme != "https" || u.Host == "" || len(c.URI) > MaxParamBytes {
			return fmt.Errorf("client_uri %q is not an https URL", c.URI)
		}
	}
	return nil
}

// checkRedirectURI accepts an https URL, an http URL on a loopback host, or
// a private-use scheme URI (RFC 8252 §7.1, with a dot in the scheme), none
// with a fragment.
func checkRedirectURI(r string) error {
	if len(r) > MaxParamBytes {
		return errors.New("a redirect URI is too long")
	}
	u, err := url.Parse(r)
	if err != nil || u.Scheme == "" || u.Fragment != "" || strings.ContainsAny(r, " \t\r\n") {
		return fmt.Errorf("redirect URI %q is not an absolute URI without fragment", r)
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
	case strings.Contains(u.Scheme, ".") && u.Host == "" && u.Opaque == "":
	default:
		return fmt.Errorf("redirect URI %q must be https, http on localhost, or a private-use scheme", r)
	}
	return nil
}

// isURLClientID reports whether a client_id names a metadata document.
func isURLClientID(id string) bool {
	return strings.HasPrefix(id, "https://") || strings.HasPrefix(id, "http://")
}

// authenticate checks the client's credentials on a token or revocation
// request: the secret of a confidential client (Basic or form), none for a
// public one.
func (c *Client) authenticate(basicID, basicSecret, formSecret string, hasBasic bool) bool {
	if c.Secret == "" {
		return !hasBasic && formSecret == ""
	}
	got := formSecret
	if hasBasic {
		if basicID != c.ID {
			return false
		}
		got = basicSecret
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(c.Secret)) == 1
}

// errUnknownClient is an unknown client_id.
var errUnknownClient = errors.New("unknown client")

// client resolves a client_id: pre-registered, a metadata document URL, or
// dynamically registered.
func (s *Server) client(ctx context.Context, id string) (*Client, error) {
	if c, ok := s.clients[id]; ok {
		return c, nil // shared by every request: never written after New
	}
	if isURLClientID(id) {
		if s.cfg.CIMD.Disabled {
			return nil, fmt.Errorf("%w: client metadata documents are disabled", errUnknownClient)
		}
		return s.cimd.client(ctx, id)
	}
	if !s.cfg.DynamicRegistration {
		return nil, errUnknownClient
	}
	it, err := s.store.Get(ctx, kindClient, id)
	if errors.Is(err, ErrNotFound) {
		return nil, errUnknownClient
	}
	if err != nil {
		return nil, err
	}
	var c Client
	if err := json.Unmarshal(it.Data, &c); err != nil {
		return nil, fmt.Errorf("authserver: stored client: %w", err)
	}
	c.kind = "dynamic"
	return &c, nil
}

// Item kinds of the store.
const (
	kindPending  = "pending" // an authorization request awaiting the upstream login
	kindConsent  = "consreq" // a signed-in request awaiting consent
	kindCode     = "code"
	kindRefresh  = "refresh"
	kindGrant    = "grant"   // the family: identity and encrypted upstream tokens
	kindRemember = "consent" // a remembered consent
	kindClient   = "client"
	kindCIMD     = "cimd"
	kindDPoPJTI  = "dpopjti"
)

// registration is an RFC 7591 request, as far as it is accepted.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope"`
}

// serveRegister is RFC 7591 dynamic registration of public clients.
func (s *Server) serveRegister(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRegistrationBytes))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError{"invalid_client_metadata", "the registration request is unreadable or larger than the limit"})
		return
	}
	var reg registration
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&reg); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError{"invalid_client_metadata", "the registration request is not a JSON object"})
		return
	}
	if reg.TokenEndpointAuthMethod != "" && reg.TokenEndpointAuthMethod != "none" {
		writeJSON(w, http.StatusBadRequest, oauthError{"invalid_client_metadata", "only public clients (token_endpoint_auth_method none) may register"})
		return
	}
	for _, g := range reg.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			writeJSON(w, http.StatusBadRequest, oauthError{"invalid_client_metadata", "unsupported grant type"})
			return
		}
	}
	for _, rt := range reg.ResponseTypes {
		if rt != "code" {
			writeJSON(w, http.StatusBadRequest, oauthError{"invalid_client_metadata", "unsupported response type"})
			return
		}
	}
	c := Client{ID: "dyn_" + randomToken()[:32], Name: reg.ClientName, URI: reg.ClientURI, RedirectURIs: reg.RedirectURIs}
	if err := c.check(); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError{"invalid_redirect_uri", err.Error()})
		return
	}
	data, _ := json.Marshal(c)
	ctx := r.Context()
	exp := s.now().Add(DefaultDynamicClientTTL)
	if err := s.store.Put(ctx, Item{Kind: kindClient, ID: c.ID, Data: data, Expires: exp}); err != nil {
		s.serverError(w, r, err)
		return
	}
	if err := s.store.Trim(ctx, kindClient, s.cfg.MaxDynamicClients); err != nil {
		s.log.Warn("authserver: trim clients", "error", err)
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        s.now().Unix(),
		"client_secret_expires_at":   0,
		"redirect_uris":              c.RedirectURIs,
		"client_name":                c.Name,
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
	})
}

// allowedRedirect reports whether redirect is one of the client's: equal
// to one, or, for an http redirect URI on a loopback host, equal to one
// but for the port (RFC 8252 §7.3, OAuth 2.1 §8.4.2: a native client
// listens on whatever port the system gives it, so any port is allowed).
// Scheme, host, path and query still match exactly.
func (c *Client) allowedRedirect(redirect string) bool {
	if slices.Contains(c.RedirectURIs, redirect) {
		return true
	}
	want, ok := loopbackWithoutPort(redirect)
	if !ok {
		return false
	}
	for _, r := range c.RedirectURIs {
		if got, ok := loopbackWithoutPort(r); ok && got == want {
			return true
		}
	}
	return false
}

// loopbackWithoutPort returns an http redirect URI on a loopback host with
// its port removed, and whether it is one.
func loopbackWithoutPort(r string) (string, bool) {
	u, err := url.Parse(r)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Fragment != "" || !isLoopbackHost(u.Hostname()) {
		return "", false
	}
	host := u.Hostname()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	u.Host = host
	return u.String(), true
}
