package authserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/weftmcp/weft/auth"
)

// grantJWTBearer is the RFC 7523 grant type of identity assertions.
const grantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// MaxIDJAGLifetime bounds exp - iat of an accepted identity assertion.
const MaxIDJAGLifetime = 10 * time.Minute

// TrustedIdP is an enterprise identity provider whose Identity Assertion
// JWT Authorization Grants (ID-JAG, MCP ext-auth enterprise-managed
// authorization) this server exchanges for access tokens.
type TrustedIdP struct {
	// Issuer is the IdP's issuer URL, the assertions' "iss".
	Issuer string
	// JWKS supplies the IdP's signing keys (auth.JWKSURL or a file).
	JWKS auth.KeySource
	// Claims are assertion claims copied into access tokens (as
	// IdentityMapping.Claims), each value qualified with SubjectPrefix
	// (numbers and booleans become strings), so that one provider can
	// never assert another's tenant or group.
	Claims []string
	// SubjectPrefix qualifies the identities this IdP asserts: the
	// "sub" of the tokens issued for its users is SubjectPrefix + the
	// assertion's sub. Two IdPs' users, and a user of an IdP and one who
	// signs in through Config.Upstream, can therefore never share a
	// subject or a partition. Default: Issuer + "|". No IdP's prefix may
	// begin another's.
	SubjectPrefix string
}

type idjag struct {
	idps map[string]TrustedIdP
}

func newIDJAG(list []TrustedIdP) (*idjag, error) {
	if len(list) == 0 {
		return nil, nil
	}
	j := &idjag{idps: map[string]TrustedIdP{}}
	for _, p := range list {
		if p.Issuer == "" || p.JWKS == nil {
			return nil, fmt.Errorf("%w: a trusted IdP needs Issuer and JWKS", ErrConfig)
		}
		if _, dup := j.idps[p.Issuer]; dup {
			return nil, fmt.Errorf("%w: IdP %s is trusted twice", ErrConfig, p.Issuer)
		}
		if p.SubjectPrefix == "" {
			p.SubjectPrefix = p.Issuer + "|"
		}
		for _, o := range j.idps {
			if strings.HasPrefix(p.SubjectPrefix, o.SubjectPrefix) || strings.HasPrefix(o.SubjectPrefix, p.SubjectPrefix) {
				return nil, fmt.Errorf("%w: the subject prefixes of IdPs %s (%q) and %s (%q) overlap: their users' identities could collide",
					ErrConfig, o.Issuer, o.SubjectPrefix, p.Issuer, p.SubjectPrefix)
			}
		}
		j.idps[p.Issuer] = p
	}
	return j, nil
}

// foreign reports a subject of the upstream provider that spells an
// identity of a trusted IdP (it begins with its prefix).
func (j *idjag) foreign(subject string) bool {
	if j == nil {
		return false
	}
	for _, p := range j.idps {
		if strings.HasPrefix(subject, p.SubjectPrefix) {
			return true
		}
	}
	return false
}

// qualify prefixes a copied claim's value (each element of an array).
func qualify(prefix string, v any) any {
	switch x := v.(type) {
	case string:
		return prefix + x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = qualify(prefix, e)
		}
		return out
	default:
		return prefix + fmt.Sprint(x)
	}
}

// idjagClaims are the claims of an identity assertion.
type idjagClaims struct {
	Iss      string          `json:"iss"`
	Sub      string          `json:"sub"`
	Aud      json.RawMessage `json:"aud"`
	Resource string          `json:"resource"`
	ClientID string          `json:"client_id"`
	JTI      string          `json:"jti"`
	Exp      *float64        `json:"exp"`
	Iat      *float64        `json:"iat"`
	Nbf      *float64        `json:"nbf"`
	Scope    string          `json:"scope"`
}

// verifyIDJAG checks an assertion: typ oauth-id-jag+jwt, a trusted issuer
// whose key verifies it, aud naming this server, a served resource, the
// authenticated client, a fresh jti, and its lifetime.
func (s *Server) verifyIDJAG(ctx context.Context, assertion string, client *Client) (*idjagClaims, map[string]any, error) {
	if len(assertion) > auth.MaxTokenBytes {
		return nil, nil, errors.New("the assertion is too long")
	}
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return nil, nil, errors.New("the assertion is not a signed JWT")
	}
	hraw, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, nil, errors.New("the assertion header is not base64url")
	}
	var h struct {
		Typ, Alg, Kid string
	}
	if json.Unmarshal(hraw, &h) != nil || h.Typ != "oauth-id-jag+jwt" {
		return nil, nil, errors.New("the assertion's typ is not oauth-id-jag+jwt")
	}
	algs := []jose.SignatureAlgorithm{jose.ES256, jose.RS256, jose.EdDSA, jose.PS256}
	jws, err := jose.ParseSignedCompact(assertion, algs)
	if err != nil || len(jws.Signatures) != 1 {
		return nil, nil, errors.New("the assertion does not parse")
	}
	// The issuer picks the keys; it is read before verification but
	// trusted only once its keys verify the signature.
	praw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, nil, errors.New("the assertion payload is not base64url")
	}
	var peek struct{ Iss string }
	_ = json.Unmarshal(praw, &peek)
	idp, ok := s.idjag.idps[peek.Iss]
	if !ok {
		return nil, nil, errors.New("the assertion's issuer is not trusted")
	}
	keys, err := idp.JWKS.Keys(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("the issuer's keys are unavailable: %w", err)
	}
	var payload []byte
	for _, k := range keys {
		if h.Kid != "" && k.KeyID != h.Kid {
			continue
		}
		if p, err := jws.Verify(k.Key); err == nil {
			payload = p
			break
		}
	}
	if payload == nil {
		return nil, nil, errors.New("the assertion's signature does not verify")
	}
	var c idjagClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, nil, errors.New("the assertion's claims are invalid")
	}
	all := map[string]any{}
	_ = json.Unmarshal(payload, &all)
	var auds []string
	if json.Unmarshal(c.Aud, &auds) != nil {
		var one string
		if json.Unmarshal(c.Aud, &one) == nil {
			auds = []string{one}
		}
	}
	now := s.now()
	switch {
	case c.Iss != idp.Issuer:
		return nil, nil, errors.New("the assertion's issuer is not trusted")
	case c.Sub == "":
		return nil, nil, errors.New("the assertion has no sub")
	case !slices.Contains(auds, s.cfg.Issuer):
		return nil, nil, errors.New("the assertion's aud is not this authorization server")
	case c.ClientID != client.ID:
		return nil, nil, errors.New("the assertion was issued to another client")
	case c.JTI == "" || len(c.JTI) > 256:
		return nil, nil, errors.New("the assertion has no usable jti")
	case c.Exp == nil || c.Iat == nil:
		return nil, nil, errors.New("the assertion lacks exp or iat")
	}
	exp, iat := time.Unix(int64(*c.Exp), 0), time.Unix(int64(*c.Iat), 0)
	if !now.Before(exp) || iat.After(now.Add(time.Minute)) || exp.Sub(iat) > MaxIDJAGLifetime {
		return nil, nil, errors.New("the assertion is expired, not yet valid or too long-lived")
	}
	if c.Nbf != nil && time.Unix(int64(*c.Nbf), 0).After(now.Add(time.Minute)) {
		return nil, nil, errors.New("the assertion is not yet valid (nbf)")
	}
	fresh, err := s.store.Insert(ctx, Item{Kind: "idjagjti", ID: digest(c.Iss + "\x00" + c.JTI), Data: []byte{}, Expires: exp.Add(time.Minute)})
	if err != nil {
		return nil, nil, err
	}
	if !fresh {
		return nil, nil, errors.New("the assertion was already used")
	}
	return &c, all, nil
}

// grantIDJAG exchanges an identity assertion for an access token.
func (s *Server) grantIDJAG(w http.ResponseWriter, r *http.Request, tr *tokenRequest) {
	ctx := ctxNoCancel(r.Context())
	client, err := s.authClient(ctx, tr)
	if err != nil {
		s.tokenError(w, http.StatusUnauthorized, "invalid_client", err.Error())
		return
	}
	if client.Secret == "" {
		// ext-auth: the assertion's client_id must identify the client
		// the request authenticates; a public client authenticates none.
		s.tokenError(w, http.StatusUnauthorized, "invalid_client", "the identity assertion grant needs a confidential client: authenticate with the client's secret")
		return
	}
	proof, ok := s.checkDPoP(w, r)
	if !ok {
		return
	}
	c, all, err := s.verifyIDJAG(ctx, tr.params["assertion"], client)
	if err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_grant", err.Error())
		return
	}
	resource, err := s.pickResource([]string{c.Resource})
	if err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_target", err.Error())
		return
	}
	if len(tr.resources) > 0 && (len(tr.resources) != 1 || !sameResource(tr.resources[0], resource)) {
		s.tokenError(w, http.StatusBadRequest, "invalid_target", "the resource differs from the assertion's")
		return
	}
	// The IdP decides the scopes: those it asserted, or this server's
	// defaults when it asserted none; the client may only narrow them.
	asserted := strings.Fields(c.Scope)
	if len(asserted) == 0 {
		asserted = s.cfg.DefaultScopes
	}
	scopeParam := strings.Join(asserted, " ")
	if sc := tr.params["scope"]; sc != "" {
		scopeParam = sc
		for _, x := range strings.Fields(sc) {
			if !slices.Contains(asserted, x) {
				msg := "the scope exceeds the assertion's"
				if c.Scope == "" {
					msg = "the assertion names no scope, so only the default scopes can be granted"
				}
				s.tokenError(w, http.StatusBadRequest, "invalid_scope", msg)
				return
			}
		}
	}
	if scopeParam == "" {
		s.tokenError(w, http.StatusBadRequest, "invalid_scope", "the assertion names no scope and this server grants none by default")
		return
	}
	scopes, _, err := s.requestedScopes(scopeParam, client)
	if err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_scope", err.Error())
		return
	}
	idp := s.idjag.idps[c.Iss]
	claims := map[string]any{}
	for _, name := range idp.Claims {
		if v, ok := all[name]; ok && isSimpleClaim(v) {
			claims[name] = qualify(idp.SubjectPrefix, v)
		}
	}
	if !s.recordProof(ctx, w, proof) {
		return
	}
	rec := refreshRecord{ClientID: client.ID, Resource: resource, Scopes: scopes, Subject: idp.SubjectPrefix + c.Sub, Claims: claims}
	s.issue(w, r, "", rec, false, proof, client)
}
