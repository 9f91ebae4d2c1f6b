package authserver

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAuthorizeFlood is a noisy neighbour: while alice signs in (through
// Hydra) from one address, another address floods /authorize with valid
// requests, enough to push hers out of the pending requests. The flood is
// cut at the address's rate (429 with Retry-After), and alice's sign-in
// completes.
func TestAuthorizeFlood(t *testing.T) {
	e := newEnv(t, envOpts{mutate: func(c *Config) { c.MaxPendingAuthorizations = 200 }})

	// Alice, from 127.0.0.2: her request is pending at Hydra's login.
	alice := newBrowser(t, e.hydra.PublicURL)
	alice.c.Transport = &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}
	verifier, challenge := pkce()
	resp, err := alice.c.Get(e.authorizeURL(e.clientID, e.redirect, challenge, "alice-st", nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	atHydra := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(atHydra, e.hydra.PublicURL) {
		t.Fatalf("alice's authorization request: %s to %q, want Hydra", resp.Status, atHydra)
	}

	// The flood, from 127.0.0.1: 2,000 valid requests, 8 at a time.
	noRedirect := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var admitted, limited atomic.Int64
	var wg sync.WaitGroup
	jobs := make(chan int)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				_, ch := pkce()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.authorizeURL(e.clientID, e.redirect, ch, "flood", nil), nil)
				resp, err := noRedirect.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusFound:
					admitted.Add(1)
				case http.StatusTooManyRequests:
					if resp.Header.Get("Retry-After") == "" {
						t.Error("429 without Retry-After")
					}
					limited.Add(1)
				default:
					t.Errorf("flood request: %s", resp.Status)
				}
			}
		}()
	}
	for i := range 2000 {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if admitted.Load() > int64(DefaultAuthorizeRate)+5 || limited.Load() < 2000-int64(DefaultAuthorizeRate)-5 {
		t.Errorf("flood: %d admitted, %d refused; want about %d admitted (the address's rate)", admitted.Load(), limited.Load(), DefaultAuthorizeRate)
	}

	// Alice signs in at Hydra and consents; her code is good.
	alice.stop = e.redirect
	q := e.login(alice, atHydra)
	if q.Get("state") != "alice-st" || q.Get("code") == "" {
		t.Fatalf("alice's redirect %v", q)
	}
	st, tok := e.token(map[string][]string{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "code_verifier": {verifier},
		"client_id": {e.clientID}, "redirect_uri": {e.redirect}}, nil)
	if st != 200 {
		t.Fatalf("alice's token: %d %v", st, tok)
	}
}

// TestClientAddress: the authorization rate counts a browser by its IP
// address, an IPv6 one by its /64, or by what Config.ClientAddress names
// behind a proxy.
func TestClientAddress(t *testing.T) {
	s := &Server{}
	proxied := &Server{cfg: Config{ClientAddress: func(r *http.Request) string { return r.Header.Get("X-Forwarded-For") }}}
	for _, tc := range []struct {
		s           *Server
		remote, fwd string
		want        string
	}{
		{s, "192.0.2.7:5000", "", "192.0.2.7"},
		{s, "[2001:db8:1:2:3:4:5:6]:443", "", "2001:db8:1:2::/64"},
		{s, "[2001:db8:1:2:ffff::1]:443", "", "2001:db8:1:2::/64"},
		{s, "[::ffff:192.0.2.7]:80", "", "192.0.2.7"},
		{proxied, "10.0.0.1:443", "2001:db8:5:6::9", "2001:db8:5:6::/64"},
		{proxied, "10.0.0.1:443", "unknown-client", "unknown-client"},
	} {
		r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{"X-Forwarded-For": {tc.fwd}}}
		if got := tc.s.clientAddress(r); got != tc.want {
			t.Errorf("%s (forwarded %q): %s, want %s", tc.remote, tc.fwd, got, tc.want)
		}
	}
}
