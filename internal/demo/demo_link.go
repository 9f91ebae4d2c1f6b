package demo

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/weftmcp/weft/internal/hostcheck"
)

// Bounds of the demo's account-link pages (development only).
const (
	// maxPendingLinks bounds the link pages issued and not yet consumed
	// or expired: account.link refuses to issue more until some end.
	maxPendingLinks = 10_000
	// linkLifetime is how long a link page stays usable, as long as the
	// durable handle it carries.
	linkLifetime = 15 * time.Minute
	// maxLinkFormBytes bounds the body of the page's POST.
	maxLinkFormBytes = 1024
)

// errTooManyLinks refuses a link past maxPendingLinks.
var errTooManyLinks = errors.New("too many account links are pending")

// linkRegistry keeps the link pages account.link issued: each only until
// it expires or its call consumes it, at most max at once. A page completes
// only with the form token its GET rendered (an HMAC of the handle under a
// per-process secret), so a POST of a guessed or foreign handle keeps
// nothing.
type linkRegistry struct {
	now    func() time.Time
	max    int
	secret [32]byte

	mu      sync.Mutex
	pending map[string]*linkEntry
}

type linkEntry struct {
	expires time.Time
	done    bool
}

func newLinkRegistry() (*linkRegistry, error) {
	l := &linkRegistry{now: time.Now, max: maxPendingLinks, pending: map[string]*linkEntry{}}
	if _, err := rand.Read(l.secret[:]); err != nil {
		return nil, fmt.Errorf("link page secret: %w", err)
	}
	return l, nil
}

// sweep drops expired entries. Caller holds l.mu.
func (l *linkRegistry) sweep(now time.Time) {
	for h, e := range l.pending {
		if !now.Before(e.expires) {
			delete(l.pending, h)
		}
	}
}

// issue records a new link page for handle h.
func (l *linkRegistry) issue(h string) error {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) >= l.max {
		l.sweep(now)
		if len(l.pending) >= l.max {
			return errTooManyLinks
		}
	}
	l.pending[h] = &linkEntry{expires: now.Add(linkLifetime)}
	return nil
}

// live returns h's entry if it is pending and unexpired. Caller holds l.mu.
func (l *linkRegistry) live(h string) *linkEntry {
	e, ok := l.pending[h]
	if !ok {
		return nil
	}
	if !l.now().Before(e.expires) {
		delete(l.pending, h)
		return nil
	}
	return e
}

// known reports whether h is a pending, unexpired link.
func (l *linkRegistry) known(h string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live(h) != nil
}

// done reports whether the user completed h's page.
func (l *linkRegistry) done(h string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.live(h)
	return e != nil && e.done
}

// remove forgets h (its call consumed it).
func (l *linkRegistry) remove(h string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, h)
}

// size returns the number of entries held, expired ones not yet swept
// included.
func (l *linkRegistry) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// token is the form token of h's page.
func (l *linkRegistry) token(h string) string {
	m := hmac.New(sha256.New, l.secret[:])
	m.Write([]byte("weft-demo-link-v1\x00"))
	m.Write([]byte(h))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// complete marks h's page completed if token is its form token.
func (l *linkRegistry) complete(h, token string) bool {
	want := l.token(h)
	if subtle.ConstantTimeCompare([]byte(token), []byte(want)) != 1 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.live(h)
	if e == nil {
		return false
	}
	e.done = true
	return true
}

// linkPage serves the demo's account-link page (development only: a real
// server verifies that the browser user is the MCP user before completing).
// Only pages account.link issued exist (404 otherwise); requests naming
// another host than the demo's (its base URL's, loopback, --allowed-hosts)
// or coming from another web origin are refused (403, DNS rebinding and
// cross-site posts), and a POST completes the page only with the form token
// its GET rendered.
func (st *demoStores) linkPage(w http.ResponseWriter, r *http.Request) {
	h := strings.TrimPrefix(r.URL.Path, "/link/")
	w.Header().Set("Cache-Control", "no-store")
	if len(h) != 43 || strings.ContainsAny(h, "/?#") || !st.links.known(h) {
		http.NotFound(w, r)
		return
	}
	base, _ := url.Parse(st.baseURL)
	hosts, origins := st.allowedHosts, st.allowedOrigins
	if base != nil && base.Host != "" {
		hosts = append([]string{base.Host}, hosts...)
		origins = append([]string{base.Scheme + "://" + base.Host}, origins...)
	}
	if !hostcheck.HostAllowed(r.Host, hosts) || !hostcheck.OriginAllowed(r.Header.Get("Origin"), origins) {
		http.Error(w, "Forbidden: this page is served to the demo's own host and origin only.", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	switch r.Method {
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, maxLinkFormBytes)
		if err := r.ParseForm(); err != nil || !st.links.complete(h, r.PostForm.Get("token")) {
			http.Error(w, "Forbidden: the link form's token is missing or wrong.", http.StatusForbidden)
			return
		}
		fmt.Fprint(w, "<!doctype html><title>Linked</title><p>Account linked. Return to your assistant.</p>")
	case http.MethodGet, http.MethodHead:
		fmt.Fprintf(w, `<!doctype html><title>Link account</title><form method="post" action="/link/%s"><input type="hidden" name="token" value="%s"><button>Link my account</button></form>`,
			html.EscapeString(h), html.EscapeString(st.links.token(h)))
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "Method not allowed.", http.StatusMethodNotAllowed)
	}
}
