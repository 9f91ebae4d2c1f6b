package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/auth"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/internal/hostcheck"
)

// gatewayPagesClient is the client ID of the gateway's pages at its own
// authorization server (per-user upstream authorization signs browsers in
// with it).
const gatewayPagesClient = "weft-gateway-pages"

// gatewayAuthFlags are the flags of `weft gateway` that configure caller
// authentication, as `weft serve` names them; they fill the config's auth
// section when it has none.
func gatewayAuthFromFlags(tokens, authServer string, a authFlags) (*gateway.AuthConfig, error) {
	switch {
	case tokens != "" && a.enabled():
		return nil, errors.New("--tokens and --auth-upstream exclude each other")
	case tokens != "":
		ac := &gateway.AuthConfig{TokensFile: tokens}
		if authServer != "" {
			ac.AuthorizationServers = []string{authServer}
		}
		return ac, nil
	case a.enabled():
		// The secret file is read as a file, never ${VAR}-expanded (a
		// secret may hold a "$").
		return &gateway.AuthConfig{AuthorizationServer: &gateway.AuthServerConfig{
			Issuer:              a.issuer,
			Provider:            gateway.ProviderConfig{Issuer: a.upstream, ClientID: a.clientID, ClientSecretFile: a.secretFile},
			Scopes:              splitList(a.scopes),
			DynamicRegistration: !a.noDynamic,
			Development:         a.dev,
		}}, nil
	}
	return nil, nil
}

// callerAuth is what `weft gateway` made of the auth section: the
// server's admission, the protected resource metadata to serve, the
// authorization server to mount at the root (nil without), and the sign-in
// of the per-user pages (nil when they cannot sign browsers in).
type callerAuth struct {
	resource  string
	admission weft.Admission
	meta      *auth.ResourceMetadata
	handler   http.Handler
	signIn    *gateway.OAuthSignIn
	close     func()
}

// gatewayCallerAuth builds the callers' authentication of `weft gateway`.
// resource defaults to http://<addr>/mcp.
func gatewayCallerAuth(ctx context.Context, a *gateway.AuthConfig, addr, data, postgres, schema string, logger *slog.Logger) (*callerAuth, error) {
	resource := a.Resource
	if resource == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil && !hostcheck.LoopbackHost(host) {
			return nil, fmt.Errorf("auth.resource is required on %s, a non-loopback address: the https URL clients reach the gateway at (https://mcp.example.com/mcp)", addr)
		}
		resource = "http://" + addr + "/mcp"
	}
	ru, err := url.Parse(resource)
	if err != nil {
		return nil, fmt.Errorf("auth.resource: %w", err)
	}
	origin := ru.Scheme + "://" + ru.Host
	ca := &callerAuth{resource: resource, close: func() {}}
	scopesSupported := a.ScopesSupported
	if len(scopesSupported) == 0 {
		scopesSupported = a.RequiredScopes
	}
	meta := func(servers ...string) (*auth.ResourceMetadata, error) {
		if len(a.AuthorizationServers) > 0 {
			servers = a.AuthorizationServers
		}
		m := &auth.ResourceMetadata{Resource: resource, AuthorizationServers: servers, ScopesSupported: scopesSupported, ResourceName: "Weft gateway"}
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("protected resource metadata: %w", err)
		}
		return m, nil
	}
	signIn := func() {
		if s := a.SignIn; s != nil {
			ca.signIn = &gateway.OAuthSignIn{Resource: resource, ClientID: s.ClientID, ClientSecret: s.ClientSecretValue(),
				Scopes: s.Scopes, AuthorizationParams: s.AuthorizationParams}
		}
	}
	switch {
	case a.TokensFile != "":
		if len(a.AuthorizationServers) == 0 {
			logger.Warn("auth.tokensFile without auth.authorizationServers: the protected resource metadata names a placeholder")
		}
		if ca.meta, err = meta("https://auth.example.com"); err != nil {
			return nil, err
		}
		st, err := auth.LoadStaticTokens(a.TokensFile)
		if err != nil {
			return nil, err
		}
		ca.admission = st.Admission(ca.meta)
	case a.JWT != nil:
		j := a.JWT
		var keys auth.KeySource
		if j.JWKSURL != "" {
			keys, err = auth.JWKSURL(j.JWKSURL, nil)
		} else {
			keys, err = auth.JWKSFile(j.JWKSFile, nil)
		}
		if err != nil {
			return nil, fmt.Errorf("auth.jwt: %w", err)
		}
		if ca.meta, err = meta(j.Issuer); err != nil {
			return nil, err
		}
		v := &auth.JWTValidator{Issuer: j.Issuer, Audience: j.Audience, JWKS: keys, Algorithms: j.Algorithms,
			RequiredScopes: a.RequiredScopes, PartitionClaim: a.PartitionClaim, PrincipalClaim: a.PrincipalClaim, ScopesClaim: a.ScopesClaim, Logger: logger}
		if j.DPoP {
			v.DPoP = &auth.DPoPVerifier{Replay: auth.NewMemoryReplayCache(0)}
		}
		if err := v.CheckConfig(ca.meta); err != nil {
			return nil, fmt.Errorf("auth.jwt: %w", err)
		}
		ca.admission = v.Admission(ca.meta)
		signIn()
	case a.Introspection != nil:
		in := a.Introspection
		if ca.meta, err = meta(in.Issuer); err != nil {
			return nil, err
		}
		v := &auth.Introspector{Endpoint: in.Endpoint, Issuer: in.Issuer, ClientID: in.ClientID, ClientSecret: in.ClientSecretValue(),
			RequiredScopes: a.RequiredScopes, PartitionClaim: a.PartitionClaim, PrincipalClaim: a.PrincipalClaim, ScopesClaim: a.ScopesClaim,
			CacheTTL: in.CacheTTL.D(), Logger: logger}
		if err := v.CheckConfig(ca.meta); err != nil {
			return nil, fmt.Errorf("auth.introspection: %w", err)
		}
		ca.admission = v.Admission(ca.meta)
		signIn()
	case a.AuthorizationServer != nil:
		s := a.AuthorizationServer
		issuer := s.Issuer
		if issuer == "" {
			issuer = origin
		}
		scopes := s.Scopes
		if len(scopes) == 0 {
			scopes = []string{"mcp"}
		}
		secret, err := s.Provider.Secret()
		if err != nil {
			return nil, fmt.Errorf("auth.authorizationServer.provider: %w", err)
		}
		opts := asOptions{issuer: issuer, provider: s.Provider.Issuer, clientID: s.Provider.ClientID,
			secret: secret, scopes: scopes, claims: s.Claims, dev: s.Development, dynamic: s.DynamicRegistration,
			accessTokenTTL: s.AccessTokenTTL.D(), resource: resource, resourceName: "Weft gateway",
			pagesRedirect: origin + "/oauth/signin", keysFile: s.KeysFile}
		opts.required = slices.DeleteFunc(slices.Clone(scopes), func(sc string) bool { _, r := s.RestrictedScopes[sc]; return r })
		if len(s.RestrictedScopes) > 0 {
			opts.allowedScopes = func(claims map[string]any, requested []string) []string {
				return slices.DeleteFunc(slices.Clone(requested), func(sc string) bool { return !s.GrantsScope(claims, sc) })
			}
		}
		as, err := setupAuthServer(ctx, opts, data, postgres, schema, logger)
		if err != nil {
			return nil, err
		}
		ca.close, ca.admission, ca.meta, ca.handler = as.close, as.admission, as.meta, as.handler
		ca.signIn = &gateway.OAuthSignIn{Resource: resource, ClientID: gatewayPagesClient, ClientSecret: pagesSecret(as.secret)}
	}
	return ca, nil
}

// pagesSecret derives the pages client's secret from the authorization
// server's secret key.
func pagesSecret(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("weft gateway pages client"))
	return hex.EncodeToString(m.Sum(nil))
}
