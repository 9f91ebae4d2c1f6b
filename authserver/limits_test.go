package authserver

import (
	"testing"

	"github.com/weftmcp/weft/auth"
	"github.com/weftmcp/weft/internal/limitsdoc"
)

// serverLimits are the limits of the authorization server's section of
// docs/limits.md, in order.
var serverLimits = []limitsdoc.Limit{
	{Doc: "access token lifetime", Names: []string{"Config.AccessTokenTTL", "DefaultAccessTokenTTL"}, Default: limitsdoc.Dur(DefaultAccessTokenTTL), Past: []string{"invalid_token"}},
	{Doc: "refresh token lifetime", Names: []string{"Config.RefreshTokenTTL", "DefaultRefreshTokenTTL"}, Default: limitsdoc.Dur(DefaultRefreshTokenTTL), Past: []string{"invalid_grant"}},
	{Doc: "authorization code lifetime", Names: []string{"Config.CodeTTL", "DefaultCodeTTL"}, Default: limitsdoc.Dur(DefaultCodeTTL), Past: []string{"invalid_grant"}},
	{Doc: "sign-in and consent time", Names: []string{"Config.LoginTTL", "DefaultLoginTTL"}, Default: limitsdoc.Dur(DefaultLoginTTL), Past: []string{"expired"}},
	{Doc: "remembered consent", Names: []string{"Config.ConsentTTL", "DefaultConsentTTL"}, Default: limitsdoc.Dur(DefaultConsentTTL), Past: []string{"consent page"}},
	{Doc: "token, revocation and consent request body", Names: []string{"MaxFormBytes"}, Default: limitsdoc.Num(MaxFormBytes), Past: []string{"invalid_request"}},
	{Doc: "one request parameter", Names: []string{"MaxParamBytes"}, Default: limitsdoc.Num(MaxParamBytes), Past: []string{"invalid_request"}},
	{Doc: "scopes per request", Names: []string{"MaxScopes"}, Default: limitsdoc.Num(MaxScopes), Past: []string{"invalid_scope"}},
	{Doc: "dynamic registration request", Names: []string{"MaxRegistrationBytes"}, Default: limitsdoc.Num(MaxRegistrationBytes), Past: []string{"invalid_client_metadata"}},
	{Doc: "redirect URIs per client", Names: []string{"MaxRedirectURIs"}, Default: limitsdoc.Num(MaxRedirectURIs), Past: []string{"refused"}},
	{Doc: "dynamically registered clients", Names: []string{"Config.MaxDynamicClients", "DefaultMaxDynamicClients"}, Default: limitsdoc.Num(DefaultMaxDynamicClients), Past: []string{"dropped"}},
	{Doc: "dynamically registered client lifetime", Names: []string{"DefaultDynamicClientTTL"}, Default: limitsdoc.Dur(DefaultDynamicClientTTL), Past: []string{"unknown"}},
	{Doc: "client metadata document", Names: []string{"CIMDConfig.MaxBytes", "DefaultCIMDMaxBytes"}, Default: limitsdoc.Num(DefaultCIMDMaxBytes), Past: []string{"invalid"}},
	{Doc: "client metadata document fetch", Names: []string{"CIMDConfig.Timeout", "DefaultCIMDTimeout"}, Default: limitsdoc.Dur(DefaultCIMDTimeout), Past: []string{"could not be fetched"}},
	{Doc: "client metadata document caching", Names: []string{"DefaultCIMDCacheTTL", "MinCIMDCacheTTL", "MaxCIMDCacheTTL"}, Default: limitsdoc.Dur(DefaultCIMDCacheTTL), Ceiling: limitsdoc.Dur(MaxCIMDCacheTTL), Past: []string{"fetched again"}},
	{Doc: "cached client metadata documents", Names: []string{"CIMDConfig.MaxCacheEntries", "DefaultCIMDCacheEntries"}, Default: limitsdoc.Num(DefaultCIMDCacheEntries), Past: []string{"dropped"}},
	{Doc: "client metadata documents fetched at once, on one instance", Names: []string{"CIMDConfig.MaxConcurrentFetches", "DefaultCIMDConcurrentFetches"}, Default: limitsdoc.Num(DefaultCIMDConcurrentFetches), Past: []string{"could not be fetched"}},
	{Doc: "a failed client metadata document remembered", Names: []string{"CIMDFailureTTL"}, Default: limitsdoc.Dur(CIMDFailureTTL), Past: []string{"without a fetch"}},
	{Doc: "upstream provider answer", Names: []string{"MaxUpstreamBytes"}, Default: limitsdoc.Num(MaxUpstreamBytes), Past: []string{"access_denied"}},
	{Doc: "identity assertion lifetime (exp − iat)", Names: []string{"MaxIDJAGLifetime"}, Default: limitsdoc.Dur(MaxIDJAGLifetime), Past: []string{"invalid_grant"}},
	{Doc: "authorization requests awaiting sign-in and consent", Names: []string{"Config.MaxPendingAuthorizations", "DefaultMaxPendingAuthorizations"}, Default: limitsdoc.Num(DefaultMaxPendingAuthorizations), Past: []string{"oldest are dropped"}},
	{Doc: "authorization requests one client address starts per minute, on one instance", Names: []string{"Config.AuthorizeRate", "DefaultAuthorizeRate"}, Default: limitsdoc.Num(DefaultAuthorizeRate), Past: []string{"429"}},
	{Doc: "client addresses whose authorization rate one instance tracks", Default: limitsdoc.Num(maxRateAddresses), Past: []string{"fresh bucket"}},
	{Doc: "grants revoked with a consent", Default: limitsdoc.Num(maxFamiliesPerConsent), Past: []string{"expire"}},
	{Doc: "DPoP proof age", Names: []string{"auth.DPoPVerifier.MaxAge", "auth.DefaultDPoPMaxAge"}, Default: limitsdoc.Dur(auth.DefaultDPoPMaxAge), Past: []string{"invalid_dpop_proof"}},
	{Doc: "DPoP nonce lifetime", Names: []string{"auth.DPoPVerifier.NonceLifetime", "auth.DefaultDPoPNonceLifetime"}, Default: limitsdoc.Dur(auth.DefaultDPoPNonceLifetime), Past: []string{"use_dpop_nonce"}},
	{Doc: "DPoP proof identifiers remembered in one process", Names: []string{"auth.NewMemoryReplayCache", "auth.DefaultReplayCacheEntries"}, Default: limitsdoc.Num(auth.DefaultReplayCacheEntries), Past: []string{"refused"}},
	{Doc: "DPoP proof jti", Names: []string{"auth.MaxDPoPJTIBytes"}, Default: limitsdoc.Num(auth.MaxDPoPJTIBytes), Past: []string{"invalid_dpop_proof"}},
}

// TestLimitsDoc holds the authorization server's limits to its section of
// docs/limits.md, both ways, and fails when a constant named like a limit
// is in no row.
func TestLimitsDoc(t *testing.T) {
	errs, err := limitsdoc.CheckSection("../docs/limits.md", "Authorization server", ".", serverLimits, []string{"maxFamiliesPerConsent", "maxRateAddresses"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
}
