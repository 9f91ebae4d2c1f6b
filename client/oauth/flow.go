package oauth

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Grant types.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
	GrantRefreshToken      = "refresh_token"
	GrantJWTBearer         = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	GrantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
)

// Token endpoint authentication methods.
const (
	AuthNone              = "none"
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
	AuthPrivateKeyJWT     = "private_key_jwt"
)

// DefaultMaxStepUps bounds the step-up authorizations one request may
// trigger on 403 insufficient_scope before the 403 is returned.
const DefaultMaxStepUps = 2

// refreshSkew is how long before its expiry a token is refreshed.
const refreshSkew = 30 * time.Second

// AssertionRequest describes the token request an assertion is made for.
type AssertionRequest struct {
	// Issuer is the authorization server's issuer (the assertion's
	// audience).
	Issuer string
	// TokenEndpoint is the authorization server's token endpoint.
	TokenEndpoint string
	// Resource is the resource indicator of the MCP server.
	Resource string
	// Scopes are the scopes being requested.
	Scopes []string
}

// Config configures the authorization of a client. The zero value runs
// the authorization code flow and needs Authorize and RedirectURL.
type Config struct {
	// HTTPClient talks to the authorization servers and fetches metadata.
	// Default http.DefaultClient.
	HTTPClient *http.Client
	// Grant is how tokens are obtained: GrantAuthorizationCode (the
	// default, on behalf of a user), GrantClientCredentials (the client on
	// its own behalf) or GrantJWTBearer (an assertion from Assertion:
	// workload identity federation, or enterprise-managed authorization
	// with [IDJAGAssertion]).
	Grant string

	// ClientID and ClientSecret are a pre-registered client. ClientIssuer,
	// when set, limits them to that authorization server.
	ClientID     string
	ClientSecret string
	ClientIssuer string
	// AuthMethod forces the token endpoint authentication method of the
	// pre-registered client (default: chosen from the server's metadata).
	AuthMethod string
	// PrivateKey signs private_key_jwt client assertions (SigningAlg and
	// KeyID optional: the key's default algorithm, no kid).
	PrivateKey crypto.Signer
	SigningAlg string
	KeyID      string

	// ClientMetadataURL is the client's metadata document URL (CIMD),
	// used as its client_id where the server supports it.
	ClientMetadataURL string
	// ClientName is sent in dynamic client registration.
	ClientName string
	// ApplicationType is sent in dynamic client registration: "native"
	// (the default for loopback and custom-scheme redirects) or "web".
	ApplicationType string

	// RedirectURL is the redirect URI of the authorization code flow.
	RedirectURL string
	// Authorize lets the user authorize: it opens authURL (a browser) and
	// returns the query parameters of the redirect to RedirectURL.
	Authorize func(ctx context.Context, authURL string) (url.Values, error)

	// Assertion returns the JWT of the JWT-bearer grant.
	Assertion func(ctx context.Context, req AssertionRequest) (string, error)

	// AuthorizationParams are added to authorization requests, for
	// authorization servers that need more than the resource indicator to
	// issue a token for the MCP server (for example "audience" at Auth0 or
	// Ory Hydra, which do not implement RFC 8707). The parameters the flow
	// sets itself cannot be overridden.
	AuthorizationParams url.Values

	// Scopes are requested in addition to those the server asks for.
	Scopes []string
	// OfflineAccess asks for a refresh token: offline_access is added to
	// the scopes when the authorization server lists it.
	OfflineAccess bool

	// DPoP, when set, binds tokens to this key at authorization servers
	// that support DPoP with its algorithm (RFC 9449).
	DPoP *DPoPKey

	// Store keeps tokens and registrations. Default: a MemoryStore.
	Store Store
	// MaxStepUps bounds the step-ups per request. Default 2; negative
	// disables step-up.
	MaxStepUps int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// OAuthError is an error response of an authorization server (RFC 6749
// section 5.2) or of the authorization endpoint.
type OAuthError struct {
	Code        string
	Description string
	URI         string
	// StatusCode is the HTTP status of a token endpoint error (0 for an
	// authorization response).
	StatusCode int
}

// Error implements error.
func (e *OAuthError) Error() string {
	s := "oauth: " + e.Code
	if e.Description != "" {
		s += ": " + e.Description
	}
	return s
}

// ErrIssuerMismatch reports an authorization response whose iss is not the
// authorization server's issuer, or lacks iss where the server promised
// it (RFC 9207).
var ErrIssuerMismatch = errors.New("oauth: authorization response issuer mismatch")

// ErrState reports an authorization response whose state is not the one
// sent.
var ErrState = errors.New("oauth: authorization response state mismatch")

// ErrInteractionRequired reports that a user must authorize but the
// configuration has no Authorize callback (a non-interactive client). It
// is returned before any metadata is fetched: such a client contacts no
// authorization server except to refresh a token it holds.
var ErrInteractionRequired = errors.New("oauth: the user must authorize, and this client cannot ask")

// ErrUnsupported reports an authorization server the client cannot use:
// no PKCE S256, no way to register, a grant it does not offer.
var ErrUnsupported = errors.New("oauth: authorization server unsupported")

// Authorizer obtains, keeps and refreshes the tokens of one MCP server.
// It is safe for concurrent use; authorizations are serialized.
type Authorizer struct {
	cfg    Config
	server string
	hc     *http.Client
	store  Store

	mu     sync.Mutex // serializes authorizations and refreshes
	tok    *Token
	loaded bool

	regMu    sync.Mutex // serializes registrations
	mdMu     sync.Mutex
	metadata map[string]*ServerMetadata // issuer -> metadata (this process)
}

// NewAuthorizer returns the authorizer of the MCP endpoint serverURL.
func NewAuthorizer(serverURL string, cfg Config) *Authorizer {
	a := &Authorizer{cfg: cfg, server: serverKey(serverURL), hc: cfg.HTTPClient, store: cfg.Store, metadata: map[string]*ServerMetadata{}}
	if a.hc == nil {
		a.hc = http.DefaultClient
	}
	if a.store == nil {
		a.store = &MemoryStore{}
	}
	if a.cfg.Grant == "" {
		a.cfg.Grant = GrantAuthorizationCode
	}
	if a.cfg.MaxStepUps == 0 {
		a.cfg.MaxStepUps = DefaultMaxStepUps
	}
	if a.cfg.Now == nil {
		a.cfg.Now = time.Now
	}
	return a
}

// serverKey is the URL without query and fragment.
func serverKey(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	return u.String()
}

// Server returns the MCP endpoint the authorizer is for.
func (a *Authorizer) Server() string { return a.server }

// Token returns the current token, loading it from the store and
// refreshing it when it expires soon; nil when there is none (the
// server's first 401 starts an authorization).
func (a *Authorizer) Token(ctx context.Context) (*Token, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.loadLocked(ctx); err != nil {
		return nil, err
	}
	if a.tok != nil && a.tok.expired(a.cfg.Now(), refreshSkew) && a.tok.RefreshToken != "" {
		if t, err := a.refreshLocked(ctx); err == nil {
			return t, nil
		}
	}
	return a.tok, nil
}

func (a *Authorizer) loadLocked(ctx context.Context) error {
	if a.loaded {
		return nil
	}
	t, err := a.store.Token(ctx, a.server)
	if err != nil {
		return fmt.Errorf("oauth: loading the token: %w", err)
	}
	if t != nil && t.DPoP() && (a.cfg.DPoP == nil || t.DPoPThumbprint != a.cfg.DPoP.Thumbprint()) {
		t = nil // bound to a key this process does not hold
	}
	a.tok, a.loaded = t, true
	return nil
}

// Forget drops the server's token (here and in the store).
func (a *Authorizer) Forget(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tok, a.loaded = nil, true
	return a.store.DeleteToken(ctx, a.server)
}

// Refresh redeems the refresh token for a new access token.
func (a *Authorizer) Refresh(ctx context.Context) (*Token, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.loadLocked(ctx); err != nil {
		return nil, err
	}
	return a.refreshLocked(ctx)
}

func (a *Authorizer) refreshLocked(ctx context.Context) (*Token, error) {
	t, err := a.refreshFrom(ctx, a.tok)
	if err != nil {
		return nil, err
	}
	if err := a.saveLocked(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// refreshFrom redeems old's refresh token.
func (a *Authorizer) refreshFrom(ctx context.Context, old *Token) (*Token, error) {
	if old == nil || old.RefreshToken == "" {
		return nil, errors.New("oauth: no refresh token")
	}
	asm, err := a.serverMetadata(ctx, old.Issuer)
	if err != nil {
		return nil, err
	}
	reg, err := a.registration(ctx, asm)
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {GrantRefreshToken}, "refresh_token": {old.RefreshToken}}
	if old.Resource != "" {
		form.Set("resource", old.Resource)
	}
	t, err := a.tokenRequest(ctx, asm, reg, form, old.Scopes, old.Resource)
	if err != nil {
		return nil, err
	}
	if t.RefreshToken == "" {
		t.RefreshToken = old.RefreshToken
	}
	return t, nil
}

func (a *Authorizer) saveLocked(ctx context.Context, t *Token) error {
	a.tok = t
	if err := a.store.SaveToken(ctx, a.server, t); err != nil {
		return fmt.Errorf("oauth: saving the token: %w", err)
	}
	return nil
}

// Authorize runs the authorization the server's challenges call for
// (the challenges of a 401, or of a 403 insufficient_scope when stepUp)
// and returns the new token. failed is the token the server refused (nil
// when none was sent): when another request already replaced it, that
// token is returned instead of authorizing again.
func (a *Authorizer) Authorize(ctx context.Context, challenges []Challenge, failed *Token, stepUp bool) (*Token, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.loadLocked(ctx); err != nil {
		return nil, err
	}
	if a.tok != nil && (failed == nil || a.tok.AccessToken != failed.AccessToken) && !stepUp {
		return a.tok, nil
	}
	if !stepUp && a.tok != nil && a.tok.RefreshToken != "" {
		if t, err := a.refreshLocked(ctx); err == nil {
			return t, nil
		}
	}
	if !a.canObtain() {
		// Nothing to discover for: no network contact the caller cannot
		// use (the metadata may name hosts the user never chose).
		return nil, ErrInteractionRequired
	}
	var base []string
	if stepUp && a.tok != nil {
		base = a.tok.Scopes
	}
	asm, resource, scopes, err := a.discover(ctx, challenges, base)
	if err != nil {
		return nil, err
	}
	t, err := a.obtain(ctx, asm, resource, scopes)
	if err != nil {
		return nil, err
	}
	if err := a.saveLocked(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// discover finds the authorization server of the MCP server from its
// challenges (or the well-known locations) and selects the scopes: the
// challenge's, else the resource's scopes_supported, else none; then the
// union with base (a step-up's scopes asked for before) and Config.Scopes.
func (a *Authorizer) discover(ctx context.Context, challenges []Challenge, base []string) (*ServerMetadata, string, []string, error) {
	ch, _ := FindChallenge(challenges, "DPoP", "Bearer")
	prm, err := DiscoverResource(ctx, a.hc, a.server, ch.Param("resource_metadata"))
	if err != nil {
		return nil, "", nil, err
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, "", nil, fmt.Errorf("%w: the protected resource metadata names no authorization server", ErrMetadata)
	}
	issuer := prm.AuthorizationServers[0]
	if a.cfg.ClientIssuer != "" && slices.Contains(prm.AuthorizationServers, a.cfg.ClientIssuer) {
		issuer = a.cfg.ClientIssuer
	}
	asm, err := a.serverMetadata(ctx, issuer)
	if err != nil {
		return nil, "", nil, err
	}
	var scopes []string
	if s := ch.Param("scope"); s != "" {
		scopes = strings.Fields(s)
	} else if len(prm.ScopesSupported) > 0 {
		scopes = slices.Clone(prm.ScopesSupported)
	}
	scopes = union(base, scopes)
	scopes = union(scopes, a.cfg.Scopes)
	return asm, prm.Resource, scopes, nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// serverMetadata returns the (validated) metadata of issuer.
func (a *Authorizer) serverMetadata(ctx context.Context, issuer string) (*ServerMetadata, error) {
	a.mdMu.Lock()
	m := a.metadata[issuer]
	a.mdMu.Unlock()
	if m != nil {
		return m, nil
	}
	m, err := DiscoverServer(ctx, a.hc, issuer)
	if err != nil {
		return nil, err
	}
	a.mdMu.Lock()
	a.metadata[issuer] = m
	a.mdMu.Unlock()
	return m, nil
}

// obtain gets a token by the configured grant.
func (a *Authorizer) obtain(ctx context.Context, asm *ServerMetadata, resource string, scopes []string) (*Token, error) {
	if asm.TokenEndpoint == "" {
		return nil, fmt.Errorf("%w: %s has no token endpoint", ErrUnsupported, asm.Issuer)
	}
	switch a.cfg.Grant {
	case GrantAuthorizationCode:
		if a.cfg.OfflineAccess && slices.Contains(asm.ScopesSupported, "offline_access") {
			scopes = union(scopes, []string{"offline_access"})
		}
		return a.codeFlow(ctx, asm, resource, scopes)
	case GrantClientCredentials:
		reg, err := a.registration(ctx, asm)
		if err != nil {
			return nil, err
		}
		form := url.Values{"grant_type": {GrantClientCredentials}, "resource": {resource}}
		if len(scopes) > 0 {
			form.Set("scope", strings.Join(scopes, " "))
		}
		return a.tokenRequest(ctx, asm, reg, form, scopes, resource)
	case GrantJWTBearer:
		if a.cfg.Assertion == nil {
			return nil, errors.New("oauth: the JWT-bearer grant needs Config.Assertion")
		}
		assertion, err := a.cfg.Assertion(ctx, AssertionRequest{Issuer: asm.Issuer, TokenEndpoint: asm.TokenEndpoint, Resource: resource, Scopes: scopes})
		if err != nil {
			return nil, fmt.Errorf("oauth: obtaining the assertion: %w", err)
		}
		reg, err := a.registration(ctx, asm)
		if err != nil {
			return nil, err
		}
		form := url.Values{"grant_type": {GrantJWTBearer}, "assertion": {assertion}, "resource": {resource}}
		if len(scopes) > 0 {
			form.Set("scope", strings.Join(scopes, " "))
		}
		return a.tokenRequest(ctx, asm, reg, form, scopes, resource)
	}
	return nil, fmt.Errorf("%w: grant %q", ErrUnsupported, a.cfg.Grant)
}

// registration returns the client's identity at the authorization
// server: the pre-registered client, a stored registration, the client ID
// metadata document URL, or a new dynamic registration, in that order.
func (a *Authorizer) registration(ctx context.Context, asm *ServerMetadata) (*Registration, error) {
	a.regMu.Lock() // one dynamic registration at a time
	defer a.regMu.Unlock()
	if a.cfg.ClientID != "" && (a.cfg.ClientIssuer == "" || a.cfg.ClientIssuer == asm.Issuer) {
		return &Registration{Issuer: asm.Issuer, ClientID: a.cfg.ClientID, ClientSecret: a.cfg.ClientSecret, AuthMethod: a.pickAuthMethod(asm)}, nil
	}
	if r, err := a.store.Registration(ctx, asm.Issuer); err != nil {
		return nil, fmt.Errorf("oauth: loading the registration: %w", err)
	} else if r != nil && r.ClientID != "" && (r.ExpiresAt.IsZero() || a.cfg.Now().Before(r.ExpiresAt)) {
		return r, nil
	}
	if a.cfg.Grant == GrantAuthorizationCode && a.cfg.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported {
		return &Registration{Issuer: asm.Issuer, ClientID: a.cfg.ClientMetadataURL, AuthMethod: AuthNone}, nil
	}
	if asm.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("%w: %s offers no registration and no client is pre-registered for it", ErrUnsupported, asm.Issuer)
	}
	r, err := a.register(ctx, asm)
	if err != nil {
		return nil, err
	}
	if err := a.store.SaveRegistration(ctx, asm.Issuer, r); err != nil {
		return nil, fmt.Errorf("oauth: saving the registration: %w", err)
	}
	return r, nil
}

// pickAuthMethod chooses the pre-registered client's token endpoint
// authentication.
func (a *Authorizer) pickAuthMethod(asm *ServerMetadata) string {
	if a.cfg.AuthMethod != "" {
		return a.cfg.AuthMethod
	}
	supported := asm.TokenEndpointAuthMethodsSupported
	if len(supported) == 0 {
		supported = []string{AuthClientSecretBasic} // RFC 8414's default
	}
	var candidates []string
	if a.cfg.PrivateKey != nil {
		candidates = append(candidates, AuthPrivateKeyJWT)
	}
	if a.cfg.ClientSecret != "" {
		candidates = append(candidates, AuthClientSecretBasic, AuthClientSecretPost)
	}
	for _, c := range candidates {
		if slices.Contains(supported, c) {
			return c
		}
	}
	if len(candidates) > 0 {
		return candidates[0]
	}
	return AuthNone
}

// register performs dynamic client registration (RFC 7591).
func (a *Authorizer) register(ctx context.Context, asm *ServerMetadata) (*Registration, error) {
	md := map[string]any{
		"client_name":                a.clientName(),
		"token_endpoint_auth_method": AuthNone,
	}
	switch a.cfg.Grant {
	case GrantAuthorizationCode:
		md["redirect_uris"] = []string{a.cfg.RedirectURL}
		md["grant_types"] = []string{GrantAuthorizationCode, GrantRefreshToken}
		md["response_types"] = []string{"code"}
		at := a.cfg.ApplicationType
		if at == "" {
			at = "native"
		}
		md["application_type"] = at
	default:
		md["grant_types"] = []string{a.cfg.Grant}
	}
	body, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, asm.RegistrationEndpoint, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: registration at %s: %w", asm.RegistrationEndpoint, err)
	}
	defer resp.Body.Close()
	data, err := readLimited(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return nil, oauthErrorFrom(resp.StatusCode, data, "registration failed")
	}
	var out struct {
		ClientID              string `json:"client_id"`
		ClientSecret          string `json:"client_secret"`
		AuthMethod            string `json:"token_endpoint_auth_method"`
		ClientSecretExpiresAt int64  `json:"client_secret_expires_at"`
	}
	if err := decodeJSONObject(data, &out); err != nil || out.ClientID == "" {
		return nil, fmt.Errorf("%w: registration response without client_id", ErrMetadata)
	}
	r := &Registration{Issuer: asm.Issuer, ClientID: out.ClientID, ClientSecret: out.ClientSecret, AuthMethod: out.AuthMethod}
	if out.ClientSecretExpiresAt > 0 {
		r.ExpiresAt = time.Unix(out.ClientSecretExpiresAt, 0)
	}
	if r.AuthMethod == "" {
		r.AuthMethod = AuthNone
		if r.ClientSecret != "" {
			r.AuthMethod = AuthClientSecretBasic
			if len(asm.TokenEndpointAuthMethodsSupported) > 0 && !slices.Contains(asm.TokenEndpointAuthMethodsSupported, AuthClientSecretBasic) &&
				slices.Contains(asm.TokenEndpointAuthMethodsSupported, AuthClientSecretPost) {
				r.AuthMethod = AuthClientSecretPost
			}
		}
	}
	return r, nil
}

func (a *Authorizer) clientName() string {
	if a.cfg.ClientName != "" {
		return a.cfg.ClientName
	}
	return "weft-client"
}

// canObtain reports whether the configured grant can get a new token: the
// authorization code grant needs a user to ask (Authorize and
// RedirectURL); the others need no one.
func (a *Authorizer) canObtain() bool {
	return a.cfg.Grant != GrantAuthorizationCode || (a.cfg.Authorize != nil && a.cfg.RedirectURL != "")
}

// codeFlow runs the authorization code flow with PKCE S256, the resource
// indicator and RFC 9207 issuer validation.
func (a *Authorizer) codeFlow(ctx context.Context, asm *ServerMetadata, resource string, scopes []string) (*Token, error) {
	if a.cfg.Authorize == nil || a.cfg.RedirectURL == "" {
		return nil, ErrInteractionRequired
	}
	authURL, p, err := a.beginCode(ctx, asm, resource, scopes)
	if err != nil {
		return nil, err
	}
	vals, err := a.cfg.Authorize(ctx, authURL)
	if err != nil {
		return nil, fmt.Errorf("oauth: authorization: %w", err)
	}
	return a.finishCode(ctx, asm, p, vals)
}

// beginCode prepares an authorization request: the URL the user opens,
// and what redeeming its code needs.
func (a *Authorizer) beginCode(ctx context.Context, asm *ServerMetadata, resource string, scopes []string) (string, *Pending, error) {
	if a.cfg.RedirectURL == "" {
		return "", nil, ErrInteractionRequired
	}
	if asm.AuthorizationEndpoint == "" {
		return "", nil, fmt.Errorf("%w: %s has no authorization endpoint", ErrUnsupported, asm.Issuer)
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return "", nil, fmt.Errorf("%w: %s does not offer PKCE with S256", ErrUnsupported, asm.Issuer)
	}
	reg, err := a.registration(ctx, asm)
	if err != nil {
		return "", nil, err
	}
	p := &Pending{Issuer: asm.Issuer, Resource: resource, Scopes: scopes, State: randomString(16), Verifier: randomString(32), RedirectURL: a.cfg.RedirectURL}
	sum := sha256.Sum256([]byte(p.Verifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {reg.ClientID},
		"redirect_uri":          {p.RedirectURL},
		"state":                 {p.State},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
		"resource":              {resource},
	}
	if len(scopes) > 0 {
		q.Set("scope", strings.Join(scopes, " "))
	}
	authURL, err := url.Parse(asm.AuthorizationEndpoint)
	if err != nil {
		return "", nil, err
	}
	existing := authURL.Query()
	for k, v := range a.cfg.AuthorizationParams {
		existing[k] = v
	}
	for k, v := range q {
		existing[k] = v
	}
	authURL.RawQuery = existing.Encode()
	return authURL.String(), p, nil
}

// finishCode validates the authorization response and redeems its code.
func (a *Authorizer) finishCode(ctx context.Context, asm *ServerMetadata, p *Pending, vals url.Values) (*Token, error) {
	if err := CheckAuthorizationResponse(vals, asm, p.State); err != nil {
		return nil, err
	}
	reg, err := a.registration(ctx, asm)
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type":    {GrantAuthorizationCode},
		"code":          {vals.Get("code")},
		"redirect_uri":  {p.RedirectURL},
		"code_verifier": {p.Verifier},
		"resource":      {p.Resource},
	}
	return a.tokenRequest(ctx, asm, reg, form, p.Scopes, p.Resource)
}

// CheckAuthorizationResponse validates the redirect's parameters: iss
// first (RFC 9207: compared by simple string comparison with the issuer,
// required when the server advertises it; an error response with a
// mismatched iss is not acted on), then state, then error and code.
func CheckAuthorizationResponse(vals url.Values, asm *ServerMetadata, state string) error {
	if iss, ok := vals["iss"]; ok {
		if len(iss) != 1 || iss[0] != asm.Issuer {
			return fmt.Errorf("%w: got %q, want %q", ErrIssuerMismatch, vals.Get("iss"), asm.Issuer)
		}
	} else if asm.AuthorizationResponseIssParameterSupported {
		return fmt.Errorf("%w: the server advertises iss but the response has none", ErrIssuerMismatch)
	}
	if vals.Get("state") != state {
		return ErrState
	}
	if e := vals.Get("error"); e != "" {
		return &OAuthError{Code: e, Description: vals.Get("error_description"), URI: vals.Get("error_uri")}
	}
	if vals.Get("code") == "" {
		return errors.New("oauth: the authorization response has no code")
	}
	return nil
}

// useDPoP reports whether token requests to asm carry DPoP proofs.
func (a *Authorizer) useDPoP(asm *ServerMetadata) bool {
	return a.cfg.DPoP != nil && slices.Contains(asm.DPoPSigningAlgValuesSupported, a.cfg.DPoP.Algorithm())
}

// tokenRequest posts form to the token endpoint with the client's
// authentication (and a DPoP proof, retried once with the server's
// nonce) and returns the token.
func (a *Authorizer) tokenRequest(ctx context.Context, asm *ServerMetadata, reg *Registration, form url.Values, scopes []string, resource string) (*Token, error) {
	dpop := a.useDPoP(asm)
	for attempt := 0; ; attempt++ {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		header := http.Header{}
		if err := a.clientAuth(asm, reg, f, header); err != nil {
			return nil, err
		}
		if dpop {
			proof, err := a.cfg.DPoP.Proof(http.MethodPost, asm.TokenEndpoint, "")
			if err != nil {
				return nil, err
			}
			header.Set("DPoP", proof)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, asm.TokenEndpoint, strings.NewReader(f.Encode()))
		if err != nil {
			return nil, err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		resp, err := a.hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("oauth: token request to %s: %w", asm.TokenEndpoint, err)
		}
		data, err := readLimited(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if dpop {
			a.cfg.DPoP.setNonce(asm.TokenEndpoint, resp.Header.Get("DPoP-Nonce"))
		}
		if resp.StatusCode != http.StatusOK {
			oe := oauthErrorFrom(resp.StatusCode, data, "token request failed")
			var e *OAuthError
			if dpop && attempt == 0 && errors.As(oe, &e) && e.Code == "use_dpop_nonce" && resp.Header.Get("DPoP-Nonce") != "" {
				continue
			}
			return nil, oe
		}
		return a.parseToken(data, asm, scopes, resource, dpop)
	}
}

func (a *Authorizer) parseToken(data []byte, asm *ServerMetadata, scopes []string, resource string, dpop bool) (*Token, error) {
	var tr struct {
		AccessToken  string          `json:"access_token"`
		TokenType    string          `json:"token_type"`
		RefreshToken string          `json:"refresh_token"`
		ExpiresIn    json.Number     `json:"expires_in"`
		Scope        json.RawMessage `json:"scope"`
	}
	if err := decodeJSONObject(data, &tr); err != nil {
		return nil, fmt.Errorf("%w: token response: %w", ErrMetadata, err)
	}
	if tr.AccessToken == "" {
		return nil, fmt.Errorf("%w: token response without access_token", ErrMetadata)
	}
	t := &Token{AccessToken: tr.AccessToken, TokenType: "Bearer", RefreshToken: tr.RefreshToken, Scopes: scopes, Issuer: asm.Issuer, Resource: resource, Obtained: a.cfg.Now()}
	switch {
	case equalFold(tr.TokenType, "DPoP"):
		if !dpop {
			return nil, fmt.Errorf("%w: a DPoP token was issued without a DPoP proof", ErrMetadata)
		}
		t.TokenType = "DPoP"
		t.DPoPThumbprint = a.cfg.DPoP.Thumbprint()
	case equalFold(tr.TokenType, "Bearer"), tr.TokenType == "":
	default:
		return nil, fmt.Errorf("%w: unsupported token_type %q", ErrUnsupported, tr.TokenType)
	}
	if tr.ExpiresIn != "" {
		if secs, err := tr.ExpiresIn.Int64(); err == nil && secs > 0 {
			t.Expiry = t.Obtained.Add(time.Duration(secs) * time.Second)
		}
	}
	var granted string
	if len(tr.Scope) > 0 && json.Unmarshal(tr.Scope, &granted) == nil && granted != "" {
		t.Scopes = union(scopes, strings.Fields(granted))
	}
	return t, nil
}

// clientAuth applies the registration's token endpoint authentication.
func (a *Authorizer) clientAuth(asm *ServerMetadata, reg *Registration, form url.Values, header http.Header) error {
	switch reg.AuthMethod {
	case AuthClientSecretBasic:
		cred := url.QueryEscape(reg.ClientID) + ":" + url.QueryEscape(reg.ClientSecret)
		header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred)))
	case AuthClientSecretPost:
		form.Set("client_id", reg.ClientID)
		form.Set("client_secret", reg.ClientSecret)
	case AuthPrivateKeyJWT:
		if a.cfg.PrivateKey == nil {
			return errors.New("oauth: private_key_jwt needs Config.PrivateKey")
		}
		alg := a.cfg.SigningAlg
		jwt, err := clientAssertion(a.cfg.PrivateKey, alg, a.cfg.KeyID, reg.ClientID, asm.Issuer, a.cfg.Now())
		if err != nil {
			return err
		}
		form.Set("client_id", reg.ClientID)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", jwt)
	case AuthNone, "":
		if reg.ClientID != "" {
			form.Set("client_id", reg.ClientID)
		}
	default:
		return fmt.Errorf("%w: token endpoint authentication %q", ErrUnsupported, reg.AuthMethod)
	}
	return nil
}

// oauthErrorFrom decodes an RFC 6749 error response.
func oauthErrorFrom(status int, data []byte, fallback string) error {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
		URI         string `json:"error_uri"`
	}
	if decodeJSONObject(data, &e) == nil && e.Error != "" {
		return &OAuthError{Code: e.Error, Description: e.Description, URI: e.URI, StatusCode: status}
	}
	return &OAuthError{Code: "http_" + fmt.Sprint(status), Description: fallback, StatusCode: status}
}

func equalFold(a, b string) bool { return strings.EqualFold(a, b) }
