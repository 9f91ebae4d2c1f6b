package authserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/weftmcp/weft/auth"
)

// oauthError is an RFC 6749 §5.2 error response.
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// tokenResponse is an RFC 6749 §5.1 response.
type tokenResponse struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	RefreshToken    string `json:"refresh_token,omitempty"`
	Scope           string `json:"scope,omitempty"`
	IssuedTokenType string `json:"issued_token_type,omitempty"`
}

// refreshRecord is what a refresh token stands for.
type refreshRecord struct {
	ClientID string         `json:"client_id"`
	Resource string         `json:"resource"`
	Scopes   []string       `json:"scopes"`
	Subject  string         `json:"subject"`
	Claims   map[string]any `json:"claims,omitempty"`
	DPoPJKT  string         `json:"dpop_jkt,omitempty"` // a public client's refresh token is bound to its DPoP key
}

// tokenRequest is a parsed, size-checked token endpoint request.
type tokenRequest struct {
	params      map[string]string
	resources   []string
	basicID     string
	basicSecret string
	hasBasic    bool
}

// ParseTokenRequest reads a token or revocation request: an
// application/x-www-form-urlencoded body of at most MaxFormBytes, no
// parameter repeated (but resource), none longer than MaxParamBytes, and
// at most one Authorization header of the Basic scheme.
func parseTokenRequest(w http.ResponseWriter, r *http.Request) (*tokenRequest, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/x-www-form-urlencoded" {
		return nil, errors.New("the body must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		return nil, errors.New("the body is not a valid form or is too large")
	}
	if len(r.URL.RawQuery) > 0 {
		return nil, errors.New("parameters must be in the body, not the URL")
	}
	return parseTokenForm(r.PostForm, r.Header)
}

// parseTokenForm is the transport-independent part of parseTokenRequest
// (a fuzz target).
func parseTokenForm(form url.Values, h http.Header) (*tokenRequest, error) {
	p, err := singleParams(form, "resource")
	if err != nil {
		return nil, err
	}
	tr := &tokenRequest{params: p, resources: form["resource"]}
	if len(h.Values("Authorization")) > 1 {
		return nil, errors.New("more than one Authorization header")
	}
	if a := h.Get("Authorization"); a != "" {
		if len(a) < 6 || !strings.EqualFold(a[:6], "basic ") {
			return nil, errors.New("client authentication must use the Basic scheme")
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(a[6:]))
		if err != nil {
			return nil, errors.New("the Basic credentials are not base64")
		}
		id, secret, ok := strings.Cut(string(raw), ":")
		if !ok {
			return nil, errors.New("the Basic credentials have no colon")
		}
		// RFC 6749 §2.3.1: both are form-urlencoded first.
		if tr.basicID, err = url.QueryUnescape(id); err != nil {
			return nil, errors.New("the Basic client id is not form-urlencoded")
		}
		if tr.basicSecret, err = url.QueryUnescape(secret); err != nil {
			return nil, errors.New("the Basic secret is not form-urlencoded")
		}
		tr.hasBasic = true
		if p["client_id"] != "" && p["client_id"] != tr.basicID {
			return nil, errors.New("client_id differs from the Basic credentials")
		}
		if p["client_secret"] != "" {
			return nil, errors.New("use one client authentication method")
		}
	}
	return tr, nil
}

func (tr *tokenRequest) clientID() string {
	if tr.hasBasic {
		return tr.basicID
	}
	return tr.params["client_id"]
}

// tokenError writes an error response of the token endpoint.
func (s *Server) tokenError(w http.ResponseWriter, status int, code, desc string) {
	s.log.Info("authserver: token request refused", "error", code, "reason", desc)
	if code == "invalid_client" {
		w.Header().Set("WWW-Authenticate", `Basic realm="token"`)
	}
	writeJSON(w, status, oauthError{code, desc})
}

// authClient authenticates the client of a token or revocation request.
func (s *Server) authClient(ctx context.Context, tr *tokenRequest) (*Client, error) {
	id := tr.clientID()
	if id == "" {
		return nil, errors.New("client_id is missing")
	}
	c, err := s.client(ctx, id)
	if err != nil {
		return nil, errors.New("the client is unknown: " + publicReason(err))
	}
	if !c.authenticate(tr.basicID, tr.basicSecret, tr.params["client_secret"], tr.hasBasic) {
		return nil, errors.New("client authentication failed")
	}
	return c, nil
}

// serveToken is the token endpoint.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Pragma", "no-cache")
	tr, err := parseTokenRequest(w, r)
	if err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	ctx := r.Context()
	grantType := tr.params["grant_type"]
	if grantType == grantJWTBearer && s.idjag != nil {
		s.grantIDJAG(w, r, tr)
		return
	}
	client, err := s.authClient(ctx, tr)
	if err != nil {
		s.tokenError(w, http.StatusUnauthorized, "invalid_client", err.Error())
		return
	}
	proof, ok := s.checkDPoP(w, r)
	if !ok {
		return
	}
	switch grantType {
	case "authorization_code":
		s.grantCode(w, r, tr, client, proof)
	case "refresh_token":
		s.grantRefresh(w, r, tr, client, proof)
	case "":
		s.tokenError(w, http.StatusBadRequest, "invalid_request", "grant_type is missing")
	default:
		s.tokenError(w, http.StatusBadRequest, "unsupported_grant_type", "the grant type is not supported")
	}
}

// verifierOK checks a PKCE code_verifier against an S256 challenge.
func verifierOK(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	for i := 0; i < len(verifier); i++ {
		c := verifier[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

func (s *Server) grantCode(w http.ResponseWriter, r *http.Request, tr *tokenRequest, client *Client, proof *auth.DPoPProof) {
	ctx := ctxNoCancel(r.Context())
	code := tr.params["code"]
	if code == "" {
		s.tokenError(w, http.StatusBadRequest, "invalid_request", "code is missing")
		return
	}
	it, err := s.store.Take(ctx, kindCode, digest(code))
	if errors.Is(err, ErrUsed) {
		// RFC 6749 §4.1.2 / OAuth 2.1 §4.1.3: a replayed code revokes
		// what was issued from it.
		s.log.Warn("authserver: authorization code replayed; revoking its grant", "client_id", client.ID)
		if err := s.store.DeleteFamily(ctx, it.Family); err != nil {
			s.log.Error("authserver: revoke grant", "error", err)
		}
		s.tokenError(w, http.StatusBadRequest, "invalid_grant", "the authorization code was already used")
		return
	}
	if err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_grant", "the authorization code is invalid or expired")
		return
	}
	var rec codeRecord
	if err := json.Unmarshal(it.Data, &rec); err != nil {
		s.serverError(w, r, err)
		return
	}
	switch {
	case rec.ClientID != client.ID:
		s.tokenError(w, http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
		return
	case tr.params["redirect_uri"] != "" && tr.params["redirect_uri"] != rec.RedirectURI:
		s.tokenError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request")
		return
	case !verifierOK(tr.params["code_verifier"], rec.Challenge):
		s.tokenError(w, http.StatusBadRequest, "invalid_grant", "the code_verifier does not match the code_challenge")
		return
	}
	if len(tr.resources) > 0 {
		if res, err := s.pickResource(tr.resources); err != nil || res != rec.Resource {
			s.tokenError(w, http.StatusBadRequest, "invalid_target", "the resource differs from the authorization request")
			return
		}
	}
	if rec.DPoPJKT != "" && (proof == nil || proof.JKT != rec.DPoPJKT) {
		s.tokenError(w, http.StatusBadRequest, "invalid_dpop_proof", "the DPoP key is not the one the authorization request named")
		return
	}
	if !s.recordProof(ctx, w, proof) {
		return
	}
	rr := refreshRecord{ClientID: client.ID, Resource: rec.Resource, Scopes: rec.Scopes, Subject: rec.Subject, Claims: rec.Claims}
	s.issue(w, r, it.Family, rr, rec.Offline || s.cfg.IssueRefreshTokens, proof, client)
}

func (s *Server) grantRefresh(w http.ResponseWriter, r *http.Request, tr *tokenRequest, client *Client, proof *auth.DPoPProof) {
	ctx := ctxNoCancel(r.Context())
	token := tr.params["refresh_token"]
	if token == "" {
		s.tokenError(w, http.StatusBadRequest, "invalid_request", "refresh_token is missing")
		return
	}
	// The request is checked against the token's record before the token
	// is used up: a refused refresh (another resource, wider scopes,
	// another DPoP key) leaves it usable by its holder.
	it, err := s.store.Get(ctx, kindRefresh, digest(token))
	if err != nil {
		// Unknown, expired, or used: Take tells a reuse apart.
		s.refreshUsed(ctx, w, token, client)
		return
	}
	var rec refreshRecord
	if err := json.Unmarshal(it.Data, &rec); err != nil {
		s.serverError(w, r, err)
		return
	}
	if rec.ClientID != client.ID {
		// Not the holder's: revoke, the token leaked.
		_ = s.store.DeleteFamily(ctx, it.Family)
		s.tokenError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was issued to another client")
		return
	}
	if rec.DPoPJKT != "" && (proof == nil || proof.JKT != rec.DPoPJKT) {
		s.tokenError(w, http.StatusBadRequest, "invalid_dpop_proof", "the refresh token is bound to another DPoP key")
		return
	}
	if len(tr.resources) > 0 {
		if res, err := s.pickResource(tr.resources); err != nil || res != rec.Resource {
			s.tokenError(w, http.StatusBadRequest, "invalid_target", "the resource differs from the grant's")
			return
		}
	}
	if sc := tr.params["scope"]; sc != "" {
		var narrowed []string
		for _, x := range strings.Fields(sc) {
			if x == "offline_access" {
				continue
			}
			if !slices.Contains(rec.Scopes, x) {
				s.tokenError(w, http.StatusBadRequest, "invalid_scope", "a refresh cannot widen the grant's scopes")
				return
			}
			narrowed = append(narrowed, x)
		}
		rec.Scopes = narrowed
	}
	if !s.recordProof(ctx, w, proof) {
		return
	}
	if _, err := s.store.Take(ctx, kindRefresh, digest(token)); err != nil {
		// Used by a concurrent request meanwhile, or gone.
		s.refreshUsed(ctx, w, token, client)
		return
	}
	grant, err := s.store.Get(ctx, kindGrant, it.Family)
	if err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_grant", "the grant was revoked")
		return
	}
	// The grant lives as long as its newest refresh token.
	grant.Expires = s.now().Add(s.cfg.RefreshTokenTTL)
	if err := s.store.Put(ctx, grant); err != nil {
		s.serverError(w, r, err)
		return
	}
	s.issue(w, r, it.Family, rec, true, proof, client)
}

// recordProof stores the jti of the request's DPoP proof (checked, not
// recorded, by checkDPoP) once its grant is good, so that requests
// refused before store nothing; a proof seen before is refused.
func (s *Server) recordProof(ctx context.Context, w http.ResponseWriter, proof *auth.DPoPProof) bool {
	if proof == nil {
		return true
	}
	if err := s.dpop.Record(ctx, proof); err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_dpop_proof", err.Error())
		return false
	}
	return true
}

// refreshUsed answers a refresh token that is not live: a used one came
// back, so someone holds a copy, and its whole family is revoked (OAuth
// 2.1 §4.3.1); otherwise it is unknown, expired or revoked.
func (s *Server) refreshUsed(ctx context.Context, w http.ResponseWriter, token string, client *Client) {
	it, err := s.store.Take(ctx, kindRefresh, digest(token))
	if errors.Is(err, ErrUsed) {
		s.log.Warn("authserver: refresh token reused; revoking its grant", "client_id", client.ID)
		if err := s.store.DeleteFamily(ctx, it.Family); err != nil {
			s.log.Error("authserver: revoke grant", "error", err)
		}
		s.tokenError(w, http.StatusBadRequest, "invalid_grant", "the refresh token was already used")
		return
	}
	s.tokenError(w, http.StatusBadRequest, "invalid_grant", "the refresh token is invalid, expired or revoked")
}

// issue writes an access token and, when refresh is set, a new refresh
// token of the family.
func (s *Server) issue(w http.ResponseWriter, r *http.Request, family string, rec refreshRecord, refresh bool, proof *auth.DPoPProof, client *Client) {
	ctx := ctxNoCancel(r.Context())
	now := s.now()
	jkt := ""
	if proof != nil {
		jkt = proof.JKT
	}
	claims := map[string]any{}
	for k, v := range rec.Claims {
		claims[k] = v
	}
	claims["iss"] = s.cfg.Issuer
	claims["sub"] = rec.Subject
	claims["aud"] = rec.Resource
	claims["iat"] = now.Unix()
	claims["nbf"] = now.Unix()
	claims["exp"] = now.Add(s.cfg.AccessTokenTTL).Unix()
	claims["jti"] = randomToken()[:22]
	claims["client_id"] = rec.ClientID
	claims["gid"] = family
	if len(rec.Scopes) > 0 {
		claims["scope"] = strings.Join(rec.Scopes, " ")
	}
	if jkt != "" {
		claims["cnf"] = map[string]string{"jkt": jkt}
	}
	at, err := jwt.Signed(s.signer).Claims(claims).Serialize()
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	resp := tokenResponse{AccessToken: at, TokenType: "Bearer", ExpiresIn: int64(s.cfg.AccessTokenTTL.Seconds()), Scope: strings.Join(rec.Scopes, " ")}
	if jkt != "" {
		resp.TokenType = "DPoP"
	}
	if refresh {
		rt := randomToken()
		if client.Secret == "" && jkt != "" {
			rec.DPoPJKT = jkt // RFC 9449 §5: bind a public client's refresh token
		}
		data, _ := json.Marshal(rec)
		if err := s.store.Put(ctx, Item{Kind: kindRefresh, ID: digest(rt), Family: family, Data: data, Expires: now.Add(s.cfg.RefreshTokenTTL)}); err != nil {
			s.serverError(w, r, err)
			return
		}
		resp.RefreshToken = rt
	}
	writeJSON(w, http.StatusOK, resp)
}

// serveRevoke is RFC 7009 revocation: a refresh token revokes its whole
// grant; an access token issued here revokes its grant's refresh tokens
// (the access token itself stays valid until it expires, minutes later).
func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) {
	tr, err := parseTokenRequest(w, r)
	if err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	ctx := ctxNoCancel(r.Context())
	client, err := s.authClient(ctx, tr)
	if err != nil {
		s.tokenError(w, http.StatusUnauthorized, "invalid_client", err.Error())
		return
	}
	token := tr.params["token"]
	if token == "" {
		s.tokenError(w, http.StatusBadRequest, "invalid_request", "token is missing")
		return
	}
	family := ""
	if it, err := s.store.Get(ctx, kindRefresh, digest(token)); err == nil {
		var rec refreshRecord
		if json.Unmarshal(it.Data, &rec) == nil && rec.ClientID == client.ID {
			family = it.Family
		}
	} else if cl, err := s.ownToken(token); err == nil && cl.clientID == client.ID {
		family = cl.gid
	}
	if family != "" {
		if err := s.store.DeleteFamily(ctx, family); err != nil {
			s.serverError(w, r, err)
			return
		}
	}
	// RFC 7009 §2.2: 200 whether or not the token was known.
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

type ownClaims struct{ clientID, gid string }

// ownToken verifies an access token this server signed.
func (s *Server) ownToken(token string) (*ownClaims, error) {
	if len(token) > auth.MaxTokenBytes {
		return nil, errors.New("too long")
	}
	t, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{s.signAlg})
	if err != nil || len(t.Headers) != 1 {
		return nil, errors.New("not a token of this server")
	}
	keys := s.public.Key(t.Headers[0].KeyID)
	if len(keys) == 0 {
		return nil, errors.New("unknown key")
	}
	var c struct {
		Iss      string `json:"iss"`
		ClientID string `json:"client_id"`
		GID      string `json:"gid"`
	}
	if err := t.Claims(keys[0].Key, &c); err != nil || c.Iss != s.cfg.Issuer {
		return nil, errors.New("not a token of this server")
	}
	return &ownClaims{clientID: c.ClientID, gid: c.GID}, nil
}

// checkDPoP validates a DPoP proof on the token endpoint, when one is
// sent. ok is false when it wrote an error.
func (s *Server) checkDPoP(w http.ResponseWriter, r *http.Request) (*auth.DPoPProof, bool) {
	vals := r.Header.Values("DPoP")
	if len(vals) == 0 {
		return nil, true
	}
	if len(vals) > 1 {
		s.tokenError(w, http.StatusBadRequest, "invalid_dpop_proof", "more than one DPoP header")
		return nil, false
	}
	// Checked now, recorded (recordProof) once the grant is good.
	p, err := s.dpop.Check(r.Context(), vals[0], http.MethodPost, s.endpoint("/token"), "")
	if errors.Is(err, auth.ErrDPoPNonce) {
		w.Header().Set("DPoP-Nonce", s.dpop.Nonce())
		s.tokenError(w, http.StatusBadRequest, "use_dpop_nonce", "the DPoP proof needs this server's nonce")
		return nil, false
	}
	if err != nil {
		s.tokenError(w, http.StatusBadRequest, "invalid_dpop_proof", err.Error())
		return nil, false
	}
	return p, true
}

func isBase64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
