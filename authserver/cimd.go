package authserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits of client metadata document fetching.
const (
	// DefaultCIMDMaxBytes bounds a client metadata document (the CIMD
	// draft suggests 5 KB).
	DefaultCIMDMaxBytes = 5 << 10
	// DefaultCIMDTimeout bounds one fetch, connection and TLS included.
	DefaultCIMDTimeout = 5 * time.Second
	// DefaultCIMDCacheTTL is how long a document is cached when its
	// response has no usable Cache-Control max-age.
	DefaultCIMDCacheTTL = time.Hour
	// MinCIMDCacheTTL and MaxCIMDCacheTTL bound the caching time a
	// response asks for.
	MinCIMDCacheTTL = time.Minute
	MaxCIMDCacheTTL = 24 * time.Hour
	// DefaultCIMDCacheEntries bounds the cached documents.
	DefaultCIMDCacheEntries = 10000
	// DefaultCIMDConcurrentFetches bounds the documents one instance
	// fetches at once; more wait (within Timeout) for a turn.
	DefaultCIMDConcurrentFetches = 8
	// CIMDFailureTTL is how long a document that could not be fetched or
	// was invalid is not fetched again: its client_id fails at once.
	CIMDFailureTTL = time.Minute
)

// CIMDConfig configures client registration by Client ID Metadata
// Documents: a client_id that is an https URL names a JSON document
// describing the client, which the server fetches.
type CIMDConfig struct {
	// Disabled turns metadata-document clients off.
	Disabled bool
	// AllowHTTP accepts http:// client_ids (development only).
	AllowHTTP bool
	// AllowedNetworks lists address ranges that would otherwise be refused
	// (loopback, private, link-local, shared, documentation, unspecified
	// or multicast addresses), for example 127.0.0.0/8 in tests. Every
	// address actually dialled is checked, so a name that resolves to a
	// refused address is refused too.
	AllowedNetworks []netip.Prefix
	// AllowedHosts, when set, is a trust policy: only documents on these
	// hosts (exact names, or ".example.com" for every subdomain) are
	// fetched.
	AllowedHosts []string
	// MaxBytes bounds a document (default DefaultCIMDMaxBytes).
	MaxBytes int64
	// Timeout bounds one fetch (default DefaultCIMDTimeout).
	Timeout time.Duration
	// MaxCacheEntries bounds the cache (default DefaultCIMDCacheEntries),
	// and the failures remembered for CIMDFailureTTL.
	MaxCacheEntries int
	// MaxConcurrentFetches bounds the fetches at once (default
	// DefaultCIMDConcurrentFetches). Concurrent requests for one document
	// share one fetch.
	MaxConcurrentFetches int
	// RootCAs verifies the documents' servers (default: the system roots).
	RootCAs *x509.CertPool
}

// Errors of metadata document fetching, wrapped with what failed.
var (
	// ErrCIMDAddress: the document's host resolves to a refused address.
	ErrCIMDAddress = errors.New("authserver: client metadata document host is at a refused address")
	// ErrCIMDDocument: the document is invalid.
	ErrCIMDDocument = errors.New("authserver: invalid client metadata document")
	// ErrCIMDFetch: the document could not be fetched.
	ErrCIMDFetch = errors.New("authserver: client metadata document could not be fetched")
)

type cimdFetcher struct {
	cfg   CIMDConfig
	store Store
	now   func() time.Time
	http  *http.Client
	slots chan struct{} // a fetch holds one

	mu       sync.Mutex
	inflight map[string]*cimdCall // URL -> the fetch under way
	failed   map[string]cimdFailure
}

// cimdCall is one fetch that concurrent requests for its URL share.
type cimdCall struct {
	done chan struct{}
	c    *Client
	err  error
}

// cimdFailure is a remembered failed fetch.
type cimdFailure struct {
	err   error
	until time.Time
}

func newCIMDFetcher(cfg CIMDConfig, store Store, now func() time.Time) (*cimdFetcher, error) {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultCIMDMaxBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultCIMDTimeout
	}
	if cfg.MaxCacheEntries <= 0 {
		cfg.MaxCacheEntries = DefaultCIMDCacheEntries
	}
	if cfg.MaxConcurrentFetches <= 0 {
		cfg.MaxConcurrentFetches = DefaultCIMDConcurrentFetches
	}
	f := &cimdFetcher{cfg: cfg, store: store, now: now, slots: make(chan struct{}, cfg.MaxConcurrentFetches),
		inflight: map[string]*cimdCall{}, failed: map[string]cimdFailure{}}
	dialer := &net.Dialer{Timeout: cfg.Timeout, Control: f.checkDial}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial for us, unchecked
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 16 << 10,
	}
	f.http = &http.Client{
		Transport: tr,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are not followed")
		},
	}
	return f, nil
}

// checkDial runs for every connection with the address actually dialled.
func (f *cimdFetcher) checkDial(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrCIMDAddress, address)
	}
	if err := checkAddr(ap.Addr(), f.cfg.AllowedNetworks); err != nil {
		return err
	}
	return nil
}

// refusedPrefixes are ranges that are not the public internet, beyond what
// netip's predicates cover.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 can reach private IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("fc00::/7"),
}

// checkAddr refuses addresses off the public internet unless allowed.
func checkAddr(a netip.Addr, allowed []netip.Prefix) error {
	a = a.Unmap()
	for _, p := range allowed {
		if p.Contains(a) {
			return nil
		}
	}
	bad := !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast()
	for _, p := range refusedPrefixes {
		if p.Contains(a) {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("%w: %s", ErrCIMDAddress, a)
	}
	return nil
}

// checkCIMDURL checks the form of a metadata-document client_id.
func (f *cimdFetcher) checkCIMDURL(id string) (*url.URL, error) {
	if len(id) > MaxParamBytes {
		return nil, fmt.Errorf("%w: the client_id URL is longer than %d bytes", ErrCIMDDocument, MaxParamBytes)
	}
	u, err := url.Parse(id)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("%w: the client_id is not an absolute URL", ErrCIMDDocument)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && f.cfg.AllowHTTP) {
		return nil, fmt.Errorf("%w: the client_id URL must use https", ErrCIMDDocument)
	}
	if u.User != nil || u.Fragment != "" || strings.Contains(id, "#") {
		return nil, fmt.Errorf("%w: the client_id URL must not have user info or a fragment", ErrCIMDDocument)
	}
	if u.Path == "" || u.Path == "/" {
		return nil, fmt.Errorf("%w: the client_id URL must have a path", ErrCIMDDocument)
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("%w: the client_id URL must not have dot segments", ErrCIMDDocument)
		}
	}
	if len(f.cfg.AllowedHosts) > 0 {
		h := strings.ToLower(u.Hostname())
		if !slices.ContainsFunc(f.cfg.AllowedHosts, func(a string) bool {
			a = strings.ToLower(a)
			return h == a || (strings.HasPrefix(a, ".") && strings.HasSuffix(h, a))
		}) {
			return nil, fmt.Errorf("%w: host %q is not trusted", ErrCIMDDocument, h)
		}
	}
	// A literal address is checked before dialling too, for a clear error.
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		if err := checkAddr(a, f.cfg.AllowedNetworks); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// client returns the client a metadata-document client_id describes, from
// the cache or fetched.
func (f *cimdFetcher) client(ctx context.Context, id string) (*Client, error) {
	if _, err := f.checkCIMDURL(id); err != nil {
		return nil, err
	}
	if it, err := f.store.Get(ctx, kindCIMD, id); err == nil {
		if c, err := ParseClientMetadata(id, it.Data); err == nil {
			return c, nil
		}
	}
	return f.shared(ctx, id)
}

// shared fetches and parses id once for every concurrent request of it,
// within the bound on fetches at once, and remembers a failure for
// CIMDFailureTTL; a valid document is cached in the store.
func (f *cimdFetcher) shared(ctx context.Context, id string) (*Client, error) {
	f.mu.Lock()
	if fl, ok := f.failed[id]; ok {
		if f.now().Before(fl.until) {
			f.mu.Unlock()
			return nil, fl.err
		}
		delete(f.failed, id)
	}
	call := f.inflight[id]
	leader := call == nil
	if leader {
		call = &cimdCall{done: make(chan struct{})}
		f.inflight[id] = call
	}
	f.mu.Unlock()
	if !leader {
		select {
		case <-call.done:
			return call.c, call.err
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrCIMDFetch, ctx.Err())
		}
	}
	// The fetch serves every waiter: it runs to its own timeout even if
	// this request goes away.
	body, ttl, err := f.fetchInTurn(context.WithoutCancel(ctx), id)
	if err == nil {
		call.c, err = ParseClientMetadata(id, body)
	}
	if err == nil {
		if err := f.store.Put(ctx, Item{Kind: kindCIMD, ID: id, Data: body, Expires: f.now().Add(ttl)}); err == nil {
			_ = f.store.Trim(ctx, kindCIMD, f.cfg.MaxCacheEntries)
		}
	}
	call.err = err
	f.mu.Lock()
	delete(f.inflight, id)
	if call.err != nil && !errors.Is(call.err, errCIMDBusy) {
		if len(f.failed) >= f.cfg.MaxCacheEntries {
			now := f.now()
			maps.DeleteFunc(f.failed, func(_ string, fl cimdFailure) bool { return !now.Before(fl.until) })
			if len(f.failed) >= f.cfg.MaxCacheEntries {
				clear(f.failed)
			}
		}
		f.failed[id] = cimdFailure{err: call.err, until: f.now().Add(CIMDFailureTTL)}
	}
	f.mu.Unlock()
	close(call.done)
	return call.c, call.err
}

// errCIMDBusy: every fetch slot stayed taken (not remembered as the
// document's failure).
var errCIMDBusy = errors.New("too many client metadata documents are being fetched; try again")

// fetchInTurn fetches id once one of the fetch slots is free (waiting at
// most Timeout for it).
func (f *cimdFetcher) fetchInTurn(ctx context.Context, id string) ([]byte, time.Duration, error) {
	wait := time.NewTimer(f.cfg.Timeout)
	defer wait.Stop()
	select {
	case f.slots <- struct{}{}:
	case <-wait.C:
		return nil, 0, fmt.Errorf("%w: %w", ErrCIMDFetch, errCIMDBusy)
	}
	defer func() { <-f.slots }()
	return f.fetch(ctx, id)
}

func (f *cimdFetcher) fetch(ctx context.Context, id string) ([]byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrCIMDFetch, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.http.Do(req)
	if err != nil {
		if errors.Is(err, ErrCIMDAddress) {
			return nil, 0, fmt.Errorf("%w (%w)", ErrCIMDAddress, err)
		}
		return nil, 0, fmt.Errorf("%w: %w", ErrCIMDFetch, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%w: status %s", ErrCIMDFetch, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			return nil, 0, fmt.Errorf("%w: content type %q is not JSON", ErrCIMDDocument, mt)
		}
	}
	if resp.ContentLength > f.cfg.MaxBytes {
		return nil, 0, fmt.Errorf("%w: the document is %d bytes, more than %d", ErrCIMDDocument, resp.ContentLength, f.cfg.MaxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.cfg.MaxBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrCIMDFetch, err)
	}
	if int64(len(body)) > f.cfg.MaxBytes {
		return nil, 0, fmt.Errorf("%w: the document is larger than %d bytes", ErrCIMDDocument, f.cfg.MaxBytes)
	}
	return body, cacheTTL(resp.Header.Get("Cache-Control")), nil
}

// cacheTTL reads max-age from Cache-Control, bounded; no-store and
// no-cache give the minimum.
func cacheTTL(cc string) time.Duration {
	ttl := DefaultCIMDCacheTTL
	for _, d := range strings.Split(cc, ",") {
		d = strings.ToLower(strings.TrimSpace(d))
		switch {
		case d == "no-store" || d == "no-cache":
			return MinCIMDCacheTTL
		case strings.HasPrefix(d, "max-age="):
			if n, err := strconv.Atoi(strings.TrimPrefix(d, "max-age=")); err == nil && n >= 0 {
				ttl = time.Duration(n) * time.Second
			}
		}
	}
	return min(max(ttl, MinCIMDCacheTTL), MaxCIMDCacheTTL)
}

// clientMetadata is the accepted part of a client metadata document.
type clientMetadata struct {
	ClientID                *string  `json:"client_id"`
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientSecret            *string  `json:"client_secret"`
	ClientSecretExpiresAt   any      `json:"client_secret_expires_at"`
}

// ParseClientMetadata parses and checks a client metadata document fetched
// from url: a JSON object whose client_id equals url exactly, with a
// client_name, redirect_uris that are https, loopback http or private-use
// scheme URIs, no client secret, and only the authorization_code and
// refresh_token grants of a public client.
func ParseClientMetadata(url string, doc []byte) (*Client, error) {
	var m clientMetadata
	dec := json.NewDecoder(bytes.NewReader(doc))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object of the expected shape: %v", ErrCIMDDocument, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrCIMDDocument)
	}
	if m.ClientID == nil || *m.ClientID != url {
		return nil, fmt.Errorf("%w: its client_id is not the document's URL", ErrCIMDDocument)
	}
	if m.ClientSecret != nil || m.ClientSecretExpiresAt != nil {
		return nil, fmt.Errorf("%w: a metadata document must not carry a client secret", ErrCIMDDocument)
	}
	switch m.TokenEndpointAuthMethod {
	case "", "none":
	default:
		return nil, fmt.Errorf("%w: token_endpoint_auth_method %q is not supported (only none)", ErrCIMDDocument, m.TokenEndpointAuthMethod)
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, fmt.Errorf("%w: grant type %q is not supported", ErrCIMDDocument, g)
		}
	}
	for _, r := range m.ResponseTypes {
		if r != "code" {
			return nil, fmt.Errorf("%w: response type %q is not supported", ErrCIMDDocument, r)
		}
	}
	if m.ClientName == "" {
		return nil, fmt.Errorf("%w: client_name is missing", ErrCIMDDocument)
	}
	c := &Client{ID: url, Name: m.ClientName, URI: m.ClientURI, RedirectURIs: m.RedirectURIs, kind: "cimd"}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCIMDDocument, err)
	}
	return c, nil
}
