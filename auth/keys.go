package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// KeySource supplies the public keys that verify access-token signatures,
// normally the JSON Web Key Set (RFC 7517) of the authorization server.
// Implementations must be safe for concurrent use. The returned slices may
// be shared: callers must not modify them.
type KeySource interface {
	// Keys returns the current keys. It may serve a cached set.
	Keys(ctx context.Context) ([]jose.JSONWebKey, error)
	// Refresh is called when a token names a key ("kid") that Keys did not
	// return, which happens after the authorization server rotates its
	// keys. It reloads the set if it has not been loaded too recently (an
	// attacker can send tokens with made-up kids, so reloads must be rate
	// limited) and returns the keys then current.
	Refresh(ctx context.Context) ([]jose.JSONWebKey, error)
}

// Defaults of the key sources.
const (
	// DefaultJWKSRefreshInterval is how long a fetched key set is used
	// before it is fetched again.
	DefaultJWKSRefreshInterval = 15 * time.Minute
	// DefaultJWKSMinRefreshInterval is the least time between two loads of
	// a key set, however many tokens name unknown keys.
	DefaultJWKSMinRefreshInterval = 15 * time.Second
	// DefaultJWKSMaxSize bounds a key set document, in bytes.
	DefaultJWKSMaxSize = 1 << 20
	// DefaultJWKSTimeout bounds one fetch of a key set when the HTTP client
	// has no timeout of its own.
	DefaultJWKSTimeout = 10 * time.Second
	// maxJWKSKeys bounds the number of keys in a set.
	maxJWKSKeys = 256
)

// JWKSOptions configure [JWKSURL] and [JWKSFile]. The zero value (or nil)
// is usable.
type JWKSOptions struct {
	// Client is the HTTP client JWKSURL fetches with (nil: a client of its
	// own). When it has no Timeout, each fetch is bounded by
	// [DefaultJWKSTimeout].
	Client *http.Client
	// RefreshInterval is how long a fetched set is used (0:
	// [DefaultJWKSRefreshInterval]). JWKSURL only.
	RefreshInterval time.Duration
	// MaxSize bounds the document in bytes (0: [DefaultJWKSMaxSize]).
	// JWKSURL only.
	MaxSize int64
	// MinRefreshInterval is the least time between two loads of the key
	// set, however often tokens with unknown key ids arrive (0:
	// [DefaultJWKSMinRefreshInterval]).
	MinRefreshInterval time.Duration
	// Now is the clock of the key source's cache (nil: time.Now), for
	// tests.
	Now func() time.Time
}

// applyJWKSOptions returns opts checked, with the defaults both key
// sources use (MinRefreshInterval, Now) filled in.
func applyJWKSOptions(opts *JWKSOptions) (JWKSOptions, error) {
	var o JWKSOptions
	if opts != nil {
		o = *opts
	}
	if o.RefreshInterval < 0 || o.MaxSize < 0 || o.MinRefreshInterval < 0 {
		return o, fmt.Errorf("%w: JWKS refresh intervals and maximum size must not be negative", ErrConfig)
	}
	if o.MinRefreshInterval == 0 {
		o.MinRefreshInterval = DefaultJWKSMinRefreshInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// StaticKeys is a fixed set of verification keys; Refresh returns the same
// keys. Private keys are reduced to their public halves when used.
type StaticKeys []jose.JSONWebKey

// Keys returns the keys.
func (s StaticKeys) Keys(context.Context) ([]jose.JSONWebKey, error) {
	if len(s) == 0 {
		return nil, fmt.Errorf("%w: the static key set is empty", ErrKeySource)
	}
	return usableKeys(s), nil
}

// Refresh returns the keys.
func (s StaticKeys) Refresh(ctx context.Context) ([]jose.JSONWebKey, error) { return s.Keys(ctx) }

// FileJWKS is a [KeySource] reading a JWKS document from a local file. It
// loads the file when created and again on Refresh (at most once per
// minimum refresh interval), so replacing the file rotates keys without a
// restart.
type FileJWKS struct {
	path string
	opts JWKSOptions

	mu       sync.Mutex
	keys     []jose.JSONWebKey
	loadedAt time.Time
}

// JWKSFile loads the JWKS document at path and returns a key source serving
// it. It refuses a file that its group or other users can write (anyone who
// can write it can mint tokens), a file larger than [DefaultJWKSMaxSize],
// and a set without any usable signing key.
func JWKSFile(path string, opts *JWKSOptions) (*FileJWKS, error) {
	o, err := applyJWKSOptions(opts)
	if err != nil {
		return nil, err
	}
	keys, err := readJWKSFile(path)
	if err != nil {
		return nil, err
	}
	return &FileJWKS{path: path, opts: o, keys: keys, loadedAt: o.Now()}, nil
}

func readJWKSFile(path string) ([]jose.JSONWebKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth: open JWKS file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("auth: JWKS file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("auth: JWKS file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o022 != 0 {
		return nil, fmt.Errorf("auth: JWKS file %s has mode %04o, which lets its group or other users write it; run chmod go-w on it", path, perm)
	}
	data, err := io.ReadAll(io.LimitReader(f, DefaultJWKSMaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("auth: read JWKS file %s: %w", path, err)
	}
	if len(data) > DefaultJWKSMaxSize {
		return nil, fmt.Errorf("auth: JWKS file %s is more than %d bytes", path, DefaultJWKSMaxSize)
	}
	keys, err := ParseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("auth: JWKS file %s: %w", path, err)
	}
	return keys, nil
}

// Keys returns the keys last loaded.
func (s *FileJWKS) Keys(context.Context) ([]jose.JSONWebKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys, nil
}

// Refresh reloads the file unless it was loaded less than the minimum
// refresh interval ago. If the reload fails, the keys loaded before stay in
// use and the error is returned with them.
func (s *FileJWKS) Refresh(context.Context) ([]jose.JSONWebKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if now.Sub(s.loadedAt) < s.opts.MinRefreshInterval {
		return s.keys, nil
	}
	s.loadedAt = now
	keys, err := readJWKSFile(s.path)
	if err != nil {
		return s.keys, err
	}
	s.keys = keys
	return keys, nil
}

// RemoteJWKS is a [KeySource] fetching a JWKS document over HTTPS, usually
// the jwks_uri of the authorization server's metadata. It caches the set
// for the refresh interval, fetches at most once per minimum refresh
// interval however many callers ask (concurrent callers share one fetch),
// and keeps using the last good set while the endpoint fails. Create it
// with [JWKSURL].
type RemoteJWKS struct {
	url     string
	client  *http.Client
	refresh time.Duration
	maxSize int64
	timeout time.Duration
	opts    JWKSOptions

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	fetchedAt time.Time // last successful fetch
	attempted time.Time // start of the last fetch
	lastErr   error
	inflight  *fetchCall
}

type fetchCall struct {
	done chan struct{}
	err  error
}

// JWKSURL returns a key source fetching the JWKS document at rawURL, which
// must be https (plain http only on loopback hosts, for tests); redirects
// are followed only to URLs allowed by the same rule. opts may be nil.
// Nothing is fetched until the first token arrives.
func JWKSURL(rawURL string, opts *JWKSOptions) (*RemoteJWKS, error) {
	o, err := applyJWKSOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := checkFetchURL(rawURL); err != nil {
		return nil, fmt.Errorf("%w: JWKS URL: %v", ErrConfig, err)
	}
	client, refreshInterval, maxSize := o.Client, o.RefreshInterval, o.MaxSize
	if refreshInterval == 0 {
		refreshInterval = DefaultJWKSRefreshInterval
	}
	if maxSize == 0 {
		maxSize = DefaultJWKSMaxSize
	}
	var c http.Client
	if client != nil {
		c = *client
	}
	timeout := time.Duration(0)
	if c.Timeout == 0 {
		timeout = DefaultJWKSTimeout
	}
	prev := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := checkFetchURL(req.URL.String()); err != nil {
			return fmt.Errorf("auth: JWKS redirect refused: %v", err)
		}
		if prev != nil {
			return prev(req, via)
		}
		if len(via) >= 5 {
			return errors.New("auth: JWKS fetch stopped after 5 redirects")
		}
		return nil
	}
	return &RemoteJWKS{url: rawURL, client: &c, refresh: refreshInterval, maxSize: maxSize, timeout: timeout, opts: o}, nil
}

// checkFetchURL requires an absolute https URL, or http on a loopback host.
func checkFetchURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL", raw)
	}
	if !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	if u.User != nil {
		return fmt.Errorf("%q must not carry user info", raw)
	}
	if err := checkSchemeHost(u); err != nil {
		return fmt.Errorf("%q: %v", raw, err)
	}
	return nil
}

// Keys returns the cached keys while they are fresh, and fetches them
// otherwise. When a fetch fails, the last good keys are returned if there
// are any.
func (s *RemoteJWKS) Keys(ctx context.Context) ([]jose.JSONWebKey, error) {
	s.mu.Lock()
	now := s.opts.Now()
	if s.keys != nil && now.Sub(s.fetchedAt) < s.refresh {
		keys := s.keys
		s.mu.Unlock()
		return keys, nil
	}
	return s.fetchLocked(ctx, now)
}

// Refresh fetches the key set unless a fetch started less than the minimum
// refresh interval ago, in which case it returns the cached keys.
func (s *RemoteJWKS) Refresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	s.mu.Lock()
	return s.fetchLocked(ctx, s.opts.Now())
}

// fetchLocked is called with s.mu held and releases it. It joins the fetch
// in flight, or starts one unless the last started too recently.
func (s *RemoteJWKS) fetchLocked(ctx context.Context, now time.Time) ([]jose.JSONWebKey, error) {
	c := s.inflight
	if c == nil {
		if !s.attempted.IsZero() && now.Sub(s.attempted) < s.opts.MinRefreshInterval {
			keys, err := s.keys, s.lastErr
			s.mu.Unlock()
			if keys != nil {
				return keys, nil
			}
			if err == nil {
				err = errors.New("no key set fetched yet")
			}
			return nil, fmt.Errorf("%w: %v (next fetch allowed in %s)", ErrKeySource, err, (s.opts.MinRefreshInterval - now.Sub(s.attempted)).Round(time.Millisecond))
		}
		c = &fetchCall{done: make(chan struct{})}
		s.inflight = c
		s.attempted = now
		// The fetch outlives a caller that gives up: others may wait for
		// it. It is bounded by the fetch timeout.
		go s.runFetch(context.WithoutCancel(ctx), c)
	}
	s.mu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: waiting for the JWKS fetch: %v", ErrKeySource, ctx.Err())
	}
	s.mu.Lock()
	keys := s.keys
	s.mu.Unlock()
	if keys != nil {
		return keys, nil
	}
	return nil, c.err
}

func (s *RemoteJWKS) runFetch(ctx context.Context, c *fetchCall) {
	keys, err := s.fetch(ctx)
	s.mu.Lock()
	if err == nil {
		s.keys, s.fetchedAt, s.lastErr = keys, s.opts.Now(), nil
	} else {
		s.lastErr = err
	}
	c.err = err
	s.inflight = nil
	s.mu.Unlock()
	close(c.done)
}

func (s *RemoteJWKS) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: build JWKS request: %v", ErrKeySource, err)
	}
	req.Header.Set("Accept", "application/jwk-set+json, application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: fetch JWKS from %s: %v", ErrKeySource, s.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%w: fetch JWKS from %s: HTTP status %d", ErrKeySource, s.url, resp.StatusCode)
	}
	// Servers label JWKS documents inconsistently; only an HTML page (an
	// error or login page in front of the endpoint) is refused outright.
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil && mt == "text/html" {
		return nil, fmt.Errorf("%w: JWKS from %s is an HTML page (Content-Type text/html), not a key set", ErrKeySource, s.url)
	}
	if resp.ContentLength > s.maxSize {
		return nil, fmt.Errorf("%w: JWKS from %s is %d bytes, more than the limit of %d", ErrKeySource, s.url, resp.ContentLength, s.maxSize)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, s.maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read JWKS from %s: %v", ErrKeySource, s.url, err)
	}
	if int64(len(data)) > s.maxSize {
		return nil, fmt.Errorf("%w: JWKS from %s is more than %d bytes", ErrKeySource, s.url, s.maxSize)
	}
	keys, err := ParseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("%w: JWKS from %s: %v", ErrKeySource, s.url, err)
	}
	return keys, nil
}

// ParseJWKS parses a JSON Web Key Set document and returns its usable
// signature-verification keys: keys meant for encryption ("use":"enc"),
// keys of unknown types and malformed keys are skipped, and private keys are
// reduced to their public halves. Symmetric ("oct") keys are kept; a
// [JWTValidator] uses them only for HMAC algorithms it is explicitly
// configured with. It fails when no usable key remains or the set has more
// than 256 keys.
func ParseJWKS(data []byte) ([]jose.JSONWebKey, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a JWKS document: %v", err)
	}
	if doc.Keys == nil {
		return nil, errors.New(`not a JWKS document: no "keys" array`)
	}
	if len(doc.Keys) > maxJWKSKeys {
		return nil, fmt.Errorf("JWKS has %d keys; at most %d are accepted", len(doc.Keys), maxJWKSKeys)
	}
	var keys []jose.JSONWebKey
	for _, raw := range doc.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			continue
		}
		keys = append(keys, k)
	}
	keys = usableKeys(keys)
	if len(keys) == 0 {
		return nil, fmt.Errorf("JWKS has no usable signature verification key (%d keys skipped)", len(doc.Keys))
	}
	return keys, nil
}

// usableKeys keeps valid verification keys, reducing private keys to their
// public halves.
func usableKeys(in []jose.JSONWebKey) []jose.JSONWebKey {
	out := make([]jose.JSONWebKey, 0, len(in))
	for _, k := range in {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if b, sym := k.Key.([]byte); sym {
			if len(b) > 0 {
				out = append(out, k)
			}
			continue
		}
		if !k.Valid() {
			continue
		}
		if !k.IsPublic() {
			k = k.Public()
			if !k.Valid() {
				continue
			}
		}
		out = append(out, k)
	}
	return out
}
