package gateway

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client/oauth"
)

// The person who opens a start link must be the caller it was made for
// (the 2026-07-28 elicitation page, "Phishing"): otherwise a caller who
// forwards their link to a colleague signed in at the upstream gets the
// colleague's upstream account bound to their own identity. The start
// page therefore identifies the browser's user first, with
// UserAuthorization.SignIn (the gateway's own authorization server, whose
// token the server's Admission turns into an identity) or
// UserAuthorization.BrowserUser (the application's own session), and
// goes on only when that user is the link's caller. A link is used once.

// OAuthSignIn signs the person in a browser in at the gateway's own
// authorization server (the one that issues the tokens its MCP callers
// present), with the authorization code flow and PKCE, and identifies
// them by admitting the token obtained with the server's
// Options.Admission, exactly as their MCP client's calls are identified.
// The gateway's pages then keep them signed in with a sealed, HttpOnly
// cookie for SessionLifetime.
type OAuthSignIn struct {
	// Resource is the gateway's MCP endpoint, e.g.
	// "https://gateway.example.com/mcp". Its protected resource metadata
	// names the authorization server; the token is requested for it (the
	// resource indicator). Required.
	Resource string
	// ClientID and ClientSecret are the gateway's client at that
	// authorization server (no secret: a public client). Its redirect URI
	// is UserAuthorization.BaseURL + "/signin". Required: ClientID.
	ClientID     string
	ClientSecret string
	// Scopes are requested besides those the resource's metadata asks for.
	Scopes []string
	// AuthorizationParams are added to the authorization request (for
	// example "audience" at Auth0 or Ory Hydra).
	AuthorizationParams map[string]string
	// SessionLifetime is how long a browser stays signed in at the
	// gateway's pages (default DefaultSignInLifetime, at most
	// MaxSignInLifetime).
	SessionLifetime time.Duration
}

// Sign-in defaults and bounds.
const (
	DefaultSignInLifetime = time.Hour
	MaxSignInLifetime     = 24 * time.Hour
	signInBinding         = "weft-gateway-signin-flow"
	browserUserBinding    = "weft-gateway-browser-user"
	signInCookiePrefix    = "weft_gw_signin_"
	browserUserCookie     = "weft_gw_user"
)

func (s *OAuthSignIn) withDefaults() (*OAuthSignIn, error) {
	out := *s
	u, err := url.Parse(out.Resource)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" ||
		!(u.Scheme == "https" || u.Scheme == "http" && isLoopback(u.Hostname())) {
		return nil, fmt.Errorf("UserAuthorization.SignIn.Resource %q: want the gateway's MCP endpoint, an https URL (http on a loopback host)", out.Resource)
	}
	if out.ClientID == "" {
		return nil, errors.New("UserAuthorization.SignIn.ClientID is required: the gateway's client at its own authorization server")
	}
	if out.SessionLifetime <= 0 {
		out.SessionLifetime = DefaultSignInLifetime
	}
	if out.SessionLifetime > MaxSignInLifetime {
		return nil, fmt.Errorf("UserAuthorization.SignIn.SessionLifetime %s exceeds %s", out.SessionLifetime, MaxSignInLifetime)
	}
	return &out, nil
}

// newSignIn returns the authorizer of ua.SignIn at the gateway's own
// authorization server.
func newSignIn(g *Gateway, ua *UserAuthorization) *oauth.Authorizer {
	s := ua.SignIn
	params := url.Values{}
	for k, v := range s.AuthorizationParams {
		params.Set(k, v)
	}
	cfg := oauth.Config{HTTPClient: g.hc, ClientID: s.ClientID, ClientSecret: s.ClientSecret,
		RedirectURL: ua.BaseURL + "/signin", Scopes: s.Scopes, AuthorizationParams: params}
	if s.ClientSecret == "" {
		cfg.AuthMethod = oauth.AuthNone
	}
	return oauth.NewAuthorizer(s.Resource, cfg)
}

// signInFlow is what a sign-in's cookie carries, sealed.
type signInFlow struct {
	Return  string         `json:"r"`
	Expires int64          `json:"e"`
	Pending *oauth.Pending `json:"p"`
}

// browserSession is what the signed-in cookie carries, sealed: the digest
// of the user's identity (identityOf).
type browserSession struct {
	Identity string `json:"i"`
	Expires  int64  `json:"e"`
}

// browserUser returns the digest of the browser's user (identityOf). When
// it cannot tell yet it has written the response (a redirect to sign in,
// which comes back to r's path) and returns false.
func (g *Gateway) browserUser(w http.ResponseWriter, r *http.Request, base string) (string, bool) {
	ua := g.userAuth
	if ua.BrowserUser != nil {
		id, ok := ua.BrowserUser(w, r)
		if !ok {
			return "", false
		}
		d, named := digestOf(id)
		if !named {
			authorizationPage(w, http.StatusForbidden, "You are not signed in. Sign in, then open the link again.")
			return "", false
		}
		return d, true
	}
	var bs browserSession
	if g.openSealedCookie(r, browserUserCookie, browserUserBinding, &bs) && bs.Identity != "" && time.Now().Unix() <= bs.Expires {
		return bs.Identity, true
	}
	// Not signed in: sign in at the gateway's authorization server, then
	// come back here.
	authURL, p, err := g.signIn.Begin(r.Context(), nil)
	if err != nil {
		g.log.Warn("gateway: cannot start a sign-in at the gateway's authorization server", "err", err)
		authorizationPage(w, http.StatusBadGateway, "The sign-in service cannot be reached or used now. Try again later.")
		return "", false
	}
	fl := signInFlow{Return: r.URL.Path, Expires: time.Now().Add(ua.LinkLifetime).Unix(), Pending: p}
	if err := g.setSealedCookie(w, r, signInCookiePrefix+p.State, base+"/signin", signInBinding+"\x00"+p.State, fl, ua.LinkLifetime); err != nil {
		g.log.Error("gateway: cannot seal a sign-in", "err", err)
		authorizationPage(w, http.StatusInternalServerError, "The sign-in could not be started.")
		return "", false
	}
	http.Redirect(w, r, authURL, http.StatusFound)
	return "", false
}

// serveSignIn is the redirect URI of OAuthSignIn: it redeems the code,
// admits the token as the server admits its callers, keeps the identity
// in a sealed cookie and goes back to the start page.
func (g *Gateway) serveSignIn(w http.ResponseWriter, r *http.Request, base string) {
	ua := g.userAuth
	q := r.URL.Query()
	state := q.Get("state")
	var fl signInFlow
	if state == "" || !g.openSealedCookie(r, signInCookiePrefix+state, signInBinding+"\x00"+state, &fl) ||
		fl.Pending == nil || time.Now().Unix() > fl.Expires || !strings.HasPrefix(fl.Return, base+"/start/") {
		authorizationPage(w, http.StatusBadRequest, "This sign-in was not started in this browser, or it expired. Open the authorization link again.")
		return
	}
	g.clearCookie(w, r, signInCookiePrefix+state, base+"/signin")
	tok, err := g.signIn.Finish(r.Context(), fl.Pending, q)
	if err != nil {
		g.log.Info("gateway: a sign-in at the gateway's authorization server failed", "err", err)
		authorizationPage(w, http.StatusBadRequest, "The sign-in failed. Open the authorization link again to retry.")
		return
	}
	id, err := g.admitBrowser(r.Context(), r, tok.AccessToken)
	d, named := digestOf(id)
	if err != nil || !named {
		g.log.Info("gateway: a browser's sign-in token was not admitted as a caller", "err", err)
		authorizationPage(w, http.StatusForbidden, "Your sign-in does not identify you as a user of this gateway.")
		return
	}
	life := ua.SignIn.SessionLifetime
	if err := g.setSealedCookie(w, r, browserUserCookie, base+"/", browserUserBinding, browserSession{Identity: d, Expires: time.Now().Add(life).Unix()}, life); err != nil {
		g.log.Error("gateway: cannot seal a browser's sign-in", "err", err)
		authorizationPage(w, http.StatusInternalServerError, "The sign-in could not be kept.")
		return
	}
	http.Redirect(w, r, fl.Return, http.StatusFound)
}

// admitBrowser identifies the holder of token as the server identifies
// its callers.
func (g *Gateway) admitBrowser(ctx context.Context, r *http.Request, token string) (weft.Identity, error) {
	if g.srv == nil {
		return weft.Identity{}, errors.New("gateway: no server to admit the sign-in with")
	}
	h := http.Header{"Authorization": {"Bearer " + token}}
	return g.srv.Proxy().Admit(ctx, &weft.AdmissionRequest{Method: "tools/call", Header: h, RemoteAddr: r.RemoteAddr, Transport: "http", BearerToken: token})
}

// sameUser compares two identity digests in constant time.
func sameUser(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// setSealedCookie sets cookie name, sent to path for life, to v sealed
// under binding (HttpOnly, SameSite=Lax, Secure on https). The sealed
// value carries its own expiry, which its reader checks.
func (g *Gateway) setSealedCookie(w http.ResponseWriter, r *http.Request, name, path, binding string, v any, life time.Duration) error {
	pt, err := json.Marshal(v)
	if err != nil {
		return err
	}
	sealed, err := g.userAuth.Protector.Seal(r.Context(), []byte(binding), pt)
	if err != nil {
		return err
	}
	http.SetCookie(w, g.cookie(r, name, sealed, path, int(life/time.Second)))
	return nil
}

// openSealedCookie reads cookie name, sealed under binding, into v; false
// when the browser has none or it does not open.
func (g *Gateway) openSealedCookie(r *http.Request, name, binding string, v any) bool {
	ck, err := r.Cookie(name)
	if err != nil {
		return false
	}
	pt, err := g.userAuth.Protector.Open(r.Context(), ck.Value, []byte(binding))
	return err == nil && json.Unmarshal(pt, v) == nil
}

// clearCookie removes cookie name (sent to path) from the browser.
func (g *Gateway) clearCookie(w http.ResponseWriter, r *http.Request, name, path string) {
	http.SetCookie(w, g.cookie(r, name, "", path, -1))
}

// cookie is a cookie of the authorization pages.
func (g *Gateway) cookie(r *http.Request, name, value, path string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge, HttpOnly: true,
		Secure: r.TLS != nil || strings.HasPrefix(g.userAuth.BaseURL, "https:"), SameSite: http.SameSiteLaxMode}
}
