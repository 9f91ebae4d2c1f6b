package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func TestJWKSURLRequiresHTTPS(t *testing.T) {
	for _, u := range []string{"http://auth.example.com/jwks", "ftp://x/jwks", "/jwks", "https://user:pw@auth.example.com/jwks"} {
		if _, err := JWKSURL(u, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("JWKSURL(%q) = %v, want ErrConfig", u, err)
		}
	}
	for _, u := range []string{"https://auth.example.com/jwks", "http://127.0.0.1:1/jwks", "http://localhost/jwks", "http://[::1]/jwks"} {
		if _, err := JWKSURL(u, nil); err != nil {
			t.Errorf("JWKSURL(%q) = %v", u, err)
		}
	}
	if _, err := JWKSURL("https://a.example.com", &JWKSOptions{RefreshInterval: -1}); err == nil {
		t.Error("negative interval accepted")
	}
	if _, err := JWKSURL("https://a.example.com", &JWKSOptions{MinRefreshInterval: -1}); err == nil {
		t.Error("negative min refresh accepted")
	}
}

func TestRemoteJWKSCacheAndRefresh(t *testing.T) {
	k1, k2 := newECKey(t, "k1"), newEdKey(t, "k2")
	srv := newJWKSServer(t, k1)
	clk := newClock()
	src, err := JWKSURL(srv.URL, &JWKSOptions{Client: srv.Client(), RefreshInterval: time.Minute, Now: clk.Now, MinRefreshInterval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys, err := src.Keys(ctx)
	if err != nil || len(keys) != 1 || keys[0].KeyID != "k1" {
		t.Fatalf("Keys = %v, %v", keys, err)
	}
	srv.setKeys(k1, k2)
	keys, _ = src.Keys(ctx)
	if len(keys) != 1 || srv.fetches.Load() != 1 {
		t.Fatalf("cache not used: %d keys, %d fetches", len(keys), srv.fetches.Load())
	}
	keys, _ = src.Refresh(ctx) // rate limited
	if len(keys) != 1 || srv.fetches.Load() != 1 {
		t.Fatalf("refresh not rate limited: %d keys, %d fetches", len(keys), srv.fetches.Load())
	}
	clk.Advance(11 * time.Second)
	keys, _ = src.Refresh(ctx)
	if len(keys) != 2 || srv.fetches.Load() != 2 {
		t.Fatalf("refresh: %d keys, %d fetches", len(keys), srv.fetches.Load())
	}
	// After the refresh interval, Keys fetches again; when that fails the
	// last good set stays in use.
	srv.setStatus(http.StatusBadGateway)
	clk.Advance(2 * time.Minute)
	keys, err = src.Keys(ctx)
	if err != nil || len(keys) != 2 || srv.fetches.Load() != 3 {
		t.Fatalf("stale keys: %d keys, %v, %d fetches", len(keys), err, srv.fetches.Load())
	}
	// Failed fetches are rate limited too.
	for i := 0; i < 5; i++ {
		_, _ = src.Keys(ctx)
	}
	if srv.fetches.Load() != 3 {
		t.Errorf("failing endpoint hammered: %d fetches", srv.fetches.Load())
	}
}

// roundTripFunc is an http.RoundTripper in memory (usable in a synctest
// bubble, unlike a loopback server).
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRemoteJWKSConcurrentFetchesShareOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newECKey(t, "k")
		set, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k.pub}})
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		var fetches atomic.Int32
		hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			fetches.Add(1)
			<-release
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewReader(set)), Request: r}, nil
		})}
		src, err := JWKSURL("https://auth.example.com/jwks", &JWKSOptions{Client: hc})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for range 16 {
			wg.Go(func() {
				keys, err := src.Keys(context.Background())
				if err == nil && len(keys) != 1 {
					err = errors.New("wrong key count")
				}
				errs <- err
			})
		}
		synctest.Wait() // every caller waits: one in the fetch, the others for it
		if n := fetches.Load(); n != 1 {
			t.Errorf("%d fetches in flight for 16 concurrent callers, want 1", n)
		}
		close(release)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if n := fetches.Load(); n != 1 {
			t.Errorf("%d fetches for 16 concurrent callers, want 1", n)
		}
	})
}

func TestRemoteJWKSFailures(t *testing.T) {
	k := newECKey(t, "k")
	good, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k.pub}})
	cases := []struct {
		name    string
		handler http.HandlerFunc
		maxSize int64
		timeout time.Duration
		want    string
	}{
		{"status", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) }, 0, 0, "HTTP status 404"},
		{"too large", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(good) }, 10, 0, "more than"},
		{"too large streamed", func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush() // no Content-Length
			_, _ = w.Write([]byte(`{"keys":[` + strings.Repeat(" ", 4096) + `]}`))
		}, 1000, 0, "more than"},
		{"content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write(good)
		}, 0, 0, "Content-Type"},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("hello")) }, 0, 0, "not a JWKS"},
		{"no keys", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"keys":[]}`)) }, 0, 0, "no usable"},
		{"only encryption keys", func(w http.ResponseWriter, r *http.Request) {
			enc := k.pub
			enc.Use = "enc"
			b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{enc}})
			_, _ = w.Write(b)
		}, 0, 0, "no usable"},
		{"timeout", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		}, 0, 100 * time.Millisecond, "fetch JWKS"},
		{"redirect to plain http elsewhere", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://jwks.example.com/keys", http.StatusFound)
		}, 0, 0, "redirect refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			c := srv.Client()
			c.Timeout = tc.timeout
			src, err := JWKSURL(srv.URL, &JWKSOptions{Client: c, MaxSize: tc.maxSize})
			if err != nil {
				t.Fatal(err)
			}
			_, err = src.Keys(context.Background())
			if !errors.Is(err, ErrKeySource) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrKeySource mentioning %q", err, tc.want)
			}
		})
	}
}

func TestParseJWKSSkipsUnusableKeys(t *testing.T) {
	k := newRSAKey(t, "rsa")
	priv := jose.JSONWebKey{Key: newECKey(t, "ecpriv").priv, KeyID: "ecpriv"}
	pb, _ := json.Marshal(priv)
	kb, _ := json.Marshal(k.pub)
	doc := `{"keys":[` + string(kb) + `,` + string(pb) + `,{"kty":"XYZ","kid":"odd"},{"kty":"RSA","kid":"broken","n":"!!","e":"AQAB"}]}`
	keys, err := ParseJWKS([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Fatalf("%d keys, want 2", len(keys))
	}
	for _, key := range keys {
		if !key.IsPublic() {
			t.Errorf("key %s is private", key.KeyID)
		}
	}
	if _, err := ParseJWKS([]byte(`{"nokeys":1}`)); err == nil {
		t.Error("document without keys accepted")
	}
}

func TestJWKSFile(t *testing.T) {
	k1, k2 := newECKey(t, "k1"), newEdKey(t, "k2")
	dir := t.TempDir()
	p := filepath.Join(dir, "jwks.json")
	write := func(keys ...*testKey) {
		var set jose.JSONWebKeySet
		for _, k := range keys {
			set.Keys = append(set.Keys, k.pub)
		}
		b, _ := json.Marshal(set)
		if err := os.WriteFile(p+".tmp", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
	}
	write(k1)
	clk := newClock()
	src, err := JWKSFile(p, &JWKSOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	write(k1, k2)
	keys, _ := src.Refresh(context.Background())
	if len(keys) != 1 {
		t.Fatalf("refresh not rate limited: %d keys", len(keys))
	}
	clk.Advance(time.Minute)
	keys, err = src.Refresh(context.Background())
	if err != nil || len(keys) != 2 {
		t.Fatalf("after rotation: %d keys, %v", len(keys), err)
	}
	// A validator picks up the rotated key through the file.
	now := clk.Now()
	v := &JWTValidator{Issuer: testIssuer, Audience: testResource, JWKS: src, Now: clk.Now}
	if _, err := v.Validate(context.Background(), sign(t, k2, claimsAt(now), signOpts{})); err != nil {
		t.Errorf("token signed by the file's key: %v", err)
	}

	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := JWKSFile(p, nil); err == nil || !strings.Contains(err.Error(), "write") {
		t.Errorf("world-writable JWKS file: %v", err)
	}
}
