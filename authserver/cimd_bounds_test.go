package authserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCIMDFetchBounds: authorizations naming many new client metadata
// documents at once fetch at most MaxConcurrentFetches of them at a time;
// concurrent requests for one document share one fetch; a document that
// failed is not fetched again for CIMDFailureTTL, and then is.
func TestCIMDFetchBounds(t *testing.T) {
	var cur, peak, total atomic.Int64
	perPath := sync.Map{}
	release := make(chan struct{})
	var base string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		defer cur.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		total.Add(1)
		c, _ := perPath.LoadOrStore(r.URL.Path, new(atomic.Int64))
		c.(*atomic.Int64).Add(1)
		if strings.HasPrefix(r.URL.Path, "/missing") {
			http.NotFound(w, r)
			return
		}
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, cimdDoc(base+r.URL.Path, "https://client.example/cb"))
	}))
	defer srv.Close()
	base = srv.URL
	st, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "as.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	f, err := newCIMDFetcher(CIMDConfig{AllowHTTP: true, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		MaxConcurrentFetches: 4, Timeout: 30 * time.Second}, st, now)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// 24 new documents and 16 requests for one more, all at once.
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		path := fmt.Sprintf("/c%d.json", i)
		if i >= 24 {
			path = "/shared.json"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.client(ctx, base+path); err != nil {
				errs <- fmt.Errorf("%s: %w", path, err)
			}
		}()
	}
	// Let the fetches pile up at the slots, then serve them.
	for cur.Load() < 4 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if p := peak.Load(); p > 4 {
		t.Errorf("%d fetches at once, bound 4", p)
	}
	if c, _ := perPath.Load("/shared.json"); c.(*atomic.Int64).Load() != 1 {
		t.Errorf("the shared document was fetched %d times, want once", c.(*atomic.Int64).Load())
	}
	if n := total.Load(); n != 25 {
		t.Errorf("%d fetches, want 25", n)
	}

	// A missing document: fetched once, refused from memory until
	// CIMDFailureTTL has passed.
	for range 5 {
		if _, err := f.client(ctx, base+"/missing.json"); !errors.Is(err, ErrCIMDFetch) {
			t.Fatalf("missing document: %v, want ErrCIMDFetch", err)
		}
	}
	if c, _ := perPath.Load("/missing.json"); c.(*atomic.Int64).Load() != 1 {
		t.Errorf("the missing document was fetched %d times within the failure TTL, want once", c.(*atomic.Int64).Load())
	}
	clock.Add(int64(CIMDFailureTTL + time.Second))
	_, _ = f.client(ctx, base+"/missing.json")
	if c, _ := perPath.Load("/missing.json"); c.(*atomic.Int64).Load() != 2 {
		t.Errorf("the missing document was fetched %d times after the failure TTL, want twice", c.(*atomic.Int64).Load())
	}
}
