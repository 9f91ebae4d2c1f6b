package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Loopback receives the redirect of an authorization code flow on a
// loopback address (RFC 8252 section 7.3): an HTTP server on
// 127.0.0.1 and an ephemeral port, path /callback. It serves until
// Close.
type Loopback struct {
	ln  net.Listener
	srv *http.Server
	url string

	mu      sync.Mutex
	waiting map[string]chan url.Values // state -> receiver
}

// NewLoopback listens on 127.0.0.1 at an ephemeral port.
func NewLoopback() (*Loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("oauth: loopback redirect listener: %w", err)
	}
	l := &Loopback{ln: ln, url: "http://" + ln.Addr().String() + "/callback", waiting: map[string]chan url.Values{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", l.callback)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = l.srv.Serve(ln) }()
	return l, nil
}

// RedirectURL is the redirect URI to register and send.
func (l *Loopback) RedirectURL() string { return l.url }

// Close stops the server.
func (l *Loopback) Close() error { return l.srv.Close() }

func (l *Loopback) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	l.mu.Lock()
	ch := l.waiting[q.Get("state")]
	delete(l.waiting, q.Get("state"))
	l.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if ch == nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, "<!doctype html><p>No authorization is waiting for this response.</p>")
		return
	}
	ch <- q
	if e := q.Get("error"); e != "" {
		fmt.Fprintf(w, "<!doctype html><p>Authorization failed: %s. You can close this window.</p>", html.EscapeString(e))
		return
	}
	fmt.Fprint(w, "<!doctype html><p>Authorized. You can close this window.</p>")
}

// Authorize returns a [Config.Authorize] that calls open with the
// authorization URL (open a browser, or print it) and waits for the
// redirect carrying the same state.
func (l *Loopback) Authorize(open func(ctx context.Context, authURL string) error) func(ctx context.Context, authURL string) (url.Values, error) {
	return func(ctx context.Context, authURL string) (url.Values, error) {
		u, err := url.Parse(authURL)
		if err != nil {
			return nil, err
		}
		state := u.Query().Get("state")
		if state == "" {
			return nil, errors.New("oauth: the authorization URL has no state")
		}
		ch := make(chan url.Values, 1)
		l.mu.Lock()
		l.waiting[state] = ch
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			delete(l.waiting, state)
			l.mu.Unlock()
		}()
		if err := open(ctx, authURL); err != nil {
			return nil, err
		}
		select {
		case v := <-ch:
			return v, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
