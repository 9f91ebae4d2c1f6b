package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Token types of RFC 8693 token exchange used by enterprise-managed
// authorization.
const (
	TokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	TokenTypeIDJAG   = "urn:ietf:params:oauth:token-type:id-jag"
)

// Enterprise configures enterprise-managed authorization (the MCP
// ext-auth extension): the user's identity provider exchanges their ID
// token for an Identity Assertion JWT Authorization Grant (ID-JAG) for
// the MCP server's authorization server, which the client redeems there
// with the JWT-bearer grant.
type Enterprise struct {
	// TokenEndpoint is the identity provider's token endpoint.
	TokenEndpoint string
	// ClientID and ClientSecret authenticate the client at the identity
	// provider (client_secret_basic when a secret is set, else client_id
	// in the form).
	ClientID     string
	ClientSecret string
	// IDToken returns the user's ID token from the identity provider
	// (from the single sign-on the application already did).
	IDToken func(ctx context.Context) (string, error)
	// HTTPClient talks to the identity provider. Default
	// http.DefaultClient.
	HTTPClient *http.Client
}

// IDJAGAssertion returns a [Config.Assertion] that obtains an ID-JAG from
// the identity provider by token exchange (RFC 8693): subject the ID
// token, audience the authorization server's issuer, resource the MCP
// server. Use it with Grant GrantJWTBearer.
func IDJAGAssertion(e Enterprise) func(ctx context.Context, req AssertionRequest) (string, error) {
	return func(ctx context.Context, req AssertionRequest) (string, error) {
		if e.TokenEndpoint == "" || e.IDToken == nil {
			return "", errors.New("oauth: enterprise-managed authorization needs the identity provider's token endpoint and an ID token")
		}
		idt, err := e.IDToken(ctx)
		if err != nil {
			return "", fmt.Errorf("oauth: the ID token: %w", err)
		}
		form := url.Values{
			"grant_type":           {GrantTokenExchange},
			"requested_token_type": {TokenTypeIDJAG},
			"subject_token":        {idt},
			"subject_token_type":   {TokenTypeIDToken},
			"audience":             {req.Issuer},
			"resource":             {req.Resource},
		}
		if len(req.Scopes) > 0 {
			form.Set("scope", strings.Join(req.Scopes, " "))
		}
		if e.ClientSecret == "" && e.ClientID != "" {
			form.Set("client_id", e.ClientID)
		}
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.TokenEndpoint, strings.NewReader(form.Encode()))
		if err != nil {
			return "", err
		}
		if e.ClientSecret != "" {
			cred := url.QueryEscape(e.ClientID) + ":" + url.QueryEscape(e.ClientSecret)
			hr.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred)))
		}
		hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		hr.Header.Set("Accept", "application/json")
		hc := e.HTTPClient
		if hc == nil {
			hc = http.DefaultClient
		}
		resp, err := hc.Do(hr)
		if err != nil {
			return "", fmt.Errorf("oauth: token exchange at %s: %w", e.TokenEndpoint, err)
		}
		defer resp.Body.Close()
		data, err := readLimited(resp.Body)
		if err != nil {
			return "", err
		}
		if resp.StatusCode != http.StatusOK {
			return "", oauthErrorFrom(resp.StatusCode, data, "token exchange failed")
		}
		var out struct {
			AccessToken     string `json:"access_token"`
			IssuedTokenType string `json:"issued_token_type"`
		}
		if err := json.Unmarshal(data, &out); err != nil || out.AccessToken == "" {
			return "", fmt.Errorf("%w: token exchange response without access_token", ErrMetadata)
		}
		if out.IssuedTokenType != "" && out.IssuedTokenType != TokenTypeIDJAG {
			return "", fmt.Errorf("%w: the identity provider issued %q, not an ID-JAG", ErrMetadata, out.IssuedTokenType)
		}
		return out.AccessToken, nil
	}
}
