package authserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/weftmcp/weft/auth"
)

// Upstream is the OpenID Connect provider users sign in with, through a
// client registered there beforehand (most company identity providers
// support neither dynamic registration nor metadata documents).
type Upstream struct {
	// Issuer is the provider's issuer identifier; its OpenID Connect
	// discovery document is fetched from Issuer +
	// "/.well-known/openid-configuration" and must name the same issuer.
	Issuer string
	// ClientID and ClientSecret are the static client's credentials
	// (client_secret_basic); register the server's callback,
	// Issuer + "/callback", as its redirect URI.
	ClientID, ClientSecret string
	// Scopes are requested upstream (default openid profile email
	// offline_access).
	Scopes []string
	// HTTPClient talks to the provider (default: a client with a 10 s
	// timeout).
	HTTPClient *http.Client
	// UseUserinfo also fetches the userinfo endpoint and merges its
	// claims under the ID token's (same "sub" required).
	UseUserinfo bool
}

// MaxUpstreamBytes bounds an answer of the upstream provider.
const MaxUpstreamBytes = 1 << 20

// ErrUpstream: the upstream provider failed or answered something invalid.
var ErrUpstream = errors.New("authserver: upstream identity provider")

type upstream struct {
	cfg      Upstream
	redirect string
	http     *http.Client

	mu       sync.Mutex
	disc     *discovery
	idTokens *auth.JWTValidator
}

type discovery struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	UserinfoEndpoint      string `json:"userinfo_endpoint"`
	JWKSURI               string `json:"jwks_uri"`
}

func newUpstream(cfg Upstream, redirect string) (*upstream, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" {
		return nil, fmt.Errorf("%w: Upstream.Issuer and Upstream.ClientID are required", ErrConfig)
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{"openid", "profile", "email", "offline_access"}
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return &upstream{cfg: cfg, redirect: redirect, http: hc}, nil
}

// discover fetches (once) the provider's discovery document.
func (u *upstream) discover(ctx context.Context) (*discovery, *auth.JWTValidator, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.disc != nil {
		return u.disc, u.idTokens, nil
	}
	var d discovery
	if err := u.getJSON(ctx, strings.TrimSuffix(u.cfg.Issuer, "/")+"/.well-known/openid-configuration", "", &d); err != nil {
		return nil, nil, err
	}
	if d.Issuer != u.cfg.Issuer {
		return nil, nil, fmt.Errorf("%w: discovery names issuer %q, not %q", ErrUpstream, d.Issuer, u.cfg.Issuer)
	}
	if d.AuthorizationEndpoint == "" || d.TokenEndpoint == "" || d.JWKSURI == "" {
		return nil, nil, fmt.Errorf("%w: discovery lacks an authorization, token or jwks endpoint", ErrUpstream)
	}
	keys, err := auth.JWKSURL(d.JWKSURI, &auth.JWKSOptions{Client: u.http})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUpstream, err)
	}
	u.disc = &d
	u.idTokens = &auth.JWTValidator{Issuer: d.Issuer, Audience: u.cfg.ClientID, JWKS: keys}
	return u.disc, u.idTokens, nil
}

func (u *upstream) getJSON(ctx context.Context, endpoint, bearer string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUpstream, err)
	}
	req.Header.Set("Accept", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return u.do(req, v)
}

func (u *upstream) do(req *http.Request, v any) error {
	resp, err := u.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUpstream, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxUpstreamBytes))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUpstream, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s %s answered %s", ErrUpstream, req.Method, req.URL.Redacted(), resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrUpstream, req.Method, req.URL.Redacted(), err)
	}
	return nil
}

// authURL returns the provider's authorization URL for one login.
func (u *upstream) authURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	d, _, err := u.discover(ctx)
	if err != nil {
		return "", err
	}
	au, err := url.Parse(d.AuthorizationEndpoint)
	if err != nil {
		return "", fmt.Errorf("%w: authorization endpoint: %w", ErrUpstream, err)
	}
	sum := sha256.Sum256([]byte(verifier))
	q := au.Query()
	q.Set("response_type", "code")
	q.Set("client_id", u.cfg.ClientID)
	q.Set("redirect_uri", u.redirect)
	q.Set("scope", strings.Join(u.cfg.Scopes, " "))
	q.Set("state", state)
	q.Set("nonce", nonce)
	q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
	q.Set("code_challenge_method", "S256")
	au.RawQuery = q.Encode()
	return au.String(), nil
}

// upstreamTokens is the provider's token response.
type upstreamTokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	IDToken      string `json:"id_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in,omitempty"`
	Scope        string `json:"scope,omitempty"`
}

// exchange trades the provider's code for tokens, validates the ID token
// (signature, issuer, audience, expiry, nonce) and returns the tokens and
// the user's claims.
func (u *upstream) exchange(ctx context.Context, code, verifier, nonce string) (*upstreamTokens, map[string]any, error) {
	d, idv, err := u.discover(ctx)
	if err != nil {
		return nil, nil, err
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {u.redirect},
		"code_verifier": {verifier},
	}
	if u.cfg.ClientSecret == "" {
		form.Set("client_id", u.cfg.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrUpstream, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if u.cfg.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(u.cfg.ClientID), url.QueryEscape(u.cfg.ClientSecret))
	}
	var t upstreamTokens
	if err := u.do(req, &t); err != nil {
		return nil, nil, err
	}
	if t.IDToken == "" {
		return nil, nil, fmt.Errorf("%w: the token response has no ID token", ErrUpstream)
	}
	cl, err := idv.Validate(ctx, t.IDToken)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: ID token: %w", ErrUpstream, err)
	}
	claims := map[string]any{}
	for k, v := range cl.Raw {
		var x any
		if json.Unmarshal(v, &x) == nil {
			claims[k] = x
		}
	}
	if got, _ := claims["nonce"].(string); got != nonce {
		return nil, nil, fmt.Errorf("%w: ID token nonce does not match the login", ErrUpstream)
	}
	if u.cfg.UseUserinfo && d.UserinfoEndpoint != "" {
		info := map[string]any{}
		if err := u.getJSON(ctx, d.UserinfoEndpoint, t.AccessToken, &info); err != nil {
			return nil, nil, err
		}
		if info["sub"] != claims["sub"] {
			return nil, nil, fmt.Errorf("%w: userinfo names another subject", ErrUpstream)
		}
		for k, v := range info {
			if _, ok := claims[k]; !ok {
				claims[k] = v
			}
		}
	}
	return &t, claims, nil
}
