package gateway

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// AuthConfig authenticates the gateway's callers (`weft gateway` builds
// the server's weft.Options.Admission, its protected resource metadata and,
// with AuthorizationServer, its own authorization server from it; a
// program calling [New] sets its server's admission itself, and New does
// not read this section). Exactly one of TokensFile, JWT, Introspection and
// AuthorizationServer is set.
type AuthConfig struct {
	// Resource is the gateway's public MCP endpoint, as clients reach it
	// ("https://mcp.example.com/mcp"): the audience of accepted tokens and
	// the resource of the protected resource metadata (RFC 9728). Default:
	// http://<listen address>/mcp.
	Resource string `json:"resource,omitempty"`
	// TokensFile is a static bearer tokens file (auth.LoadStaticTokens:
	// token, principal, partition and scopes each; mode 0600).
	TokensFile string `json:"tokensFile,omitempty"`
	// JWT validates JWT access tokens of the company's authorization server.
	JWT *JWTAuth `json:"jwt,omitempty"`
	// Introspection validates opaque tokens at the authorization server's
	// introspection endpoint (RFC 7662).
	Introspection *IntrospectionAuth `json:"introspection,omitempty"`
	// AuthorizationServer runs Weft's own authorization server in front of
	// the company's OpenID Connect provider: MCP clients register by
	// metadata document (CIMD), users sign in at the provider and consent,
	// and the gateway admits the tokens it issues.
	AuthorizationServer *AuthServerConfig `json:"authorizationServer,omitempty"`
	// AuthorizationServers are named in the protected resource metadata
	// (default: the issuer of JWT or Introspection; the gateway's own with
	// AuthorizationServer). Required with TokensFile for a useful 401.
	AuthorizationServers []string `json:"authorizationServers,omitempty"`
	// RequiredScopes are needed by every request (403 insufficient_scope
	// naming them otherwise); ScopesSupported are advertised (default:
	// RequiredScopes).
	RequiredScopes  []string `json:"requiredScopes,omitempty"`
	ScopesSupported []string `json:"scopesSupported,omitempty"`
	// PartitionClaim names the claim whose value partitions callers' state,
	// tasks, subscriptions and fair shares (default "sub": each user alone;
	// "tenant" shares them within a tenant). JWT and Introspection only.
	PartitionClaim string `json:"partitionClaim,omitempty"`
	// PrincipalClaim names the claim that identifies the caller (default
	// "sub"; "email", "oid", "preferred_username"), in the audit log,
	// policy principals and quotas. ScopesClaim names the claim holding the
	// granted scopes (default "scope", else "scp"; "roles" or "groups" at
	// providers that put them there). JWT and Introspection only.
	PrincipalClaim string `json:"principalClaim,omitempty"`
	ScopesClaim    string `json:"scopesClaim,omitempty"`
	// SignIn is the gateway's client at the authorization server of JWT or
	// Introspection, with which its pages sign a person in a browser in:
	// per-user upstream authorization (oauth.perUser) binds each start
	// link to the caller signed in there. With AuthorizationServer the
	// gateway registers its own pages client instead.
	SignIn *SignInConfig `json:"signIn,omitempty"`
}

// SignInConfig is the gateway pages' client at the callers' authorization
// server (redirect URI <origin of Resource>/oauth/signin).
type SignInConfig struct {
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"` // ${VAR} expanded; none: a public client
	// Scopes are requested besides those of the resource metadata.
	Scopes []string `json:"scopes,omitempty"`
	// AuthorizationParams are added to the authorization request
	// ("audience" at Auth0 or Ory Hydra).
	AuthorizationParams map[string]string `json:"authorizationParams,omitempty"`
}

// ClientSecretValue returns the secret with ${VAR} expanded.
func (s SignInConfig) ClientSecretValue() string { return expand(s.ClientSecret) }

// JWTAuth configures JWT access token validation (auth.JWTValidator).
type JWTAuth struct {
	// Issuer is the exact "iss" of accepted tokens. Required.
	Issuer string `json:"issuer"`
	// JWKSURL or JWKSFile supply the signing keys (one of them).
	JWKSURL  string `json:"jwksUrl,omitempty"`
	JWKSFile string `json:"jwksFile,omitempty"`
	// Audience is the "aud" accepted tokens carry (default: Resource).
	Audience string `json:"audience,omitempty"`
	// Algorithms accepted (default RS256, ES256, EdDSA).
	Algorithms []string `json:"algorithms,omitempty"`
	// DPoP admits DPoP-bound tokens (RFC 9449) with a proof of their key.
	// `weft gateway` remembers the proofs it has seen in memory, per
	// instance: behind a balancer a proof could be replayed once at each
	// other instance within its 60 s lifetime (the gateway's own
	// authorization server shares its replay cache in PostgreSQL).
	DPoP bool `json:"dpop,omitempty"`
}

// IntrospectionAuth configures token introspection (auth.Introspector).
type IntrospectionAuth struct {
	// Endpoint is the introspection endpoint (https, or http on loopback).
	Endpoint string `json:"endpoint"`
	// Issuer is the authorization server's issuer identifier. Required.
	Issuer string `json:"issuer"`
	// ClientID and ClientSecret authenticate the gateway at the endpoint
	// (${VAR} expanded in the secret).
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// CacheTTL is how long an answer is reused (default 30s).
	CacheTTL Duration `json:"cacheTTL,omitzero"`
}

// AuthServerConfig configures the gateway's own authorization server
// (package authserver) in front of the company's identity provider.
type AuthServerConfig struct {
	// Issuer is its issuer identifier (default: the origin of Resource,
	// served on the gateway's listener).
	Issuer string `json:"issuer,omitempty"`
	// Provider is the company's OpenID Connect provider users sign in at,
	// and the gateway's client there (redirect URI <issuer>/callback).
	Provider ProviderConfig `json:"provider"`
	// Scopes are the scopes the server grants (default ["mcp"]); every
	// request needs them all.
	Scopes []string `json:"scopes,omitempty"`
	// RestrictedScopes are scopes (of Scopes) granted only to the users
	// whose provider claims match: scope → claim → accepted values (a
	// string claim equal to one, or an array claim holding one), for
	// example {"admin": {"groups": ["platform"]}} or {"admin": {"sub":
	// ["alice"]}}. Another user's token lacks the scope, so the items a
	// policy rule gives it are hidden from them and refused with 403.
	RestrictedScopes map[string]map[string][]string `json:"restrictedScopes,omitempty"`
	// Claims are copied from the provider's ID token into the tokens
	// issued (default email, name); policy rules may match them.
	Claims []string `json:"claims,omitempty"`
	// KeysFile holds the server's signing key and secret (created on first
	// start, mode 0600; default <data>/authserver-keys.json). Every
	// instance of a fleet needs the same: point them at one file, or copy
	// it.
	KeysFile string `json:"keysFile,omitempty"`
	// DynamicRegistration accepts RFC 7591 registration of public clients
	// besides client metadata documents.
	DynamicRegistration bool `json:"dynamicRegistration,omitempty"`
	// Development allows an http issuer on loopback and client metadata
	// documents over http on loopback.
	Development bool `json:"development,omitempty"`
	// AccessTokenTTL is the lifetime of the access tokens issued (default
	// 5m, authserver.DefaultAccessTokenTTL).
	AccessTokenTTL Duration `json:"accessTokenTTL,omitzero"`
}

// ProviderConfig names an OpenID Connect provider and the gateway's
// client there.
type ProviderConfig struct {
	Issuer       string `json:"issuer"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"` // ${VAR} expanded
	// ClientSecretFile holds the secret instead of ClientSecret (read at
	// start, surrounding white space trimmed, nothing expanded).
	ClientSecretFile string `json:"clientSecretFile,omitempty"`
}

// Secret returns the client secret: ClientSecretFile's contents, or
// ClientSecret with ${VAR} expanded.
func (p ProviderConfig) Secret() (string, error) {
	if p.ClientSecretFile == "" {
		return expand(p.ClientSecret), nil
	}
	b, err := os.ReadFile(p.ClientSecretFile)
	if err != nil {
		return "", fmt.Errorf("client secret: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ClientSecretValue returns the secret with ${VAR} expanded.
func (i IntrospectionAuth) ClientSecretValue() string { return expand(i.ClientSecret) }

// PolicyRule restricts who may see and use some of the gateway's tools,
// prompts and resources. A rule applies to an item when Upstream matches
// the item's upstream and Items matches its exposed name (a tool or prompt
// name, a resource URI or template); a caller sees and uses an item only
// when it satisfies every rule that applies. The conditions of one rule
// all hold: the token has every scope of Scopes, the caller's principal
// matches one of Principals, its partition one of Partitions, and each
// claim of Claims one of its values.
//
// A caller lacking Scopes gets the items hidden from its lists and its
// calls refused with 403 insufficient_scope naming them (so that a client
// can step up); a caller failing the other conditions sees nothing of the
// item, and a call gets -32602 as for an unknown tool.
type PolicyRule struct {
	// Upstream is a path.Match pattern of upstream names (empty: all).
	Upstream string `json:"upstream,omitempty"`
	// Items are path.Match patterns of exposed names and URIs (empty:
	// every item of the matching upstreams).
	Items []string `json:"items,omitempty"`
	// Scopes are the scopes the caller's token must all carry.
	Scopes []string `json:"scopes,omitempty"`
	// Principals and Partitions are path.Match patterns; the caller's
	// principal (partition) must match one.
	Principals []string `json:"principals,omitempty"`
	Partitions []string `json:"partitions,omitempty"`
	// Claims maps a token claim to accepted values: a string claim equal
	// to one, or an array claim holding one ("groups": ["admins"]).
	Claims map[string][]string `json:"claims,omitempty"`
	// DenyArguments refuses calls of the matching tools whose top-level
	// string argument of that name matches one of the path.Match patterns
	// ("path": ["/etc/*"]); -32602 naming the argument.
	DenyArguments map[string][]string `json:"denyArguments,omitempty"`
}

// LimitRule is a quota: at most Calls calls per Per (a rate, with bursts
// of up to Burst calls) of the matching tools, prompts and resources, for
// each caller (its principal, else its partition) or, with Shared, for all
// callers together. Over it a call is refused with -31999 (HTTP 429) and a
// Retry-After. With a PostgreSQL store every instance of a fleet counts
// against the same quota.
type LimitRule struct {
	// Name identifies the quota in errors, logs and the store (1-64 of
	// A-Za-z0-9_.-, unique). Required.
	Name string `json:"name"`
	// Upstream and Items select as in PolicyRule.
	Upstream string   `json:"upstream,omitempty"`
	Items    []string `json:"items,omitempty"`
	// Calls per Per (Per default 1m).
	Calls int      `json:"calls"`
	Per   Duration `json:"per,omitzero"`
	// Burst is how many calls may come at once (default Calls).
	Burst int `json:"burst,omitempty"`
	// Shared counts the calls of all callers together instead of each
	// caller's own.
	Shared bool `json:"shared,omitempty"`
	// Principals and Partitions, when set, limit the rule to the matching
	// callers (path.Match patterns): a tighter quota for some.
	Principals []string `json:"principals,omitempty"`
	Partitions []string `json:"partitions,omitempty"`
}

// AuditConfig configures the audit log: one JSON line per call of an
// upstream's tool, prompt or resource: time, principal, partition, client
// address, method, exposed name, upstream, outcome (complete, error with
// its code, input_required, task, refused by policy or quota), duration.
// Arguments are recorded only with Arguments; tokens never.
type AuditConfig struct {
	// File receives the lines (appended; created with mode 0600); "-"
	// means standard error. Required.
	File string `json:"file"`
	// Arguments records each call's arguments (tools/call, prompts/get).
	Arguments bool `json:"arguments,omitempty"`
}

// Ceilings of the callers' configuration.
const (
	MaxPolicyRules = 1000
	MaxLimitRules  = 1000
)

func (a *AuthConfig) validate() error {
	n := 0
	for _, set := range []bool{a.TokensFile != "", a.JWT != nil, a.Introspection != nil, a.AuthorizationServer != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("auth: set exactly one of tokensFile, jwt, introspection and authorizationServer")
	}
	if a.Resource != "" {
		if err := httpURL(a.Resource); err != nil {
			return fmt.Errorf("auth.resource: %w", err)
		}
	}
	for _, s := range a.AuthorizationServers {
		if err := httpURL(s); err != nil {
			return fmt.Errorf("auth.authorizationServers: %w", err)
		}
	}
	switch {
	case a.JWT != nil:
		j := a.JWT
		if j.Issuer == "" {
			return errors.New("auth.jwt.issuer is required")
		}
		if (j.JWKSURL == "") == (j.JWKSFile == "") {
			return errors.New("auth.jwt: set one of jwksUrl and jwksFile")
		}
	case a.Introspection != nil:
		in := a.Introspection
		if in.Endpoint == "" || in.Issuer == "" {
			return errors.New("auth.introspection: endpoint and issuer are required")
		}
	case a.AuthorizationServer != nil:
		p := a.AuthorizationServer.Provider
		if p.Issuer == "" || p.ClientID == "" {
			return errors.New("auth.authorizationServer.provider: issuer and clientId are required")
		}
		if p.ClientSecret != "" && p.ClientSecretFile != "" {
			return errors.New("auth.authorizationServer.provider: set clientSecret or clientSecretFile, not both")
		}
		if a.PartitionClaim != "" || a.PrincipalClaim != "" || a.ScopesClaim != "" {
			return errors.New("auth.partitionClaim, principalClaim, scopesClaim: not with authorizationServer (its tokens name the user and carry the scopes it grants)")
		}
		if a.SignIn != nil {
			return errors.New("auth.signIn: not with authorizationServer (the gateway registers its own pages client there)")
		}
		for sc, claims := range a.AuthorizationServer.RestrictedScopes {
			if !slices.Contains(a.AuthorizationServer.Scopes, sc) {
				return fmt.Errorf("auth.authorizationServer.restrictedScopes: %q is not among its scopes", sc)
			}
			for c, vals := range claims {
				if c == "" || len(vals) == 0 {
					return fmt.Errorf("auth.authorizationServer.restrictedScopes.%s: claim %q needs at least one value", sc, c)
				}
			}
		}
	default:
		if a.SignIn != nil {
			return errors.New("auth.signIn: not with tokensFile (static tokens sign no browser in)")
		}
		if a.PartitionClaim != "" || a.PrincipalClaim != "" || a.ScopesClaim != "" {
			return errors.New("auth.partitionClaim, principalClaim, scopesClaim: only with jwt or introspection (a tokens file names each token's principal, partition and scopes)")
		}
	}
	if a.SignIn != nil && a.SignIn.ClientID == "" {
		return errors.New("auth.signIn.clientId is required")
	}
	return nil
}

func httpURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%q is no http(s) URL", s)
	}
	return nil
}

func validPatterns(field string, pats []string) error {
	for _, p := range pats {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return fmt.Errorf("%s: %q is no path.Match pattern", field, p)
		}
	}
	return nil
}

// validSelection checks the patterns a policy rule or a quota selects
// items and callers with.
func validSelection(upstream string, items, principals, partitions []string) error {
	if upstream != "" {
		if err := validPatterns("upstream", []string{upstream}); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		pats []string
	}{{"items", items}, {"principals", principals}, {"partitions", partitions}} {
		if err := validPatterns(f.name, f.pats); err != nil {
			return err
		}
	}
	return nil
}

func (r *PolicyRule) validate() error {
	if err := validSelection(r.Upstream, r.Items, r.Principals, r.Partitions); err != nil {
		return err
	}
	for _, s := range r.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\") {
			return fmt.Errorf("scopes: %q is no scope", s)
		}
	}
	for c, vals := range r.Claims {
		if c == "" || len(vals) == 0 {
			return fmt.Errorf("claims: %q needs at least one value", c)
		}
	}
	for a, pats := range r.DenyArguments {
		if a == "" {
			return errors.New("denyArguments: an empty argument name")
		}
		if err := validPatterns("denyArguments."+a, pats); err != nil {
			return err
		}
	}
	if len(r.Scopes)+len(r.Principals)+len(r.Partitions)+len(r.Claims)+len(r.DenyArguments) == 0 {
		return errors.New("the rule has no condition (scopes, principals, partitions, claims or denyArguments)")
	}
	return nil
}

func (r *LimitRule) validate() error {
	if !validName(r.Name, 64) {
		return fmt.Errorf("name %q must be 1-64 characters of A-Z a-z 0-9 _ . -", r.Name)
	}
	if err := validSelection(r.Upstream, r.Items, r.Principals, r.Partitions); err != nil {
		return err
	}
	switch {
	case r.Calls <= 0:
		return fmt.Errorf("calls = %d: at least 1", r.Calls)
	case r.Burst < 0:
		return fmt.Errorf("burst = %d is negative", r.Burst)
	case r.Per != 0 && r.Per.D() < time.Millisecond:
		return fmt.Errorf("per = %s: at least 1ms", r.Per.D())
	}
	return nil
}

// per returns the rule's period (default a minute).
func (r *LimitRule) per() time.Duration { return or(r.Per.D(), time.Minute) }

// burst returns the rule's burst (default Calls).
func (r *LimitRule) burst() int {
	if r.Burst > 0 {
		return r.Burst
	}
	return r.Calls
}

func (c *Config) validateCallers() error {
	if c.Auth != nil {
		if err := c.Auth.validate(); err != nil {
			return err
		}
	}
	if len(c.Policy) > MaxPolicyRules {
		return fmt.Errorf("policy: %d rules, at most %d", len(c.Policy), MaxPolicyRules)
	}
	for i := range c.Policy {
		if err := c.Policy[i].validate(); err != nil {
			return fmt.Errorf("policy rule %d: %w", i+1, err)
		}
	}
	if len(c.Limits) > MaxLimitRules {
		return fmt.Errorf("limits: %d rules, at most %d", len(c.Limits), MaxLimitRules)
	}
	seen := map[string]bool{}
	for i := range c.Limits {
		l := &c.Limits[i]
		if err := l.validate(); err != nil {
			return fmt.Errorf("limit %d: %w", i+1, err)
		}
		if seen[l.Name] {
			return fmt.Errorf("limit %q: the name is used twice", l.Name)
		}
		seen[l.Name] = true
	}
	if c.Audit != nil && c.Audit.File == "" {
		return errors.New("audit.file is required (\"-\" for standard error)")
	}
	return nil
}

// GrantsScope reports whether a user with the provider claims may be
// granted scope: an unrestricted scope always, a restricted one when every
// claim of its rule holds one of the accepted values.
func (s *AuthServerConfig) GrantsScope(claims map[string]any, scope string) bool {
	rule, ok := s.RestrictedScopes[scope]
	if !ok {
		return true
	}
	for name, accepted := range rule {
		var have []string
		switch v := claims[name].(type) {
		case string:
			have = []string{v}
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok {
					have = append(have, s)
				}
			}
		}
		if !slices.ContainsFunc(have, func(v string) bool { return slices.Contains(accepted, v) }) {
			return false
		}
	}
	return true
}
