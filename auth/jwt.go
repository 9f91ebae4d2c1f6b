package auth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/weftmcp/weft"
)

// Defaults and limits of [JWTValidator].
const (
	// DefaultLeeway is the clock skew tolerated on exp, nbf and iat.
	DefaultLeeway = 60 * time.Second
	// MaxLeeway is the largest Leeway accepted.
	MaxLeeway = 5 * time.Minute
	// MaxTokenBytes bounds the length of a token; longer ones are rejected
	// before any parsing.
	MaxTokenBytes = 16384
	// minRSABits is the smallest RSA modulus accepted.
	minRSABits = 2048
	// maxKeysWithoutKid bounds the keys tried for a token without "kid".
	maxKeysWithoutKid = 8
)

// DefaultAlgorithms are the JWS algorithms a [JWTValidator] accepts when
// Algorithms is empty.
func DefaultAlgorithms() []string { return []string{"RS256", "ES256", "EdDSA"} }

// JWTValidator makes a weft server an OAuth 2.1 resource server for JWT
// access tokens (RFC 9068) issued by one authorization server. It checks, in
// order: the token's shape and size; its "alg" against Algorithms (never
// "none"); its "typ" header; the signature, with the key of JWKS named by
// "kid" (an unknown kid refreshes the key source once, rate limited; a
// token without kid is tried against up to 8 fitting keys) whose
// type and curve fit the algorithm; "iss" equal to Issuer; "aud" containing
// Audience; "exp" present and not past; "nbf" and "iat" not in the future
// (each with Leeway); "sub" present; no "cnf" (sender-constrained tokens
// are refused); the PartitionClaim present; and then,
// in [JWTValidator.Admission], the scopes.
//
// The exported fields are configuration: set them before calling
// [JWTValidator.Admission] or [JWTValidator.Validate] and do not change them
// afterwards. The validator keeps no state of its own (the key cache lives
// in the [KeySource]) and is safe for concurrent use.
type JWTValidator struct {
	// Issuer is the exact "iss" of accepted tokens: the authorization
	// server's issuer identifier, compared as a string. Required.
	Issuer string
	// Audience is this server's canonical URI (RFC 8707), which accepted
	// tokens must carry in "aud" (a string or an array). Default: the
	// Resource of the metadata given to Admission. A token whose aud
	// differs only in the case of scheme or host is accepted too; no other
	// normalization is done.
	Audience string
	// JWKS supplies the verification keys. Required.
	JWKS KeySource
	// Algorithms are the accepted JWS "alg" values. Default
	// [DefaultAlgorithms] (RS256, ES256, EdDSA). Also available: RS384,
	// RS512, PS256, PS384, PS512, ES384, ES512, and the HMAC algorithms
	// HS256, HS384 and HS512, which are used only when listed here and
	// verify only with symmetric ("oct") keys. "none" is always refused.
	Algorithms []string
	// Leeway is the clock skew tolerated on exp, nbf and iat. Default
	// [DefaultLeeway]; at most [MaxLeeway]; negative is invalid.
	Leeway time.Duration
	// RequiredScopes are needed for every request.
	RequiredScopes []string
	// ScopeFunc returns the scopes one operation needs beyond
	// RequiredScopes and the scopes its target's registration declares
	// (weft.Tool.Scopes and the like, which need no ScopeFunc), for
	// example by method. A valid token lacking any
	// needed scope gets a 403 whose challenge lists all of them. Every
	// returned scope must be an RFC 6749 scope-token: otherwise the request
	// is refused with a 500 (fail closed). Optional.
	//
	// Admission runs before the tool, prompt or resource is known to weft
	// handlers, and the Mcp-Name header is not verified on every path (not
	// on 2025-11-25 era requests): do not derive scopes from request
	// headers, which the client controls.
	ScopeFunc func(method string, r *weft.AdmissionRequest) []string
	// ScopeImplies reports whether a granted scope implies a needed one, for
	// scope hierarchies ("files" implying "files:read"). Default: only
	// equal scopes satisfy each other.
	ScopeImplies func(granted, needed string) bool
	// PartitionClaim names the string claim whose value partitions state,
	// tasks and subscriptions. Default "sub" (every subject alone); use for
	// example "tenant" or "org_id" to share them within a tenant. The
	// partition is the issuer and that value joined by "|"
	// ("https://auth.example.com|tenant-a"), so that two issuers can never
	// share a partition; the raw value is in [Claims].Raw.
	PartitionClaim string
	// PrincipalClaim names the string claim whose value is the caller's
	// principal (weft.Identity.Principal). Default "sub"; another claim
	// ("email", "oid", "preferred_username") must then be present too.
	PrincipalClaim string
	// ScopesClaim names the claim holding the granted scopes, a
	// space-separated string or an array of them ("roles", "groups"), for
	// authorization servers that grant scopes there. Default: "scope",
	// else "scp".
	ScopesClaim string
	// StrictType accepts only tokens with the RFC 9068 "typ" header
	// "at+jwt" (or "application/at+jwt"). By default "JWT" and a missing
	// typ are accepted as well, as many authorization servers issue those;
	// any other typ (an ID token type, a logout token...) is always refused.
	StrictType bool
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger, when set, receives one Info record per rejected token with
	// the reason (never the token). Default: no logging.
	Logger *slog.Logger
	// DPoP, when set, accepts DPoP-bound tokens (RFC 9449): a token whose
	// cnf claim holds a "jkt" is admitted only under the "DPoP"
	// authorization scheme with a valid proof of that key for a POST to
	// Audience, carrying the token's hash (ath). Bound tokens sent as
	// Bearer, and unbound tokens sent as DPoP, are refused. Without it,
	// every token with a cnf claim is refused. [JWTValidator.Validate]
	// checks no proof: its caller must (see [Claims].DPoPJKT).
	DPoP *DPoPVerifier
}

// Claims are the validated claims of an access token. [JWTValidator.Admission]
// and [Introspector.Admission] put them in [weft.Identity].Data; get them
// back with [ClaimsOf]. Treat them as read-only: an Introspector shares Raw
// between the requests that reuse one cached answer.
type Claims struct {
	Issuer    string    // iss
	Subject   string    // sub
	Audience  []string  // aud
	Expiry    time.Time // exp
	NotBefore time.Time // nbf; zero when absent
	IssuedAt  time.Time // iat; zero when absent
	ID        string    // jti; empty when absent
	ClientID  string    // client_id; empty when absent
	// DPoPJKT is the cnf.jkt of a DPoP-bound token (only with
	// JWTValidator.DPoP set); empty for a bearer token.
	DPoPJKT string
	// Scopes are the granted scopes: the space-separated "scope" claim, or
	// else the "scp" claim (an array, or a space-separated string).
	Scopes []string
	// Raw holds every claim of the token as JSON.
	Raw map[string]json.RawMessage
}

// ClaimsOf returns the token claims that [JWTValidator.Admission] stored in
// an identity.
func ClaimsOf(id weft.Identity) (*Claims, bool) {
	c, ok := id.Data.(*Claims)
	return c, ok
}

// HasScope reports whether the claims grant scope.
func (c *Claims) HasScope(scope string) bool { return slices.Contains(c.Scopes, scope) }

// jwtConfig is a checked snapshot of a JWTValidator.
type jwtConfig struct {
	scopePolicy
	issuer         string
	audience       string
	keys           KeySource
	algs           []string
	leeway         time.Duration
	partitionClaim string
	principalClaim string
	scopesClaim    string
	strictType     bool
	now            func() time.Time
}

// CheckConfig reports the first configuration problem of v used with meta
// (which may be nil, as for [JWTValidator.Validate]), or nil. Admission and
// Validate fail closed on a bad configuration; call CheckConfig at startup
// to find out early.
func (v *JWTValidator) CheckConfig(meta *ResourceMetadata) error {
	_, err := v.compile(meta)
	return err
}

func (v *JWTValidator) compile(meta *ResourceMetadata) (*jwtConfig, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: nil JWTValidator", ErrConfig)
	}
	c := &jwtConfig{
		scopePolicy: scopePolicy{
			required:  slices.Clone(v.RequiredScopes),
			scopeFunc: v.ScopeFunc,
			implies:   v.ScopeImplies,
			log:       v.Logger,
			dpop:      v.DPoP,
		},
		issuer:         v.Issuer,
		audience:       v.Audience,
		keys:           v.JWKS,
		leeway:         v.Leeway,
		partitionClaim: v.PartitionClaim,
		principalClaim: v.PrincipalClaim,
		scopesClaim:    v.ScopesClaim,
		strictType:     v.StrictType,
		now:            v.Now,
	}
	if c.issuer == "" {
		return nil, fmt.Errorf("%w: JWTValidator.Issuer is required", ErrConfig)
	}
	if strings.ContainsAny(c.issuer, "|\r\n") {
		return nil, fmt.Errorf("%w: JWTValidator.Issuer %q must not contain '|' or line breaks", ErrConfig, c.issuer)
	}
	if c.audience == "" && meta != nil {
		c.audience = meta.Resource
	}
	c.scopePolicy.audience = c.audience
	if c.audience == "" {
		return nil, fmt.Errorf("%w: JWTValidator.Audience is required (this server's canonical URI), or pass resource metadata to Admission", ErrConfig)
	}
	if c.keys == nil {
		return nil, fmt.Errorf("%w: JWTValidator.JWKS is required", ErrConfig)
	}
	algs := v.Algorithms
	if len(algs) == 0 {
		algs = DefaultAlgorithms()
	}
	for _, a := range algs {
		if strings.EqualFold(a, "none") {
			return nil, fmt.Errorf("%w: JWTValidator.Algorithms lists \"none\"; unsigned tokens are never accepted", ErrConfig)
		}
		if _, ok := algSpecOf(a); !ok {
			return nil, fmt.Errorf("%w: JWTValidator.Algorithms lists %q, which is not a supported JWS algorithm", ErrConfig, a)
		}
		if !slices.Contains(c.algs, a) {
			c.algs = append(c.algs, a)
		}
	}
	switch {
	case c.leeway < 0:
		return nil, fmt.Errorf("%w: JWTValidator.Leeway %s is negative", ErrConfig, c.leeway)
	case c.leeway == 0:
		c.leeway = DefaultLeeway
	case c.leeway > MaxLeeway:
		return nil, fmt.Errorf("%w: JWTValidator.Leeway %s exceeds %s", ErrConfig, c.leeway, MaxLeeway)
	}
	if err := checkScopes("JWTValidator.RequiredScopes", c.required); err != nil {
		return nil, err
	}
	if c.partitionClaim == "" {
		c.partitionClaim = "sub"
	}
	if c.principalClaim == "" {
		c.principalClaim = "sub"
	}
	if c.now == nil {
		c.now = time.Now
	}
	if meta != nil {
		if err := meta.Validate(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Validate validates token and returns its claims. It checks everything
// but the scopes an operation needs (see [JWTValidator.Admission]). Errors
// wrap one of the package's Err values and never contain the token.
func (v *JWTValidator) Validate(ctx context.Context, token string) (*Claims, error) {
	c, err := v.compile(nil)
	if err != nil {
		return nil, err
	}
	return c.validate(ctx, token)
}

// Admission returns a [weft.Admission] that admits requests carrying a
// valid access token as "Authorization: Bearer <token>". meta is the
// server's protected resource metadata, named in every challenge; it also
// provides the default Audience. meta may be nil only if Audience is set.
//
// Rejections: no token: 401 with resource_metadata and scope (the
// operation's scopes, else meta's ScopesSupported); an invalid token: 401
// error="invalid_token"; a valid token lacking a scope: 403
// error="insufficient_scope" with every scope the operation needs; key
// source failure: 503; invalid configuration: 500 for every request (fail
// closed).
//
// An admitted request gets Identity{Principal: the PrincipalClaim value
// (sub), Partition: issuer + "|" + PartitionClaim value, Scopes: the
// token's scopes (of ScopesClaim), Data: *Claims}.
func (v *JWTValidator) Admission(meta *ResourceMetadata) weft.Admission {
	meta = meta.snapshot()
	c, cerr := v.compile(meta)
	if cerr != nil {
		var log *slog.Logger
		if v != nil {
			log = v.Logger
		}
		return failClosed(log, "JWT validator", cerr)
	}
	return tokenAdmission(meta, &c.scopePolicy, c.validate, c.principal, c.partition)
}

// principal is the identity principal of valid claims: the
// PrincipalClaim value.
func (c *jwtConfig) principal(cl *Claims) string {
	if c.principalClaim == "sub" {
		return cl.Subject
	}
	p, _ := claimString(cl.Raw, c.principalClaim)
	return p
}

// partition is the identity partition of valid claims: the issuer and the
// PartitionClaim value, joined by "|".
func (c *jwtConfig) partition(cl *Claims) string {
	part, _ := claimString(cl.Raw, c.partitionClaim)
	return c.issuer + "|" + part
}

// neededScopes returns RequiredScopes plus the operation's scopes (from
// ScopeFunc and the target's declared scopes), without duplicates, in
// order. A scope that is not a scope-token is an error: it
// could be neither granted nor challenged, and dropping it would admit the
// request without it.
func (c *scopePolicy) neededScopes(r *weft.AdmissionRequest) ([]string, error) {
	out := slices.Clone(c.required)
	if c.scopeFunc != nil {
		for i, s := range c.scopeFunc(r.Method, r) {
			if !isScopeToken(s) {
				return nil, fmt.Errorf("%w: ScopeFunc(%q) returned scope %d %s, which is not an RFC 6749 scope-token", ErrConfig, r.Method, i, quoteUntrusted(s))
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	// The scopes the target's registration declares (weft.Tool.Scopes
	// and the like): no ScopeFunc needed.
	for i, s := range r.Scopes {
		if !isScopeToken(s) {
			return nil, fmt.Errorf("%w: the registration of %q declares scope %d %s, which is not an RFC 6749 scope-token", ErrConfig, r.Name, i, quoteUntrusted(s))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// missingScopes returns the needed scopes no granted scope satisfies.
func (c *scopePolicy) missingScopes(granted, needed []string) []string {
	var missing []string
	for _, n := range needed {
		ok := slices.Contains(granted, n)
		if !ok && c.implies != nil {
			for _, g := range granted {
				if c.implies(g, n) {
					ok = true
					break
				}
			}
		}
		if !ok {
			missing = append(missing, n)
		}
	}
	return missing
}

// joseHeader is the protected header of a compact JWS, decoded by us for the
// checks go-jose leaves to the caller.
type joseHeader struct {
	Alg  *string         `json:"alg"`
	Typ  *string         `json:"typ"`
	Cty  json.RawMessage `json:"cty"`
	Crit json.RawMessage `json:"crit"`
	B64  json.RawMessage `json:"b64"`
	Enc  json.RawMessage `json:"enc"`
}

func (c *jwtConfig) validate(ctx context.Context, token string) (*Claims, error) {
	if token == "" {
		return nil, ErrNoToken
	}
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: token is %d bytes, more than the limit of %d", ErrMalformedToken, len(token), MaxTokenBytes)
	}
	parts := strings.Split(token, ".")
	if len(parts) == 5 {
		return nil, fmt.Errorf("%w: encrypted tokens (JWE) are not supported", ErrMalformedToken)
	}
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: token is not a JWS in compact serialization (%d parts instead of 3)", ErrMalformedToken, len(parts))
	}
	checkPart := func(i int) error {
		if parts[i] == "" {
			return fmt.Errorf("%w: part %d of the token is empty", ErrMalformedToken, i+1)
		}
		if !isBase64URL(parts[i]) {
			return fmt.Errorf("%w: part %d of the token is not unpadded base64url", ErrMalformedToken, i+1)
		}
		// Strict decoding refuses non-zero trailing bits, so that every
		// token has one spelling.
		if _, err := base64.RawURLEncoding.Strict().DecodeString(parts[i]); err != nil {
			return fmt.Errorf("%w: part %d of the token is not canonical base64url", ErrMalformedToken, i+1)
		}
		return nil
	}

	// Header checks, first, so that an unsigned token is reported as such.
	if err := checkPart(0); err != nil {
		return nil, err
	}
	rawHeader, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, fmt.Errorf("%w: the header is not valid base64url", ErrMalformedToken)
	}
	var h joseHeader
	if err := json.Unmarshal(rawHeader, &h); err != nil {
		return nil, fmt.Errorf("%w: the header is not a JSON object with string alg and typ", ErrMalformedToken)
	}
	if h.Alg == nil {
		return nil, fmt.Errorf("%w: the header has no alg", ErrMalformedToken)
	}
	alg := *h.Alg
	if strings.EqualFold(alg, "none") {
		return nil, fmt.Errorf("%w: alg \"none\" (unsigned token) is never accepted", ErrAlgorithm)
	}
	if !slices.Contains(c.algs, alg) {
		return nil, fmt.Errorf("%w: alg %s is not one of %s", ErrAlgorithm, quoteUntrusted(alg), strings.Join(c.algs, ", "))
	}
	if h.Enc != nil {
		return nil, fmt.Errorf("%w: the header has \"enc\": encrypted tokens are not supported", ErrMalformedToken)
	}
	if h.Crit != nil {
		return nil, fmt.Errorf("%w: the header has \"crit\"; no critical extension is supported", ErrMalformedToken)
	}
	if h.B64 != nil {
		return nil, fmt.Errorf("%w: the header has \"b64\", which JWTs must not use", ErrMalformedToken)
	}
	if h.Cty != nil {
		return nil, fmt.Errorf("%w: the header has \"cty\": nested tokens are not supported", ErrMalformedToken)
	}
	if err := c.checkType(h.Typ); err != nil {
		return nil, err
	}
	for i := 1; i < 3; i++ {
		if err := checkPart(i); err != nil {
			return nil, err
		}
	}

	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
	if err != nil {
		// go-jose's messages can quote header values: say only what failed.
		return nil, fmt.Errorf("%w: the token does not parse as a signed JWS", ErrMalformedToken)
	}
	if len(jws.Signatures) != 1 || jws.Signatures[0].Header.Algorithm != alg {
		return nil, fmt.Errorf("%w: the token does not have exactly one signature with alg %s", ErrMalformedToken, alg)
	}
	kid := jws.Signatures[0].Header.KeyID

	// Signature.
	keys, err := c.candidateKeys(ctx, kid, alg)
	if err != nil {
		return nil, err
	}
	var payload []byte
	for _, k := range keys {
		if p, err := jws.Verify(k.Key); err == nil {
			payload = p
			break
		}
	}
	if payload == nil {
		if kid != "" {
			return nil, fmt.Errorf("%w: the signature does not verify with key %s", ErrSignature, quoteUntrusted(kid))
		}
		return nil, fmt.Errorf("%w: the signature verifies with none of the %d keys fit for %s", ErrSignature, len(keys), alg)
	}

	// Claims.
	claims, err := parseClaims(payload)
	if err != nil {
		return nil, err
	}
	if err := c.checkClaims(claims); err != nil {
		return nil, err
	}
	return claims, nil
}

// checkType accepts "at+jwt" (RFC 9068), and unless strict "JWT" or none.
// Media types compare case-insensitively and may carry "application/".
func (c *jwtConfig) checkType(typ *string) error {
	if typ == nil {
		if c.strictType {
			return fmt.Errorf("%w: the header has no typ; \"at+jwt\" is required", ErrTokenType)
		}
		return nil
	}
	t := strings.ToLower(*typ)
	t = strings.TrimPrefix(t, "application/")
	switch {
	case t == "at+jwt":
		return nil
	case t == "jwt" && !c.strictType:
		return nil
	}
	want := `"at+jwt" or "JWT"`
	if c.strictType {
		want = `"at+jwt"`
	}
	return fmt.Errorf("%w: typ %s is not %s", ErrTokenType, quoteUntrusted(*typ), want)
}

// candidateKeys returns the keys that may verify a token with kid and alg:
// the keys named kid (after one refresh if none is), or every key when the
// token names none; then only those fit for alg.
func (c *jwtConfig) candidateKeys(ctx context.Context, kid, alg string) ([]jose.JSONWebKey, error) {
	all, err := c.keys.Keys(ctx)
	if err != nil && len(all) == 0 {
		return nil, wrapKeySource(err)
	}
	named := all
	if kid != "" {
		named = keysWithID(all, kid)
		if len(named) == 0 {
			all, err = c.keys.Refresh(ctx)
			if err != nil && len(all) == 0 {
				return nil, wrapKeySource(err)
			}
			named = keysWithID(all, kid)
		}
		if len(named) == 0 {
			return nil, fmt.Errorf("%w: no key has kid %s", ErrUnknownKey, quoteUntrusted(kid))
		}
	}
	var fit []jose.JSONWebKey
	var why error
	for _, k := range named {
		if err := keyFits(k, alg); err != nil {
			why = err
			continue
		}
		fit = append(fit, k)
	}
	if kid == "" && len(fit) > maxKeysWithoutKid {
		// Each candidate costs a signature verification: bound the work a
		// token without kid can cause.
		return nil, fmt.Errorf("%w: the token names no kid and %d keys could verify %s (at most %d are tried)", ErrUnknownKey, len(fit), alg, maxKeysWithoutKid)
	}
	if len(fit) == 0 {
		if kid != "" && why != nil {
			return nil, fmt.Errorf("%w: key %s cannot verify %s: %v", ErrAlgorithm, quoteUntrusted(kid), alg, why)
		}
		return nil, fmt.Errorf("%w: no key can verify %s", ErrUnknownKey, alg)
	}
	return fit, nil
}

func wrapKeySource(err error) error {
	if errors.Is(err, ErrKeySource) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrKeySource, err)
}

func keysWithID(keys []jose.JSONWebKey, kid string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if k.KeyID == kid {
			out = append(out, k)
		}
	}
	return out
}

// algSpec describes the key a JWS algorithm needs.
type algSpec struct {
	kind    string // "RSA", "EC", "OKP", "oct"
	curve   string // EC curve name
	minOct  int    // minimum HMAC key length in bytes
	explain string
}

// algSpecOf returns the key requirements of a supported algorithm.
func algSpecOf(alg string) (algSpec, bool) {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		return algSpec{kind: "RSA", explain: "an RSA key of at least 2048 bits"}, true
	case "ES256":
		return algSpec{kind: "EC", curve: "P-256", explain: "an EC P-256 key"}, true
	case "ES384":
		return algSpec{kind: "EC", curve: "P-384", explain: "an EC P-384 key"}, true
	case "ES512":
		return algSpec{kind: "EC", curve: "P-521", explain: "an EC P-521 key"}, true
	case "EdDSA":
		return algSpec{kind: "OKP", explain: "an Ed25519 key"}, true
	case "HS256":
		return algSpec{kind: "oct", minOct: 32, explain: "a symmetric key of at least 32 bytes"}, true
	case "HS384":
		return algSpec{kind: "oct", minOct: 48, explain: "a symmetric key of at least 48 bytes"}, true
	case "HS512":
		return algSpec{kind: "oct", minOct: 64, explain: "a symmetric key of at least 64 bytes"}, true
	}
	return algSpec{}, false
}

// keyFits checks that key k may verify alg: the key's own "alg", if any,
// is alg, and its type, curve and size are those alg needs.
func keyFits(k jose.JSONWebKey, alg string) error {
	spec, ok := algSpecOf(alg)
	if !ok {
		return fmt.Errorf("unsupported algorithm %s", alg)
	}
	if k.Algorithm != "" && k.Algorithm != alg {
		return fmt.Errorf("the key is for %s", quoteUntrusted(k.Algorithm))
	}
	fits := false
	switch key := k.Key.(type) {
	case *rsa.PublicKey:
		fits = spec.kind == "RSA" && key.N != nil && key.N.BitLen() >= minRSABits
	case *ecdsa.PublicKey:
		fits = spec.kind == "EC" && key.Curve != nil && key.Curve.Params().Name == spec.curve
	case ed25519.PublicKey:
		fits = spec.kind == "OKP" && len(key) == ed25519.PublicKeySize
	case []byte:
		fits = spec.kind == "oct" && len(key) >= spec.minOct
	}
	if !fits {
		return fmt.Errorf("%s needs %s", alg, spec.explain)
	}
	return nil
}

// isBase64URL reports whether s uses only the unpadded base64url alphabet.
func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' {
			continue
		}
		return false
	}
	return true
}

// parseClaims decodes a verified payload.
func parseClaims(payload []byte) (*Claims, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return nil, fmt.Errorf("%w: the payload is not a JSON object", ErrClaims)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: the payload has data after the JSON object", ErrClaims)
	}
	c := &Claims{Raw: raw}
	var err error
	if c.Issuer, err = optString(raw, "iss"); err != nil {
		return nil, err
	}
	if c.Subject, err = optString(raw, "sub"); err != nil {
		return nil, err
	}
	if c.ID, err = optString(raw, "jti"); err != nil {
		return nil, err
	}
	if c.ClientID, err = optString(raw, "client_id"); err != nil {
		return nil, err
	}
	if c.Audience, err = stringOrArray(raw, "aud"); err != nil {
		return nil, err
	}
	if c.Expiry, err = numericDate(raw, "exp"); err != nil {
		return nil, err
	}
	if c.NotBefore, err = numericDate(raw, "nbf"); err != nil {
		return nil, err
	}
	if c.IssuedAt, err = numericDate(raw, "iat"); err != nil {
		return nil, err
	}
	if _, ok := raw["scope"]; ok {
		s, err := optString(raw, "scope")
		if err != nil {
			return nil, err
		}
		c.Scopes = splitScopes(s)
	} else if _, ok := raw["scp"]; ok {
		list, err := stringOrArray(raw, "scp")
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			c.Scopes = append(c.Scopes, splitScopes(s)...)
		}
	}
	c.Scopes = dedupe(c.Scopes)
	return c, nil
}

// checkClaims applies the issuer, audience, time and presence checks.
func (c *jwtConfig) checkClaims(cl *Claims) error {
	if _, ok := cl.Raw["iss"]; !ok {
		return fmt.Errorf("%w: the token has no iss claim", ErrIssuer)
	}
	if cl.Issuer != c.issuer {
		return fmt.Errorf("%w: iss %s is not %q", ErrIssuer, quoteUntrusted(cl.Issuer), c.issuer)
	}
	if len(cl.Audience) == 0 {
		return fmt.Errorf("%w: the token has no aud claim", ErrAudience)
	}
	if !slices.ContainsFunc(cl.Audience, func(a string) bool { return audienceMatches(a, c.audience) }) {
		return fmt.Errorf("%w: aud does not contain %q", ErrAudience, c.audience)
	}
	now := c.now()
	if cl.Expiry.IsZero() {
		return fmt.Errorf("%w: the token has no exp claim", ErrClaims)
	}
	if !now.Before(cl.Expiry.Add(c.leeway)) {
		return fmt.Errorf("%w: exp %s is before now %s (leeway %s)", ErrExpired,
			cl.Expiry.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), c.leeway)
	}
	if !cl.NotBefore.IsZero() && now.Add(c.leeway).Before(cl.NotBefore) {
		return fmt.Errorf("%w: nbf %s is after now %s (leeway %s)", ErrNotYetValid,
			cl.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), c.leeway)
	}
	if !cl.IssuedAt.IsZero() && now.Add(c.leeway).Before(cl.IssuedAt) {
		return fmt.Errorf("%w: iat %s is after now %s (leeway %s)", ErrNotYetValid,
			cl.IssuedAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), c.leeway)
	}
	if !cl.IssuedAt.IsZero() && cl.Expiry.Before(cl.IssuedAt) {
		return fmt.Errorf("%w: exp is before iat", ErrClaims)
	}
	if cl.Subject == "" {
		return fmt.Errorf("%w: the token has no sub claim", ErrClaims)
	}
	if raw, ok := cl.Raw["cnf"]; ok {
		// A sender-constrained token: only a DPoP key binding can be
		// checked (with a proof, in Admission); anything else (mTLS) is
		// refused.
		var cnf map[string]json.RawMessage
		var jkt string
		if c.dpop == nil || json.Unmarshal(raw, &cnf) != nil || len(cnf) != 1 || json.Unmarshal(cnf["jkt"], &jkt) != nil || jkt == "" {
			return fmt.Errorf("%w: the token is sender-constrained (cnf claim) in a way this server cannot check", ErrClaims)
		}
		cl.DPoPJKT = jkt
	}
	part, err := claimString(cl.Raw, c.partitionClaim)
	if err != nil {
		return err
	}
	if len(c.issuer)+1+len(part) > maxPartitionBytes {
		return fmt.Errorf("%w: issuer and %s claim together exceed the %d-byte partition limit", ErrClaims, c.partitionClaim, maxPartitionBytes)
	}
	if c.principalClaim != "sub" {
		if _, err := claimString(cl.Raw, c.principalClaim); err != nil {
			return err
		}
	}
	if c.scopesClaim != "" {
		list, err := stringOrArray(cl.Raw, c.scopesClaim)
		if err != nil {
			return err
		}
		cl.Scopes = nil
		for _, s := range list {
			cl.Scopes = append(cl.Scopes, splitScopes(s)...)
		}
		cl.Scopes = dedupe(cl.Scopes)
	}
	return nil
}

// audienceMatches compares an aud value with this server's URI: exactly,
// or ignoring the case of scheme and host (RFC 8707 clients may send
// either; the MCP specification asks servers to accept both).
func audienceMatches(aud, want string) bool {
	if aud == want {
		return true
	}
	if !strings.EqualFold(aud, want) {
		return false
	}
	a, err1 := url.Parse(aud)
	w, err2 := url.Parse(want)
	if err1 != nil || err2 != nil || a.Host == "" {
		return false
	}
	return strings.EqualFold(a.Scheme, w.Scheme) && strings.EqualFold(a.Host, w.Host) &&
		a.EscapedPath() == w.EscapedPath() && a.RawQuery == w.RawQuery && a.Fragment == w.Fragment &&
		a.User.String() == w.User.String()
}

// claimString returns a claim that must be a non-empty string.
func claimString(raw map[string]json.RawMessage, name string) (string, error) {
	if _, ok := raw[name]; !ok {
		return "", fmt.Errorf("%w: the token has no %s claim", ErrClaims, quoteUntrusted(name))
	}
	s, err := optString(raw, name)
	if err != nil {
		return "", err
	}
	if s == "" {
		return "", fmt.Errorf("%w: the %s claim is empty", ErrClaims, quoteUntrusted(name))
	}
	return s, nil
}

func optString(raw map[string]json.RawMessage, name string) (string, error) {
	v, ok := raw[name]
	if !ok {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("%w: the %s claim is not a string", ErrClaims, quoteUntrusted(name))
	}
	return s, nil
}

func stringOrArray(raw map[string]json.RawMessage, name string) ([]string, error) {
	v, ok := raw[name]
	if !ok {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return []string{s}, nil
	}
	var list []string
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, fmt.Errorf("%w: the %s claim is neither a string nor an array of strings", ErrClaims, name)
	}
	return list, nil
}

// numericDate decodes an RFC 7519 NumericDate; zero time when absent.
func numericDate(raw map[string]json.RawMessage, name string) (time.Time, error) {
	v, ok := raw[name]
	if !ok {
		return time.Time{}, nil
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err != nil {
		return time.Time{}, fmt.Errorf("%w: the %s claim is not a number", ErrClaims, name)
	}
	f, err := n.Float64()
	// Bound to years 1970..9999 (253402300799 is 9999-12-31T23:59:59Z).
	if err != nil || math.IsNaN(f) || f < 0 || f > 253402300799 {
		return time.Time{}, fmt.Errorf("%w: the %s claim is not a date between 1970 and 9999", ErrClaims, name)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}

// splitScopes splits a space-separated scope string.
func splitScopes(s string) []string {
	var out []string
	for _, p := range strings.Split(s, " ") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func dedupe(in []string) []string {
	var out []string
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
