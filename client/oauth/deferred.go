package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Token type identifiers of RFC 8693 (token exchange).
const (
	TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
)

// Pending is an authorization code flow started by [Authorizer.Begin]
// and finished by [Authorizer.Finish], possibly in another process of a
// fleet: the application keeps it between the two, confidential and
// tamper-proof (sealed), since it holds the PKCE verifier.
type Pending struct {
	Issuer      string   `json:"iss"`
	Resource    string   `json:"res"`
	Scopes      []string `json:"scp,omitempty"`
	State       string   `json:"st"`
	Verifier    string   `json:"cv"`
	RedirectURL string   `json:"ru"`
}

// Begin starts an authorization code flow for an application that lets
// the user authorize out of band (a gateway sending its user to a page of
// its own): it discovers the MCP server's authorization server from
// challenges (nil: the well-known locations), selects the scopes as
// Authorize does, and returns the URL the user's browser opens, with what
// [Authorizer.Finish] needs. Config.RedirectURL is where the browser comes
// back; Config.Authorize is not used. Nothing is stored.
func (a *Authorizer) Begin(ctx context.Context, challenges []Challenge) (string, *Pending, error) {
	asm, resource, scopes, err := a.discover(ctx, challenges, nil)
	if err != nil {
		return "", nil, err
	}
	if a.cfg.OfflineAccess && slices.Contains(asm.ScopesSupported, "offline_access") {
		scopes = union(scopes, []string{"offline_access"})
	}
	return a.beginCode(ctx, asm, resource, scopes)
}

// Finish completes a flow Begin started with the query parameters of the
// redirect (validated as [CheckAuthorizationResponse] does) and returns
// the token. The token is not stored: the application keeps it (a
// gateway, per user).
func (a *Authorizer) Finish(ctx context.Context, p *Pending, vals url.Values) (*Token, error) {
	if p == nil || p.Issuer == "" || p.State == "" || p.Verifier == "" {
		return nil, errors.New("oauth: Finish needs the Pending of Begin")
	}
	asm, err := a.serverMetadata(ctx, p.Issuer)
	if err != nil {
		return nil, err
	}
	return a.finishCode(ctx, asm, p, vals)
}

// RefreshToken redeems t's refresh token at its issuer and returns the
// new token (keeping t's refresh token when the server issues none).
// Nothing is stored.
func (a *Authorizer) RefreshToken(ctx context.Context, t *Token) (*Token, error) {
	return a.refreshFrom(ctx, t)
}

// SupportsTokenExchange discovers the MCP server's authorization server
// (from challenges, nil: the well-known locations) and reports whether it
// advertises the token exchange grant (RFC 8693) in
// grant_types_supported.
func (a *Authorizer) SupportsTokenExchange(ctx context.Context, challenges []Challenge) (bool, error) {
	asm, _, _, err := a.discover(ctx, challenges, nil)
	if err != nil {
		return false, err
	}
	return slices.Contains(asm.GrantTypesSupported, GrantTokenExchange), nil
}

// Exchange obtains a token for the MCP server by RFC 8693 token exchange:
// the client presents subjectToken (of type subjectTokenType, default an
// access token), a token the user holds for the application itself, and
// receives one for the MCP server's resource, without asking the user.
// The authorization server must advertise the grant. Nothing is stored.
func (a *Authorizer) Exchange(ctx context.Context, challenges []Challenge, subjectToken, subjectTokenType string) (*Token, error) {
	if subjectToken == "" {
		return nil, errors.New("oauth: token exchange needs a subject token")
	}
	if subjectTokenType == "" {
		subjectTokenType = TokenTypeAccessToken
	}
	asm, resource, scopes, err := a.discover(ctx, challenges, nil)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(asm.GrantTypesSupported, GrantTokenExchange) {
		return nil, fmt.Errorf("%w: %s does not advertise the token exchange grant", ErrUnsupported, asm.Issuer)
	}
	if asm.TokenEndpoint == "" {
		return nil, fmt.Errorf("%w: %s has no token endpoint", ErrUnsupported, asm.Issuer)
	}
	reg, err := a.registration(ctx, asm)
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type":           {GrantTokenExchange},
		"subject_token":        {subjectToken},
		"subject_token_type":   {subjectTokenType},
		"requested_token_type": {TokenTypeAccessToken},
		"resource":             {resource},
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	return a.tokenRequest(ctx, asm, reg, form, scopes, resource)
}
