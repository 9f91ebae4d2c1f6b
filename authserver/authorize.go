package authserver

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// authRequest is an authorization request between the client's redirect
// and the user's consent.
type authRequest struct {
	ClientID    string   `json:"client_id"`
	RedirectURI string   `json:"redirect_uri"`
	State       string   `json:"state,omitempty"`
	Challenge   string   `json:"code_challenge"`
	Resource    string   `json:"resource"`
	Scopes      []string `json:"scopes"`
	Offline     bool     `json:"offline,omitempty"`
	DPoPJKT     string   `json:"dpop_jkt,omitempty"`
	Browser     string   `json:"browser"` // MAC of the browser-binding cookie
	Nonce       string   `json:"nonce,omitempty"`
	Verifier    string   `json:"verifier,omitempty"` // upstream PKCE
	// Set after the upstream login:
	Subject  string         `json:"subject,omitempty"`
	Claims   map[string]any `json:"claims,omitempty"` // copied into tokens
	Family   string         `json:"family,omitempty"`
	Upstream []byte         `json:"upstream,omitempty"` // sealed upstream tokens
}

// codeRecord is what an authorization code stands for.
type codeRecord struct {
	ClientID    string         `json:"client_id"`
	RedirectURI string         `json:"redirect_uri"`
	Challenge   string         `json:"code_challenge"`
	Resource    string         `json:"resource"`
	Scopes      []string       `json:"scopes"`
	Offline     bool           `json:"offline,omitempty"`
	DPoPJKT     string         `json:"dpop_jkt,omitempty"`
	Subject     string         `json:"subject"`
	Claims      map[string]any `json:"claims,omitempty"`
}

// grantRecord is a family: every code and refresh token of one consent,
// with the upstream tokens, encrypted.
type grantRecord struct {
	ClientID string `json:"client_id"`
	Subject  string `json:"subject"`
	Upstream []byte `json:"upstream,omitempty"`
}

// consentRecord is a remembered consent of one user for one client.
type consentRecord struct {
	Scopes    []string `json:"scopes"`
	Resources []string `json:"resources"`
	Redirects []string `json:"redirects"`
	// Offline says the user approved refresh tokens (offline_access).
	Offline  bool     `json:"offline,omitempty"`
	Families []string `json:"families,omitempty"`
}

// maxFamiliesPerConsent bounds the grants a consent remembers (to revoke
// them with it); the oldest are forgotten, and expire on their own.
const maxFamiliesPerConsent = 64

func (s *Server) browserCookieName() string {
	if s.issuer.Scheme == "https" {
		return "__Host-weft-as"
	}
	return "weft-as"
}

// browser returns the browser-binding value of the request, setting a new
// cookie when there is none.
func (s *Server) browser(w http.ResponseWriter, r *http.Request, create bool) string {
	if c, err := r.Cookie(s.browserCookieName()); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	if !create {
		return ""
	}
	v := randomToken()
	http.SetCookie(w, &http.Cookie{
		Name: s.browserCookieName(), Value: v, Path: "/", HttpOnly: true,
		Secure: s.issuer.Scheme == "https", SameSite: http.SameSiteLaxMode,
	})
	return v
}

// singleParams returns the query or form parameters, refusing repeated ones
// (RFC 6749 §3.1) and overlong ones.
func singleParams(v url.Values, repeatable ...string) (map[string]string, error) {
	out := make(map[string]string, len(v))
	for k, vs := range v {
		if len(vs) > 1 && !slices.Contains(repeatable, k) {
			return nil, fmt.Errorf("parameter %s is repeated", k)
		}
		for _, x := range vs {
			if len(x) > MaxParamBytes {
				return nil, fmt.Errorf("parameter %s is longer than %d bytes", k, MaxParamBytes)
			}
		}
		out[k] = vs[0]
	}
	return out, nil
}

// errorPage answers a request that cannot be redirected back to the client
// (unknown client, wrong redirect URI: redirecting would be an open
// redirect).
func (s *Server) errorPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = pageTemplates.ExecuteTemplate(w, "error", map[string]any{"Message": msg, "Status": status})
}

// redirectError sends the error back to the client's redirect URI, with
// state and iss.
func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, redirect, state, code, desc string) {
	s.log.Info("authserver: authorization refused", "error", code, "reason", desc)
	q := url.Values{"error": {code}, "iss": {s.cfg.Issuer}}
	if desc != "" {
		q.Set("error_description", desc)
	}
	if state != "" {
		q.Set("state", state)
	}
	http.Redirect(w, r, addQuery(redirect, q), http.StatusFound)
}

func addQuery(base string, q url.Values) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	old := u.Query()
	for k, v := range q {
		old[k] = v
	}
	u.RawQuery = old.Encode()
	return u.String()
}

func (s *Server) serverError(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("authserver: internal error", "path", r.URL.Path, "error", err)
	writeJSON(w, http.StatusInternalServerError, oauthError{"server_error", "the authorization server failed"})
}

// serveAuthorize is the authorization endpoint.
func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if s.authorizeRate != nil {
		addr := s.clientAddress(r)
		if ok, wait := s.authorizeRate.Allow(ctx, addr); !ok {
			s.log.Info("authserver: authorization requests of one address over its rate; refused", "address", addr)
			w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
			s.errorPage(w, http.StatusTooManyRequests, "Too many sign-ins were started from your address. Wait a minute, then start again from your application.")
			return
		}
	}
	p, err := singleParams(r.URL.Query(), "resource")
	if err != nil {
		s.errorPage(w, http.StatusBadRequest, "Invalid authorization request: "+err.Error()+".")
		return
	}
	clientID := p["client_id"]
	if clientID == "" {
		s.errorPage(w, http.StatusBadRequest, "The authorization request has no client_id.")
		return
	}
	client, err := s.client(ctx, clientID)
	if err != nil {
		s.log.Info("authserver: unknown or invalid client", "client_id", clientID, "error", err)
		s.errorPage(w, http.StatusBadRequest, "The client could not be verified: "+publicReason(err))
		return
	}
	redirect := p["redirect_uri"]
	if redirect == "" && len(client.RedirectURIs) == 1 {
		redirect = client.RedirectURIs[0]
	}
	if !client.allowedRedirect(redirect) {
		s.log.Info("authserver: redirect URI not registered", "client_id", clientID, "redirect_uri", redirect)
		s.errorPage(w, http.StatusBadRequest, "The redirect URI is not registered for this client.")
		return
	}
	state := p["state"]
	fail := func(code, desc string) { s.redirectError(w, r, redirect, state, code, desc) }
	if p["response_type"] != "code" {
		fail("unsupported_response_type", "only response_type=code is supported")
		return
	}
	if rm := p["response_mode"]; rm != "" && rm != "query" {
		fail("invalid_request", "only response_mode=query is supported")
		return
	}
	challenge := p["code_challenge"]
	if challenge == "" {
		fail("invalid_request", "code_challenge is required (PKCE)")
		return
	}
	if p["code_challenge_method"] != "S256" {
		fail("invalid_request", "code_challenge_method must be S256")
		return
	}
	if len(challenge) != 43 || !isBase64URL(challenge) {
		fail("invalid_request", "code_challenge is not a base64url SHA-256 digest")
		return
	}
	resources := r.URL.Query()["resource"]
	resource, err := s.pickResource(resources)
	if err != nil {
		fail("invalid_target", err.Error())
		return
	}
	scopes, offline, err := s.requestedScopes(p["scope"], client)
	if err != nil {
		fail("invalid_scope", err.Error())
		return
	}
	jkt := p["dpop_jkt"]
	if jkt != "" && (len(jkt) != 43 || !isBase64URL(jkt)) {
		fail("invalid_request", "dpop_jkt is not a JWK SHA-256 thumbprint")
		return
	}
	req := authRequest{
		ClientID: client.ID, RedirectURI: redirect, State: state, Challenge: challenge,
		Resource: resource, Scopes: scopes, Offline: offline, DPoPJKT: jkt,
		Browser: s.mac("browser", s.browser(w, r, true)),
		Nonce:   randomToken(), Verifier: randomToken(),
	}
	if s.requests.Add(1)%purgeEvery == 0 {
		if err := s.store.Trim(ctx, kindPending, s.cfg.MaxPendingAuthorizations); err != nil {
			s.log.Warn("authserver: purge", "error", err)
		}
	}
	id := randomToken()
	data, _ := json.Marshal(req)
	if err := s.store.Put(ctx, Item{Kind: kindPending, ID: digest(id), Data: data, Expires: s.now().Add(s.cfg.LoginTTL)}); err != nil {
		s.log.Error("authserver: store", "error", err)
		fail("server_error", "")
		return
	}
	to, err := s.upstream.authURL(ctx, id, req.Nonce, req.Verifier)
	if err != nil {
		s.log.Error("authserver: upstream", "error", err)
		fail("temporarily_unavailable", "the identity provider is unavailable")
		return
	}
	http.Redirect(w, r, to, http.StatusFound)
}

// publicReason is what a user may see of a client resolution failure.
func publicReason(err error) string {
	switch {
	case errors.Is(err, errUnknownClient):
		return "the client is unknown."
	case errors.Is(err, ErrCIMDAddress):
		return "its metadata document is at an address this server does not fetch from."
	case errors.Is(err, ErrCIMDDocument):
		return "its metadata document is invalid (" + strings.TrimPrefix(err.Error(), ErrCIMDDocument.Error()+": ") + ")."
	case errors.Is(err, ErrCIMDFetch):
		return "its metadata document could not be fetched."
	}
	return "internal error."
}

// pickResource returns the one resource a token will be bound to.
func (s *Server) pickResource(rs []string) (string, error) {
	switch len(rs) {
	case 0:
		if len(s.cfg.Resources) == 1 {
			return s.cfg.Resources[0], nil
		}
		return "", errors.New("resource is required: this server issues tokens for several resources")
	case 1:
		if slices.Contains(s.cfg.Resources, rs[0]) {
			return rs[0], nil
		}
		// Accept a trailing-slash or case variant of scheme and host.
		for _, known := range s.cfg.Resources {
			if sameResource(known, rs[0]) {
				return known, nil
			}
		}
		return "", errors.New("the resource is not served by this authorization server")
	}
	return "", errors.New("a token is bound to one resource: give one resource parameter")
}

func sameResource(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimSuffix(ua.EscapedPath(), "/") == strings.TrimSuffix(ub.EscapedPath(), "/") && ua.RawQuery == ub.RawQuery
}

// requestedScopes parses the scope parameter: known scopes only (plus
// offline_access, which asks for a refresh token), the defaults when
// empty.
func (s *Server) requestedScopes(param string, c *Client) (scopes []string, offline bool, err error) {
	for _, sc := range strings.Split(param, " ") {
		if sc == "" {
			continue
		}
		if sc == "offline_access" {
			offline = true
			continue
		}
		if !slices.Contains(s.cfg.Scopes, sc) || (len(c.Scopes) > 0 && !slices.Contains(c.Scopes, sc)) {
			return nil, false, fmt.Errorf("scope %q is not available to this client", sc)
		}
		if !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
		if len(scopes) > MaxScopes {
			return nil, false, fmt.Errorf("more than %d scopes", MaxScopes)
		}
	}
	if len(scopes) == 0 {
		scopes = slices.Clone(s.cfg.DefaultScopes)
	}
	return scopes, offline, nil
}

// serveCallback is where the upstream provider sends the browser back.
func (s *Server) serveCallback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	id := q.Get("state")
	if id == "" || len(id) > MaxParamBytes {
		s.errorPage(w, http.StatusBadRequest, "The sign-in answer has no state.")
		return
	}
	it, err := s.store.Take(ctx, kindPending, digest(id))
	if err != nil {
		s.errorPage(w, http.StatusBadRequest, "This sign-in is unknown, expired or already finished. Start again from your application.")
		return
	}
	var req authRequest
	if err := json.Unmarshal(it.Data, &req); err != nil {
		s.errorPage(w, http.StatusInternalServerError, "Internal error.")
		return
	}
	if subtle.ConstantTimeCompare([]byte(req.Browser), []byte(s.mac("browser", s.browser(w, r, false)))) != 1 {
		s.log.Warn("authserver: sign-in finished in another browser than it started", "client_id", req.ClientID)
		s.errorPage(w, http.StatusBadRequest, "This sign-in was started in another browser.")
		return
	}
	if e := q.Get("error"); e != "" {
		code := "access_denied"
		if e != "access_denied" && e != "login_required" && e != "consent_required" {
			code = "temporarily_unavailable"
		}
		s.redirectError(w, r, req.RedirectURI, req.State, code, "the identity provider refused the sign-in")
		return
	}
	tokens, claims, err := s.upstream.exchange(ctx, q.Get("code"), req.Verifier, req.Nonce)
	if err != nil {
		s.log.Warn("authserver: upstream sign-in failed", "error", err)
		s.redirectError(w, r, req.RedirectURI, req.State, "access_denied", "the sign-in with the identity provider failed")
		return
	}
	subject, _ := claims[s.cfg.Identity.SubjectClaim].(string)
	if subject == "" {
		s.log.Warn("authserver: upstream user has no subject claim", "claim", s.cfg.Identity.SubjectClaim)
		s.redirectError(w, r, req.RedirectURI, req.State, "access_denied", "the identity provider gave no usable user identifier")
		return
	}
	if s.idjag.foreign(subject) {
		// It would spell the identity of a trusted IdP's user.
		s.log.Warn("authserver: upstream user's subject begins with a trusted IdP's subject prefix; refused", "claim", s.cfg.Identity.SubjectClaim)
		s.redirectError(w, r, req.RedirectURI, req.State, "access_denied", "the identity provider gave a user identifier this server reserves for another provider")
		return
	}
	if f := s.cfg.Identity.AllowedScopes; f != nil {
		allowed := f(claims, slices.Clone(req.Scopes))
		req.Scopes = slices.DeleteFunc(req.Scopes, func(sc string) bool { return !slices.Contains(allowed, sc) })
	}
	req.Subject = subject
	req.Claims = map[string]any{}
	for _, name := range s.cfg.Identity.Claims {
		if v, ok := claims[name]; ok && isSimpleClaim(v) {
			req.Claims[name] = v
		}
	}
	req.Family = randomToken()
	raw, _ := json.Marshal(tokens)
	req.Upstream = s.seal(raw, "upstream|"+req.Family)
	req.Verifier, req.Nonce = "", ""

	cons, ok := s.rememberedConsent(ctx, subject, req.ClientID)
	if ok && cons.covers(req) {
		s.finish(w, r, req)
		return
	}
	cid := randomToken()
	data, _ := json.Marshal(req)
	if err := s.store.Put(ctx, Item{Kind: kindConsent, ID: digest(cid), Family: req.Family, Data: data, Expires: s.now().Add(s.cfg.LoginTTL)}); err != nil {
		s.log.Error("authserver: store", "error", err)
		s.errorPage(w, http.StatusInternalServerError, "Internal error.")
		return
	}
	client, err := s.client(ctx, req.ClientID)
	if err != nil {
		s.errorPage(w, http.StatusBadRequest, "The client could not be verified: "+publicReason(err))
		return
	}
	s.consentPage(w, r, cid, client, req, claims)
}

func isSimpleClaim(v any) bool {
	switch x := v.(type) {
	case string, float64, bool, json.Number:
		return true
	case []any:
		for _, e := range x {
			if !isSimpleClaim(e) {
				return false
			}
		}
		return len(x) <= 64
	}
	return false
}

func (c consentRecord) covers(req authRequest) bool {
	if req.Offline && !c.Offline {
		return false
	}
	for _, sc := range req.Scopes {
		if !slices.Contains(c.Scopes, sc) {
			return false
		}
	}
	return slices.Contains(c.Resources, req.Resource) && slices.Contains(c.Redirects, req.RedirectURI)
}

func consentID(subject, clientID string) string {
	return digest("consent\x00" + subject + "\x00" + clientID)
}

func (s *Server) rememberedConsent(ctx context.Context, subject, clientID string) (consentRecord, bool) {
	it, err := s.store.Get(ctx, kindRemember, consentID(subject, clientID))
	if err != nil {
		return consentRecord{}, false
	}
	var c consentRecord
	if json.Unmarshal(it.Data, &c) != nil {
		return consentRecord{}, false
	}
	return c, true
}

// RevokeConsent forgets a user's consent for a client and revokes the
// refresh tokens issued under it: the next authorization asks again.
func (s *Server) RevokeConsent(ctx context.Context, subject, clientID string) error {
	c, ok := s.rememberedConsent(ctx, subject, clientID)
	if ok {
		for _, f := range c.Families {
			if err := s.store.DeleteFamily(ctx, f); err != nil {
				return err
			}
		}
	}
	return s.store.Delete(ctx, kindRemember, consentID(subject, clientID))
}

//go:embed pages.html
var pagesHTML string

var pageTemplates = template.Must(template.New("pages").Parse(pagesHTML))

type scopeView struct{ Name string }

// consentPage renders the consent form.
func (s *Server) consentPage(w http.ResponseWriter, r *http.Request, cid string, c *Client, req authRequest, claims map[string]any) {
	ru, _ := url.Parse(req.RedirectURI)
	host := ""
	local := false
	if ru != nil {
		host = ru.Host
		if host == "" {
			host = ru.Scheme + ":"
		}
		local = ru.Scheme == "http" && isLoopbackHost(ru.Hostname())
	}
	user := req.Subject
	if e, ok := claims["email"].(string); ok && e != "" {
		user = e
	}
	name := c.Name
	if name == "" {
		name = c.ID
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = pageTemplates.ExecuteTemplate(w, "consent", map[string]any{
		"Action":       s.endpoint("/consent"),
		"Request":      cid,
		"CSRF":         s.mac("csrf", cid, s.browser(w, r, false)),
		"ClientName":   name,
		"ClientID":     c.ID,
		"ClientURI":    c.URI,
		"Registration": c.kind,
		"Redirect":     req.RedirectURI,
		"RedirectHost": host,
		"Localhost":    local,
		"Scopes":       req.Scopes,
		"Offline":      req.Offline,
		"Resource":     req.Resource,
		"User":         user,
	})
}

// serveConsent takes the consent form.
func (s *Server) serveConsent(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !sameOrigin(o, s.issuer) {
		s.errorPage(w, http.StatusForbidden, "The consent form was sent from another site.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, http.StatusBadRequest, "The consent form is invalid.")
		return
	}
	cid := r.PostForm.Get("request")
	browser := s.browser(w, r, false)
	if cid == "" || browser == "" || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.mac("csrf", cid, browser))) != 1 {
		s.log.Warn("authserver: consent form with a bad CSRF token")
		s.errorPage(w, http.StatusForbidden, "The consent form expired or was not sent by this browser. Start again from your application.")
		return
	}
	it, err := s.store.Take(ctx, kindConsent, digest(cid))
	if err != nil {
		s.errorPage(w, http.StatusBadRequest, "This consent request is unknown, expired or already answered.")
		return
	}
	var req authRequest
	if err := json.Unmarshal(it.Data, &req); err != nil {
		s.errorPage(w, http.StatusInternalServerError, "Internal error.")
		return
	}
	if r.PostForm.Get("action") != "approve" {
		s.redirectError(w, r, req.RedirectURI, req.State, "access_denied", "the user denied access")
		return
	}
	if err := s.remember(ctx, req); err != nil {
		s.log.Error("authserver: remember consent", "error", err)
	}
	s.finish(w, r, req)
}

func sameOrigin(origin string, u *url.URL) bool {
	o, err := url.Parse(origin)
	return err == nil && strings.EqualFold(o.Scheme, u.Scheme) && strings.EqualFold(o.Host, u.Host)
}

// remember stores (or widens) the user's consent for the client.
func (s *Server) remember(ctx context.Context, req authRequest) error {
	c, _ := s.rememberedConsent(ctx, req.Subject, req.ClientID)
	for _, sc := range req.Scopes {
		if !slices.Contains(c.Scopes, sc) {
			c.Scopes = append(c.Scopes, sc)
		}
	}
	if !slices.Contains(c.Resources, req.Resource) {
		c.Resources = append(c.Resources, req.Resource)
	}
	if !slices.Contains(c.Redirects, req.RedirectURI) {
		c.Redirects = append(c.Redirects, req.RedirectURI)
	}
	c.Offline = c.Offline || req.Offline
	data, _ := json.Marshal(c)
	return s.store.Put(ctx, Item{Kind: kindRemember, ID: consentID(req.Subject, req.ClientID), Data: data, Expires: s.now().Add(s.cfg.ConsentTTL)})
}

// finish issues the authorization code and sends the browser back to the
// client with code, state and iss (RFC 9207).
func (s *Server) finish(w http.ResponseWriter, r *http.Request, req authRequest) {
	ctx := ctxNoCancel(r.Context())
	code := randomToken()
	rec := codeRecord{
		ClientID: req.ClientID, RedirectURI: req.RedirectURI, Challenge: req.Challenge, Resource: req.Resource,
		Scopes: req.Scopes, Offline: req.Offline, DPoPJKT: req.DPoPJKT, Subject: req.Subject, Claims: req.Claims,
	}
	grant, _ := json.Marshal(grantRecord{ClientID: req.ClientID, Subject: req.Subject, Upstream: req.Upstream})
	data, _ := json.Marshal(rec)
	now := s.now()
	err := s.store.Put(ctx, Item{Kind: kindGrant, ID: req.Family, Family: req.Family, Data: grant, Expires: now.Add(s.cfg.RefreshTokenTTL)})
	if err == nil {
		err = s.store.Put(ctx, Item{Kind: kindCode, ID: digest(code), Family: req.Family, Data: data, Expires: now.Add(s.cfg.CodeTTL)})
	}
	if err == nil {
		err = s.addFamily(ctx, req.Subject, req.ClientID, req.Family)
	}
	if err != nil {
		s.log.Error("authserver: store", "error", err)
		s.redirectError(w, r, req.RedirectURI, req.State, "server_error", "")
		return
	}
	q := url.Values{"code": {code}, "iss": {s.cfg.Issuer}}
	if req.State != "" {
		q.Set("state", req.State)
	}
	http.Redirect(w, r, addQuery(req.RedirectURI, q), http.StatusFound)
}

// addFamily records a grant under the user's consent, so that revoking the
// consent revokes it.
func (s *Server) addFamily(ctx context.Context, subject, clientID, family string) error {
	it, err := s.store.Get(ctx, kindRemember, consentID(subject, clientID))
	if err != nil {
		return nil // no remembered consent (ID-JAG grants)
	}
	var c consentRecord
	if err := json.Unmarshal(it.Data, &c); err != nil {
		return err
	}
	c.Families = append(c.Families, family)
	if len(c.Families) > maxFamiliesPerConsent {
		c.Families = c.Families[len(c.Families)-maxFamiliesPerConsent:]
	}
	data, _ := json.Marshal(c)
	it.Data = data
	return s.store.Put(ctx, it)
}

// UpstreamTokens returns the upstream provider's tokens of the grant an
// access token issued by this server belongs to (its "gid" claim), for
// calling the provider's APIs on the user's behalf. They are never given
// to MCP clients.
func (s *Server) UpstreamTokens(ctx context.Context, grantID string) (accessToken, refreshToken string, err error) {
	it, err := s.store.Get(ctx, kindGrant, grantID)
	if err != nil {
		return "", "", err
	}
	var g grantRecord
	if err := json.Unmarshal(it.Data, &g); err != nil {
		return "", "", err
	}
	raw, err := s.open(g.Upstream, "upstream|"+grantID)
	if err != nil {
		return "", "", fmt.Errorf("authserver: upstream tokens: %w", err)
	}
	var t upstreamTokens
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", "", err
	}
	return t.AccessToken, t.RefreshToken, nil
}
