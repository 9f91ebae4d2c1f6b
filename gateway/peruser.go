package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client/oauth"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway/usertoken"
	"github.com/weftmcp/weft/seal"
)

// Per-user upstream authorization: an upstream whose calls carry each
// caller's own OAuth token (oauth.perUser). A caller without a token there
// is asked, with a URL input request, to open the gateway's start page,
// which sends the browser to the upstream's authorization server (the
// authorization code flow with PKCE and the resource indicator); the
// gateway's callback redeems the code and keeps the tokens sealed per
// caller (gateway/usertoken), and the client's retry goes through with
// them. Each caller has connections of their own to the upstream; the
// caller's own token is never sent to it (with tokenExchange it is
// exchanged at the upstream's authorization server, RFC 8693, for one
// issued for the upstream).

// PerUserOAuth configures per-user authorization at an upstream: the
// gateway's OAuth client at the upstream's authorization server, which
// users authorize to call the upstream on their behalf. Its redirect URI
// is UserAuthorization.BaseURL + "/callback".
type PerUserOAuth struct {
	// ClientID and ClientSecret are the gateway's pre-registered client;
	// the secret may refer to the environment as ${VAR} (none: a public
	// client).
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// ClientMetadataURL is the gateway's client ID metadata document
	// (CIMD) URL, used as its client_id where the authorization server
	// supports it, instead of ClientID.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// Scopes are requested besides those the upstream asks for;
	// offline_access is added where the server offers it (refresh).
	Scopes []string `json:"scopes,omitempty"`
	// AuthorizationParams are added to the authorization request, for
	// servers that need more than the resource indicator (for example
	// "audience" at Auth0 or Ory Hydra).
	AuthorizationParams map[string]string `json:"authorizationParams,omitempty"`
	// TokenExchange obtains the caller's token for the upstream by RFC
	// 8693 token exchange of the caller's own bearer token, without asking
	// the user, where the upstream's authorization server advertises the
	// grant (else the user is asked as without it).
	TokenExchange bool `json:"tokenExchange,omitempty"`
}

func (p *PerUserOAuth) validate(u *UpstreamConfig) error {
	if p == nil {
		return nil
	}
	switch {
	case p.ClientID == "" && p.ClientMetadataURL == "":
		return errors.New("set clientId (pre-registered at the upstream's authorization server) or clientMetadataUrl")
	case p.ClientID != "" && p.ClientMetadataURL != "":
		return errors.New("set clientId or clientMetadataUrl, not both")
	case len(u.Inputs) > 0 && !slices.Contains(u.Inputs, "url") && !p.TokenExchange:
		return errors.New(`the upstream's inputs must include "url": users are asked to authorize with a URL request`)
	}
	return nil
}

// UserAuthorization serves per-user upstream authorization (the upstreams
// with oauth.perUser). Mount [Gateway.AuthorizationHandler] at BaseURL.
type UserAuthorization struct {
	// BaseURL is the public URL under which the application serves
	// AuthorizationHandler, e.g. "https://gateway.example.com/oauth":
	// users open BaseURL + "/start/…", authorization servers redirect to
	// BaseURL + "/callback" (register it with the gateway's client).
	// https, or http on a loopback host. Required.
	BaseURL string
	// Protector seals users' tokens and the flows' state. A fleet shares
	// its keyring. Required.
	Protector seal.Protector
	// Store keeps users' tokens (default: usertoken.NewMemory, one
	// process). A fleet shares one: usertoken.OpenPostgres.
	Store usertoken.Store
	// MaxConnections bounds the per-user connections kept to one upstream
	// (default DefaultMaxUserConnections); the least recently used idle
	// one is closed beyond it.
	MaxConnections int
	// LinkLifetime is how long a start link and a started flow stay
	// usable (default DefaultAuthorizationLinkLifetime). A link is used
	// once.
	LinkLifetime time.Duration

	// The start page binds an upstream account only to the caller its
	// link was made for, and only when the person in the browser is that
	// caller: a link forwarded to someone else binds nothing. One of
	// SignIn and BrowserUser says who that person is; one is required.

	// SignIn signs the person in at the gateway's own authorization
	// server and identifies them with the server's Admission.
	SignIn *OAuthSignIn
	// BrowserUser identifies the person from the application's own
	// session instead (its cookie, its single sign-on), as the same
	// weft.Identity the server's Admission gives the person's MCP calls.
	// When it cannot tell yet, it writes the response itself (a redirect
	// to the application's sign-in page that comes back to r's URL) and
	// returns false; an anonymous identity is refused.
	BrowserUser func(w http.ResponseWriter, r *http.Request) (weft.Identity, bool)
}

// Defaults of UserAuthorization.
const (
	DefaultMaxUserConnections        = 1024
	DefaultAuthorizationLinkLifetime = 10 * time.Minute
	MaxAuthorizationLinkLifetime     = time.Hour
	userTokenRefreshSkew             = 30 * time.Second
	authorizeKey                     = "gateway-authorize"
	startBinding                     = "weft-gateway-authorize-start"
	flowBinding                      = "weft-gateway-authorize-flow"
	flowCookiePrefix                 = "weft_gw_authz_"
)

// CodeUserAuthorization is the error code of a call of a per-user upstream
// that cannot be authorized: an anonymous caller, a declined
// authorization.
const CodeUserAuthorization = -31052

// errNeedsUser reports a request of a per-user connection with no usable
// token: the user must authorize.
var errNeedsUser = errors.New("gateway: the caller's authorization at the upstream is missing or was refused")

// userAuthz is the per-user authorization of one upstream.
type userAuthz struct {
	u      *upstream
	ua     *UserAuthorization
	vault  *usertoken.Vault
	authz  *oauth.Authorizer
	policy elicit.URLPolicy

	mu    sync.Mutex
	conns map[string]*userConn // identity -> connection
}

// userConn is one caller's connection to the upstream.
type userConn struct {
	mu       sync.Mutex // held while dialing
	c        *conn
	inflight int       // guarded by userAuthz.mu
	used     time.Time // guarded by userAuthz.mu
}

func (ua *UserAuthorization) withDefaults() (*UserAuthorization, error) {
	if ua == nil {
		return nil, errors.New("an upstream with oauth.perUser needs Options.UserAuthorization (BaseURL, Protector)")
	}
	out := *ua
	b, err := url.Parse(out.BaseURL)
	if err != nil || b.Host == "" || b.RawQuery != "" || b.Fragment != "" || b.User != nil ||
		!(b.Scheme == "https" || b.Scheme == "http" && isLoopback(b.Hostname())) {
		return nil, fmt.Errorf("UserAuthorization.BaseURL %q: want an https URL (http on a loopback host) without query", out.BaseURL)
	}
	out.BaseURL = strings.TrimSuffix(out.BaseURL, "/")
	if out.Protector == nil {
		return nil, errors.New("UserAuthorization.Protector is required: it seals users' tokens (a fleet shares the keyring)")
	}
	if out.Store == nil {
		out.Store = usertoken.NewMemory(0)
	}
	if out.MaxConnections <= 0 {
		out.MaxConnections = DefaultMaxUserConnections
	}
	if out.LinkLifetime <= 0 {
		out.LinkLifetime = DefaultAuthorizationLinkLifetime
	}
	if out.LinkLifetime > MaxAuthorizationLinkLifetime {
		return nil, fmt.Errorf("UserAuthorization.LinkLifetime %s exceeds %s", out.LinkLifetime, MaxAuthorizationLinkLifetime)
	}
	switch {
	case out.SignIn == nil && out.BrowserUser == nil:
		return nil, errors.New("UserAuthorization needs SignIn or BrowserUser: the start page must know that the person in the browser is the caller the link was made for")
	case out.SignIn != nil && out.BrowserUser != nil:
		return nil, errors.New("UserAuthorization: set SignIn or BrowserUser, not both")
	case out.SignIn != nil:
		if out.SignIn, err = out.SignIn.withDefaults(); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newUserAuthz sets up the per-user authorization of u (nil when u has
// none).
func newUserAuthz(u *upstream, ua *UserAuthorization, vault *usertoken.Vault) *userAuthz {
	p := u.cfg.OAuth.PerUser
	params := url.Values{}
	for k, v := range p.AuthorizationParams {
		params.Set(k, expand(v))
	}
	cfg := oauth.Config{
		HTTPClient: u.g.hc, ClientID: p.ClientID, ClientSecret: expand(p.ClientSecret), ClientMetadataURL: p.ClientMetadataURL,
		RedirectURL: ua.BaseURL + "/callback", Scopes: p.Scopes, OfflineAccess: true, AuthorizationParams: params,
	}
	if p.ClientID != "" && p.ClientSecret == "" {
		cfg.AuthMethod = oauth.AuthNone
	}
	b, _ := url.Parse(ua.BaseURL)
	policy := elicit.URLPolicy{AllowedOrigins: []string{b.Scheme + "://" + b.Host}, Development: b.Scheme == "http"}
	return &userAuthz{u: u, ua: ua, vault: vault, authz: oauth.NewAuthorizer(u.cfg.URL, cfg), policy: policy, conns: map[string]*userConn{}}
}

// identityOf names the caller of req for their tokens: a digest of the
// authorization partition and principal; false for an anonymous caller.
func identityOf(req *weft.Request) (string, bool) { return digestOf(req.Identity) }

// digestOf is the digest naming id's tokens; false for the anonymous
// identity.
func digestOf(id weft.Identity) (string, bool) {
	if id.Anonymous() {
		return "", false
	}
	h := sha256.Sum256([]byte(id.Partition + "\x00" + id.Principal))
	return hex.EncodeToString(h[:]), true
}

// callerTokenKey carries the caller's own bearer token to a token
// exchange.
type callerTokenKey struct{}

// invoke forwards one operation with the caller's own authorization.
func (a *userAuthz) invoke(ctx context.Context, req *weft.Request, method string, params exactjson.Value) (exactjson.Value, error) {
	u := a.u
	if st, ok := parkedState(req); ok && st.Has("p") {
		// A parked call resuming: it runs on the connection it started on.
		return u.invokeOn(ctx, req, method, params, nil)
	}
	id, ok := identityOf(req)
	if !ok {
		return exactjson.Value{}, weft.NewError(CodeUserAuthorization, fmt.Sprintf(
			"Upstream %q acts with each caller's own authorization, and this call is anonymous: call the gateway with credentials that identify you", u.cfg.Name)).
			WithData(exactjson.Object(exactjson.Field("upstream", exactjson.String(u.cfg.Name))))
	}
	if action, ok := authorizeAnswer(req); ok && action != "accept" {
		return exactjson.Value{}, weft.NewError(CodeUserAuthorization, fmt.Sprintf(
			"Upstream %q needs your authorization, which was not given (%s); call again to be asked again", u.cfg.Name, action)).
			WithData(exactjson.Object(exactjson.Field("upstream", exactjson.String(u.cfg.Name))))
	}
	if a, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok {
		ctx = context.WithValue(ctx, callerTokenKey{}, strings.TrimSpace(a))
	}
	key := usertoken.Key{Upstream: u.cfg.Name, Identity: id}
	tok, err := a.token(ctx, key)
	if err != nil {
		return exactjson.Value{}, u.g.unavailable(u, err)
	}
	if tok == nil {
		return a.ask(ctx, key)
	}
	c, release, err := a.conn(ctx, key)
	if err != nil {
		if errors.Is(err, errNeedsUser) || a.lost(ctx, key) {
			return a.ask(ctx, key)
		}
		return exactjson.Value{}, u.g.unavailable(u, err)
	}
	defer release()
	res, err := u.invokeOn(ctx, req, method, params, c)
	if err != nil && a.lost(ctx, key) {
		// The upstream refused the token (it was dropped): ask again.
		return a.ask(ctx, key)
	}
	return res, err
}

// ownInputKey is the key of the gateway's own input request on the
// upstream's calls ("" for none): its answer is not forwarded.
func (u *upstream) ownInputKey() string {
	if u.users != nil {
		return authorizeKey
	}
	return ""
}

// lost reports that the caller has no token (any more).
func (a *userAuthz) lost(ctx context.Context, key usertoken.Key) bool {
	t, err := a.vault.Token(ctx, key)
	return err == nil && t == nil
}

// expiresSoon reports a token to refresh before use: within the refresh
// skew of its expiry (half its lifetime for short-lived ones).
func expiresSoon(t *oauth.Token, now time.Time) bool {
	if t.Expiry.IsZero() {
		return false
	}
	skew := userTokenRefreshSkew
	if !t.Obtained.IsZero() {
		skew = min(skew, t.Expiry.Sub(t.Obtained)/2)
	}
	return !now.Add(skew).Before(t.Expiry)
}

// token returns the caller's usable token: the stored one (refreshed when
// it expires soon), else one obtained by token exchange where configured;
// nil when the user must authorize.
func (a *userAuthz) token(ctx context.Context, key usertoken.Key) (*oauth.Token, error) {
	t, err := a.vault.Token(ctx, key)
	if err != nil {
		return nil, err
	}
	if t != nil && expiresSoon(t, time.Now()) {
		if t.RefreshToken != "" {
			nt, err := a.vault.Refresh(ctx, key, t, a.authz.RefreshToken)
			if err != nil {
				a.u.g.log.Info("gateway: a user's upstream token could not be refreshed; the user is asked again", "upstream", a.u.cfg.Name, "err", err)
				if a.lost(ctx, key) {
					return a.exchange(ctx, key)
				}
				return nil, err
			}
			t = nt
		} else if !time.Now().Before(t.Expiry) {
			if err := a.vault.Drop(ctx, key, t.AccessToken); err != nil {
				return nil, err
			}
			t = nil
		}
	}
	if t == nil {
		return a.exchange(ctx, key)
	}
	if !strings.EqualFold(t.TokenType, "Bearer") && t.TokenType != "" {
		return nil, fmt.Errorf("gateway: upstream %q: a %s token; per-user authorization sends bearer tokens only", a.u.cfg.Name, t.TokenType)
	}
	return t, nil
}

// exchange obtains the caller's token by token exchange when configured
// and offered (nil, nil otherwise: the user is asked).
func (a *userAuthz) exchange(ctx context.Context, key usertoken.Key) (*oauth.Token, error) {
	if !a.u.cfg.OAuth.PerUser.TokenExchange {
		return nil, nil
	}
	subject, _ := ctx.Value(callerTokenKey{}).(string)
	if subject == "" {
		return nil, nil
	}
	ok, err := a.authz.SupportsTokenExchange(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("gateway: upstream %q: token exchange: %w", a.u.cfg.Name, err)
	}
	if !ok {
		a.u.g.log.Debug("gateway: the upstream's authorization server does not offer token exchange; the user is asked", "upstream", a.u.cfg.Name)
		return nil, nil
	}
	t, err := a.authz.Exchange(ctx, nil, subject, oauth.TokenTypeAccessToken)
	if err != nil {
		var oe *oauth.OAuthError
		if errors.As(err, &oe) && oe.StatusCode >= 400 && oe.StatusCode < 500 {
			a.u.g.log.Info("gateway: token exchange refused; the user is asked", "upstream", a.u.cfg.Name, "err", err)
			return nil, nil
		}
		return nil, fmt.Errorf("gateway: upstream %q: token exchange: %w", a.u.cfg.Name, err)
	}
	if err := a.vault.Save(ctx, key, t); err != nil {
		return nil, err
	}
	return t, nil
}

// startTicket is what a start link carries, sealed.
type startTicket struct {
	Upstream string `json:"u"`
	Identity string `json:"i"`
	Expires  int64  `json:"e"`
	// ID names the link, which is used once.
	ID string `json:"n,omitempty"`
}

// flowState is what the flow's cookie carries, sealed.
type flowState struct {
	startTicket
	Pending *oauth.Pending `json:"p"`
}

// ask answers the call with the URL request sending the user to the start
// page.
func (a *userAuthz) ask(ctx context.Context, key usertoken.Key) (exactjson.Value, error) {
	u := a.u
	linkID, err := newID()
	if err != nil {
		return exactjson.Value{}, u.g.unavailable(u, err)
	}
	tk, err := json.Marshal(startTicket{Upstream: key.Upstream, Identity: key.Identity, Expires: time.Now().Add(a.ua.LinkLifetime).Unix(), ID: linkID})
	if err != nil {
		return exactjson.Value{}, u.g.unavailable(u, err)
	}
	sealed, err := a.ua.Protector.Seal(ctx, []byte(startBinding), tk)
	if err != nil {
		return exactjson.Value{}, u.g.unavailable(u, fmt.Errorf("sealing the start link: %w", err))
	}
	link, err := elicit.HandleURL(a.ua.BaseURL+"/start", base64.RawURLEncoding.EncodeToString([]byte(sealed)))
	if err != nil {
		return exactjson.Value{}, u.g.unavailable(u, err)
	}
	ir, err := authorizeInput(fmt.Sprintf("Authorize the gateway to use %q on your behalf, then retry.", u.cfg.Name), link, a.policy)
	if err != nil {
		return exactjson.Value{}, u.g.unavailable(u, fmt.Errorf("the authorization link: %w (check UserAuthorization.BaseURL)", err))
	}
	return exactjson.Value{}, ir
}

// conn returns the caller's connection to the upstream, dialing it when
// needed; release ends the call's use of it.
func (a *userAuthz) conn(ctx context.Context, key usertoken.Key) (*conn, func(), error) {
	a.mu.Lock()
	uc := a.conns[key.Identity]
	if uc == nil {
		a.evictLocked()
		uc = &userConn{}
		a.conns[key.Identity] = uc
	}
	uc.inflight++
	uc.used = time.Now()
	a.mu.Unlock()
	release := sync.OnceFunc(func() {
		a.mu.Lock()
		uc.inflight--
		a.mu.Unlock()
	})
	uc.mu.Lock()
	defer uc.mu.Unlock()
	if uc.c != nil {
		select {
		case <-uc.c.done():
			_ = uc.c.close()
			uc.c = nil
		default:
			return uc.c, release, nil
		}
	}
	u := a.u
	hc := &http.Client{Transport: &userTransport{a: a, key: key, base: baseTransport(u.g.hc)}}
	c, err := dial(context.WithoutCancel(ctx), &u.cfg, hc, u.headers, u.unrouted, u.outsideCall, u.g.log)
	if err != nil {
		release()
		return nil, nil, err
	}
	uc.c = c
	return c, release, nil
}

// evictLocked closes the least recently used idle connections beyond
// MaxConnections (a.mu held).
func (a *userAuthz) evictLocked() {
	for len(a.conns) >= a.ua.MaxConnections {
		var oldest string
		var at time.Time
		for id, uc := range a.conns {
			if uc.inflight == 0 && (oldest == "" || uc.used.Before(at)) {
				oldest, at = id, uc.used
			}
		}
		if oldest == "" {
			return // all busy: over the bound until calls end
		}
		uc := a.conns[oldest]
		delete(a.conns, oldest)
		go func() {
			uc.mu.Lock()
			defer uc.mu.Unlock()
			if uc.c != nil {
				_ = uc.c.close()
			}
		}()
	}
}

// connections returns the number of per-user connections (for the tests).
func (a *userAuthz) connections() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.conns)
}

func (a *userAuthz) close() []error {
	a.mu.Lock()
	conns := a.conns
	a.conns = map[string]*userConn{}
	a.mu.Unlock()
	var errs []error
	for _, uc := range conns {
		uc.mu.Lock()
		if uc.c != nil {
			errs = append(errs, uc.c.close())
			uc.c = nil
		}
		uc.mu.Unlock()
	}
	return errs
}

func baseTransport(hc *http.Client) http.RoundTripper {
	if hc.Transport != nil {
		return hc.Transport
	}
	return http.DefaultTransport
}

// userTransport authorizes one caller's requests to the upstream with
// their token; a 401 drops the token (the user is asked again).
type userTransport struct {
	a    *userAuthz
	key  usertoken.Key
	base http.RoundTripper
}

func (t *userTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	tok, err := t.a.token(ctx, t.key)
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	if tok == nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, errNeedsUser
	}
	r2 := r.Clone(ctx)
	r2.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := t.base.RoundTrip(r2)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err := t.a.vault.Drop(ctx, t.key, tok.AccessToken); err != nil {
			return nil, err
		}
		t.a.u.g.log.Info("gateway: the upstream refused a user's token; it is dropped and the user asked again", "upstream", t.a.u.cfg.Name)
		return nil, errNeedsUser
	}
	return resp, nil
}

// AuthorizationHandler serves the pages of per-user upstream
// authorization under UserAuthorization.BaseURL's path: the start page
// (/start/…) and the OAuth callback (/callback). Mount it there, e.g.
// mux.Handle("/oauth/", gw.AuthorizationHandler()) for BaseURL
// "https://gateway.example.com/oauth". Nil when no upstream has per-user
// authorization.
func (g *Gateway) AuthorizationHandler() http.Handler {
	if g.userAuth == nil {
		return nil
	}
	b, _ := url.Parse(g.userAuth.BaseURL)
	base := strings.TrimSuffix(b.Path, "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, base+"/start/"):
			g.serveStart(w, r, strings.TrimPrefix(p, base+"/start/"), base)
		case p == base+"/callback":
			g.serveCallback(w, r, base)
		case p == base+"/signin" && g.signIn != nil:
			g.serveSignIn(w, r, base)
		default:
			http.NotFound(w, r)
		}
	})
}

// userAuthzOf returns the per-user authorization of the upstream named.
func (g *Gateway) userAuthzOf(name string) *userAuthz {
	for _, u := range g.ups {
		if u.cfg.Name == name {
			return u.users
		}
	}
	return nil
}

func (g *Gateway) serveStart(w http.ResponseWriter, r *http.Request, handle, base string) {
	ua := g.userAuth
	raw, err := base64.RawURLEncoding.DecodeString(handle)
	var tk startTicket
	if err == nil {
		var pt []byte
		if pt, err = ua.Protector.Open(r.Context(), string(raw), []byte(startBinding)); err == nil {
			err = json.Unmarshal(pt, &tk)
		}
	}
	if err != nil || time.Now().Unix() > tk.Expires || tk.ID == "" {
		authorizationPage(w, http.StatusBadRequest, "This authorization link is invalid or has expired. Call the tool again for a new one.")
		return
	}
	a := g.userAuthzOf(tk.Upstream)
	if a == nil {
		authorizationPage(w, http.StatusNotFound, "This gateway no longer has that upstream.")
		return
	}
	who, ok := g.browserUser(w, r, base)
	if !ok {
		return // signing in, or refused
	}
	if !sameUser(who, tk.Identity) {
		g.log.Warn("gateway: an authorization link was opened by another user than the caller it was made for; refused", "upstream", tk.Upstream)
		msg := "This authorization link was made for another user: only the person who was asked can use it. If you were sent it, do not use it; to authorize your own account, call the tool yourself."
		if g.signIn != nil {
			// A browser shared by two people: the next opening signs in
			// again (the link still works only for its caller).
			g.clearCookie(w, r, browserUserCookie, base+"/")
			msg += " If it was made for you and this browser was signed in as someone else, open it again to sign in as yourself."
		}
		authorizationPage(w, http.StatusForbidden, msg)
		return
	}
	first, err := a.vault.Claim(r.Context(), usertoken.Key{Upstream: tk.Upstream, Identity: tk.Identity}, tk.ID, time.Unix(tk.Expires, 0))
	if err != nil {
		g.log.Error("gateway: cannot record the use of an authorization link", "upstream", tk.Upstream, "err", err)
		authorizationPage(w, http.StatusInternalServerError, "The authorization could not be started. Try again later.")
		return
	}
	if !first {
		authorizationPage(w, http.StatusBadRequest, "This authorization link was already used. Call the tool again for a new one.")
		return
	}
	authURL, p, err := a.authz.Begin(r.Context(), nil)
	if err != nil {
		g.log.Warn("gateway: cannot start a user's authorization at the upstream's authorization server", "upstream", tk.Upstream, "err", err)
		authorizationPage(w, http.StatusBadGateway, "The upstream's authorization server cannot be reached or used now. Try again later.")
		return
	}
	fs := flowState{startTicket: startTicket{Upstream: tk.Upstream, Identity: tk.Identity, Expires: time.Now().Add(ua.LinkLifetime).Unix()}, Pending: p}
	if err := g.setSealedCookie(w, r, flowCookiePrefix+p.State, base+"/callback", flowBinding+"\x00"+p.State, fs, ua.LinkLifetime); err != nil {
		g.log.Error("gateway: cannot seal an authorization flow", "err", err)
		authorizationPage(w, http.StatusInternalServerError, "The authorization could not be started.")
		return
	}
	http.Redirect(w, r, authURL, http.StatusFound)
}

func (g *Gateway) serveCallback(w http.ResponseWriter, r *http.Request, base string) {
	q := r.URL.Query()
	state := q.Get("state")
	var fs flowState
	if state == "" || !g.openSealedCookie(r, flowCookiePrefix+state, flowBinding+"\x00"+state, &fs) || fs.Pending == nil || time.Now().Unix() > fs.Expires {
		authorizationPage(w, http.StatusBadRequest, "This authorization was not started in this browser, or it expired. Call the tool again for a new link.")
		return
	}
	g.clearCookie(w, r, flowCookiePrefix+state, base+"/callback")
	a := g.userAuthzOf(fs.Upstream)
	if a == nil {
		authorizationPage(w, http.StatusNotFound, "This gateway no longer has that upstream.")
		return
	}
	tok, err := a.authz.Finish(r.Context(), fs.Pending, q)
	if err != nil {
		g.log.Info("gateway: a user's authorization at an upstream failed", "upstream", fs.Upstream, "err", err)
		var oe *oauth.OAuthError
		msg := "The authorization failed. Call the tool again to retry."
		if errors.As(err, &oe) && oe.StatusCode == 0 {
			msg = "The authorization was refused (" + oe.Code + "). Call the tool again to retry."
		}
		authorizationPage(w, http.StatusBadRequest, msg)
		return
	}
	if err := a.vault.Save(r.Context(), usertoken.Key{Upstream: fs.Upstream, Identity: fs.Identity}, tok); err != nil {
		g.log.Error("gateway: cannot store a user's upstream token", "upstream", fs.Upstream, "err", err)
		authorizationPage(w, http.StatusInternalServerError, "The authorization succeeded but could not be kept. Try again later.")
		return
	}
	authorizationPage(w, http.StatusOK, fmt.Sprintf("The gateway may now use %s on your behalf. Return to your application: it can retry.", fs.Upstream))
}

// authorizationPage writes a minimal HTML page.
func authorizationPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, "<!doctype html><meta charset=utf-8><title>Authorization</title><p>"+html.EscapeString(msg)+"</p>\n")
}
