package middleware_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/middleware"
	"github.com/weftmcp/weft/wefttest"
)

// records is a slog.Handler that keeps records with their attributes.
type records struct {
	mu   sync.Mutex
	recs []map[string]string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	m := map[string]string{"msg": rec.Message, "level": rec.Level.String()}
	rec.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	r.mu.Lock()
	r.recs = append(r.recs, m)
	r.mu.Unlock()
	return nil
}

func (r *records) find(msg, key, value string) []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]string
	for _, m := range r.recs {
		if m["msg"] == msg && m[key] == value {
			out = append(out, m)
		}
	}
	return out
}

// byHeader admits every request as the principal and partition of X-User.
func byHeader(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
	u := r.Header.Get("X-User")
	return weft.Identity{Principal: u, Partition: u}, nil
}

func text(s string) *weft.CallToolResult {
	return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(s)}}
}

func newServer(t *testing.T, opts *weft.Options) *weft.Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(&records{})
	}
	s, err := weft.NewServer(weft.Implementation{Name: "mw-test", Version: "1"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	add := func(name string, h weft.ToolHandler) {
		t.Helper()
		if err := s.AddTool(weft.Tool{Name: name, Description: "test tool " + name}, h); err != nil {
			t.Fatal(err)
		}
	}
	add("ok", func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) { return text("fine"), nil })
	add("app-error", func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return nil, weft.NewError(4711, "out of stock")
	})
	add("broken", func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return nil, errors.New("database unreachable")
	})
	add("panics", func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		panicInTool()
		return nil, nil
	})
	return s
}

func panicInTool() { panic("tool exploded") }

func TestLogging(t *testing.T) {
	logs := &records{}
	s := newServer(t, &weft.Options{Admission: byHeader, Middleware: []weft.Middleware{middleware.Logging(slog.New(logs), slog.LevelInfo)}})
	c := wefttest.NewClient(t, s, as("alice"))
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "ok", nil); err != nil {
		t.Fatal(err)
	}
	_, _ = c.CallTool(ctx, "app-error", nil)
	_, _ = c.CallTool(ctx, "broken", nil)
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, outcome, code, level string
	}{
		{"ok", "complete", "", "INFO"},
		{"app-error", "error", "4711", "INFO"},
		{"broken", "internal_error", "-32603", "ERROR"},
	}
	for _, tc := range cases {
		got := logs.find("mcp request served", "name", tc.name)
		if len(got) != 1 {
			t.Fatalf("%s: %d log records, want 1: %v", tc.name, len(got), logs.recs)
		}
		r := got[0]
		if r["method"] != "tools/call" || r["principal"] != "alice" || r["partition"] != "alice" || r["outcome"] != tc.outcome ||
			r["code"] != tc.code || r["level"] != tc.level || r["protocol"] != weft.ProtocolVersion || r["duration"] == "" {
			t.Errorf("%s: record %v", tc.name, r)
		}
	}
	if r := logs.find("mcp request served", "name", "broken"); !strings.Contains(r[0]["err"], "database unreachable") {
		t.Errorf("the internal error's cause is not logged: %v", r[0])
	}
	// The client lists the tools before its first call (for the
	// Mcp-Param headers), and once more when asked.
	if got := logs.find("mcp request served", "method", "tools/list"); len(got) != 2 || got[0]["outcome"] != "complete" || got[1]["outcome"] != "complete" {
		t.Errorf("tools/list records %v", got)
	}
}

func TestTiming(t *testing.T) {
	type obs struct {
		method, name, outcome string
		d                     time.Duration
	}
	var mu sync.Mutex
	var got []obs
	s := newServer(t, &weft.Options{Middleware: []weft.Middleware{middleware.Timing(func(ctx context.Context, req *weft.Request, d time.Duration, res weft.Result, err error) {
		o, _ := middleware.Outcome(res, err)
		mu.Lock()
		got = append(got, obs{req.Method, req.Name, o, d})
		mu.Unlock()
	})}})
	s.AddTool(weft.Tool{Name: "slow", Description: "sleeps"}, func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		time.Sleep(20 * time.Millisecond)
		return text("done"), nil
	})
	c := wefttest.NewClient(t, s, nil)
	ctx := context.Background()
	if _, err := c.CallTool(ctx, "slow", nil); err != nil {
		t.Fatal(err)
	}
	_, _ = c.CallTool(ctx, "app-error", nil)
	if _, err := c.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The client probes with server/discover and lists the tools before
	// its first call.
	if len(got) != 5 || got[0].method != "server/discover" || got[1].method != "tools/list" {
		t.Fatalf("observations %v", got)
	}
	if got[2].method != "tools/call" || got[2].name != "slow" || got[2].outcome != "complete" || got[2].d < 20*time.Millisecond {
		t.Errorf("slow call observed as %+v", got[2])
	}
	if got[3].outcome != "error" || got[4].method != "server/discover" {
		t.Errorf("observed %+v", got)
	}
}

func TestRateLimitTools(t *testing.T) {
	limits := middleware.ToolLimits{Tools: map[string]weft.RateLimiter{"ok": weft.NewTokenBucket(0.0001, 2)}}
	s := newServer(t, &weft.Options{Admission: byHeader, Middleware: []weft.Middleware{middleware.RateLimitTools(limits)}})
	ctx := context.Background()
	alice := wefttest.NewClient(t, s, as("alice"))
	bob := wefttest.NewClient(t, s, as("bob"))
	// call returns the JSON-RPC error of a call, nil when it succeeded.
	call := func(c *client.Client, tool string) *client.RPCError {
		t.Helper()
		_, err := c.CallTool(ctx, tool, nil)
		var rerr *client.RPCError
		if err != nil && !errors.As(err, &rerr) {
			t.Fatal(err)
		}
		return rerr
	}
	for i := range 2 {
		if err := call(alice, "ok"); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	r := call(alice, "ok")
	if r == nil || weft.Code(r.Code) != weft.CodeRateLimited || r.HTTPStatus != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("third call: %#v", r)
	}
	// Another caller has a bucket of its own, and other tools are not limited.
	if err := call(bob, "ok"); err != nil {
		t.Fatalf("bob: %v", err)
	}
	for range 3 {
		if err := call(alice, "app-error"); err == nil || err.Code != 4711 {
			t.Fatalf("unlimited tool: %v", err)
		}
	}
	// A Default limits every other tool.
	s2 := newServer(t, &weft.Options{Middleware: []weft.Middleware{middleware.RateLimitTools(middleware.ToolLimits{Default: weft.NewTokenBucket(0.0001, 1)})}})
	c := wefttest.NewClient(t, s2, nil)
	if err := call(c, "ok"); err != nil {
		t.Fatal(err)
	}
	if err := call(c, "ok"); err == nil || weft.Code(err.Code) != weft.CodeRateLimited {
		t.Fatalf("default limit not applied: %v", err)
	}
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatalf("lists are not limited: %v", err)
	}
}

func TestRecover(t *testing.T) {
	var reported atomic.Pointer[string]
	var stack atomic.Pointer[[]byte]
	outer := 0
	s := newServer(t, &weft.Options{Middleware: []weft.Middleware{
		func(next weft.Handler) weft.Handler { // outside Recover: sees the error, not the panic
			return func(ctx context.Context, req *weft.Request) (weft.Result, error) {
				res, err := next(ctx, req)
				if err != nil {
					outer++
				}
				return res, err
			}
		},
		middleware.Recover(func(ctx context.Context, req *weft.Request, p any, st []byte) {
			v := req.Name + ": " + p.(string)
			reported.Store(&v)
			stack.Store(&st)
		}),
	}})
	c := wefttest.NewClient(t, s, nil)
	_, err := c.CallTool(context.Background(), "panics", nil)
	var r *client.RPCError
	if !errors.As(err, &r) || weft.Code(r.Code) != weft.CodeInternalError || r.Message != "Internal error" || r.HTTPStatus != 500 {
		t.Fatalf("panic answered with %v", err)
	}
	if p := reported.Load(); p == nil || *p != "panics: tool exploded" {
		t.Fatalf("reported %v", p)
	}
	if st := stack.Load(); st == nil || !strings.Contains(string(*st), "panicInTool") {
		t.Fatal("the stack does not show the panicking function")
	}
	if outer != 1 {
		t.Fatalf("the outer middleware saw %d errors", outer)
	}
	// With no reporter, the panic is logged with its stack.
	logs := &records{}
	prev := slog.Default()
	slog.SetDefault(slog.New(logs))
	t.Cleanup(func() { slog.SetDefault(prev) })
	s2 := newServer(t, &weft.Options{Middleware: []weft.Middleware{middleware.Recover(nil)}})
	_, _ = wefttest.NewClient(t, s2, nil).CallTool(context.Background(), "panics", nil)
	if got := logs.find("weft: handler panic", "name", "panics"); len(got) != 1 || !strings.Contains(got[0]["stack"], "panicInTool") {
		t.Fatalf("panic log %v", got)
	}
}

// cachedServer has a resource whose reads count, with the given hint.
func cachedServer(t *testing.T, cache *middleware.Cache, hint weft.CachePolicy, reads *atomic.Int32) *weft.Server {
	s := newServer(t, &weft.Options{Admission: byHeader, Middleware: []weft.Middleware{cache.Middleware()},
		Cache: &weft.CachePolicy{TTLMillis: 60_000, Public: true}})
	err := s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "file:///motd", Name: "motd"}, Cache: hint},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			n := reads.Add(1)
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{{URI: req.Name, Text: "read " + string(rune('0'+n))}}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCacheHonoursTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reads atomic.Int32
		cache := middleware.NewCache(nil)
		s := cachedServer(t, cache, weft.CachePolicy{TTLMillis: 1000, Public: true}, &reads)
		ctx := context.Background()
		c := wefttest.NewClient(t, s, as("alice"))
		if _, err := c.Discover(ctx); err != nil { // the client's era probe
			t.Fatal(err)
		}
		base := cache.Stats()
		read := func() string {
			t.Helper()
			r, err := c.ReadResource(ctx, "file:///motd")
			if err != nil {
				t.Fatal(err)
			}
			return r.Contents[0].Text
		}
		if a, b := read(), read(); a != "read 1" || b != "read 1" || reads.Load() != 1 {
			t.Fatalf("reads %q %q, handler ran %d times", a, b, reads.Load())
		}
		time.Sleep(999 * time.Millisecond)
		if got := read(); got != "read 1" {
			t.Fatalf("before the TTL: %q", got)
		}
		time.Sleep(time.Millisecond)
		if got := read(); got != "read 2" {
			t.Fatalf("after the TTL: %q", got)
		}
		if st := cache.Stats(); st.Hits-base.Hits != 2 || st.Misses-base.Misses != 2 {
			t.Fatalf("stats %+v, %+v before the reads", st, base)
		}
	})
}

func TestCacheScopes(t *testing.T) {
	ctx := context.Background()
	read := func(t *testing.T, c *client.Client) string {
		t.Helper()
		r, err := c.ReadResource(ctx, "file:///motd")
		if err != nil {
			t.Fatal(err)
		}
		return r.Contents[0].Text
	}
	t.Run("private results are per caller", func(t *testing.T) {
		var reads atomic.Int32
		s := cachedServer(t, middleware.NewCache(nil), weft.CachePolicy{TTLMillis: 60_000}, &reads)
		alice := wefttest.NewClient(t, s, as("alice"))
		bob := wefttest.NewClient(t, s, as("bob"))
		if a1, b1, a2 := read(t, alice), read(t, bob), read(t, alice); a1 != "read 1" || b1 != "read 2" || a2 != "read 1" {
			t.Fatalf("alice %q, bob %q, alice again %q", a1, b1, a2)
		}
	})
	t.Run("public results are shared", func(t *testing.T) {
		var reads atomic.Int32
		// Without admission partitions the read's public hint stands.
		s, err := weft.NewServer(weft.Implementation{Name: "pub"}, &weft.Options{Middleware: []weft.Middleware{middleware.NewCache(nil).Middleware()}})
		if err != nil {
			t.Fatal(err)
		}
		must(t, s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "file:///motd", Name: "motd"}, Cache: weft.CachePolicy{TTLMillis: 60_000, Public: true}},
			func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
				reads.Add(1)
				return &weft.ReadResourceResult{Contents: []weft.ResourceContents{{URI: req.Name, Text: "shared"}}}, nil
			}))
		for _, u := range []string{"alice", "bob", "carol"} {
			read(t, wefttest.NewClient(t, s, as(u)))
		}
		if reads.Load() != 1 {
			t.Fatalf("handler ran %d times for three callers", reads.Load())
		}
	})
	t.Run("ttl 0 is not cached", func(t *testing.T) {
		var reads atomic.Int32
		s := cachedServer(t, middleware.NewCache(nil), weft.CachePolicy{}, &reads)
		c := wefttest.NewClient(t, s, nil)
		if a, b := read(t, c), read(t, c); a != "read 1" || b != "read 2" {
			t.Fatalf("reads %q %q", a, b)
		}
	})
}

func TestCacheInvalidatedByCatalogChanges(t *testing.T) {
	var reads atomic.Int32
	cache := middleware.NewCache(nil)
	s := cachedServer(t, cache, weft.CachePolicy{TTLMillis: 60_000, Public: true}, &reads)
	ctx := context.Background()
	c := wefttest.NewClient(t, s, nil)
	names := func() []string {
		t.Helper()
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name)
		}
		return out
	}
	before := names()
	if again := names(); strings.Join(again, ",") != strings.Join(before, ",") || cache.Stats().Hits == 0 {
		t.Fatalf("the list was not served from the cache: %+v", cache.Stats())
	}
	must(t, s.AddTool(weft.Tool{Name: "new", Description: "added later"}, func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return text("new"), nil
	}))
	if after := names(); len(after) != len(before)+1 {
		t.Fatalf("a stale list after AddTool: %v", after)
	}
	if _, err := c.ReadResource(ctx, "file:///motd"); err != nil {
		t.Fatal(err)
	}
	s.NotifyResourceUpdated("file:///motd")
	r, err := c.ReadResource(ctx, "file:///motd")
	if err != nil {
		t.Fatal(err)
	}
	if r.Contents[0].Text != "read 2" {
		t.Fatalf("a stale read after NotifyResourceUpdated: %q", r.Contents[0].Text)
	}
}

// TestCacheBounded: past MaxEntries (DefaultCacheEntries when 0) the least
// recently used results go.
func TestCacheBounded(t *testing.T) {
	for _, tc := range []struct {
		max, want int
	}{{3, 3}, {0, middleware.DefaultCacheEntries}} {
		t.Run(strconv.Itoa(tc.max), func(t *testing.T) {
			cache := middleware.NewCache(&middleware.CacheOptions{MaxEntries: tc.max})
			s, err := weft.NewServer(weft.Implementation{Name: "bounded"}, &weft.Options{Middleware: []weft.Middleware{cache.Middleware()}})
			if err != nil {
				t.Fatal(err)
			}
			must(t, s.AddResourceTemplate(weft.ResourceTemplate{URITemplate: "file:///n/{n}", Name: "n", Cache: weft.CachePolicy{TTLMillis: 60_000, Public: true}},
				func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
					return &weft.ReadResourceResult{Contents: []weft.ResourceContents{{URI: req.Name, Text: req.URIParams()["n"]}}}, nil
				}))
			c := wefttest.NewClient(t, s, nil)
			read := func(i int) {
				t.Helper()
				if _, err := c.ReadResource(context.Background(), "file:///n/"+strconv.Itoa(i)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range tc.want + 7 {
				read(i)
			}
			if st := cache.Stats(); st.Entries != tc.want {
				t.Fatalf("entries %d, want %d", st.Entries, tc.want)
			}
			hits := cache.Stats().Hits
			read(tc.want + 6) // the most recent stays
			read(0)           // the least recent went
			if st := cache.Stats(); st.Hits != hits+1 {
				t.Errorf("hits %d after reading the newest and the oldest result, want %d", st.Hits, hits+1)
			}
		})
	}
}

// as is a client's options for a caller named by the X-User header.
func as(user string) *wefttest.Options {
	return &wefttest.Options{Header: http.Header{"X-User": {user}}}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCacheKeyedByCallerAndCapabilities: a public result is shared only
// within the caller's partition (callers without a partition: the same
// principal), and no result is served to a request declaring other client
// capabilities or another protocol version than the one it was made for.
func TestCacheKeyedByCallerAndCapabilities(t *testing.T) {
	ctx := context.Background()
	principalOnly := func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
		return weft.Identity{Principal: r.Header.Get("X-User")}, nil
	}
	var reads atomic.Int32
	s, err := weft.NewServer(weft.Implementation{Name: "keyed"}, &weft.Options{Admission: principalOnly,
		Middleware: []weft.Middleware{middleware.NewCache(nil).Middleware()}})
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.AddResource(weft.Resource{ResourceInfo: weft.ResourceInfo{URI: "file:///me", Name: "me"}, Cache: weft.CachePolicy{TTLMillis: 60_000, Public: true}},
		func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
			reads.Add(1)
			text := "for " + req.Identity.Principal
			if req.ClientSupports(weft.Form(weft.ConditionalCapability)) {
				text += " with forms"
			}
			return &weft.ReadResourceResult{Contents: []weft.ResourceContents{{URI: req.Name, Text: text}}}, nil
		}))
	read := func(c *client.Client) string {
		t.Helper()
		r, err := c.ReadResource(ctx, "file:///me")
		if err != nil {
			t.Fatal(err)
		}
		return r.Contents[0].Text
	}
	forms := as("alice")
	forms.Client.Capabilities = exactjson.Object(exactjson.Field("elicitation", exactjson.Object()))
	alice := wefttest.NewClient(t, s, as("alice"))
	aliceForms := wefttest.NewClient(t, s, forms)
	bob := wefttest.NewClient(t, s, as("bob"))
	for _, c := range []struct {
		who    string
		client *client.Client
		want   string
	}{
		{"alice", alice, "for alice"},
		{"bob after alice", bob, "for bob"},
		{"alice with forms", aliceForms, "for alice with forms"},
		{"alice again", alice, "for alice"},
	} {
		if got := read(c.client); got != c.want {
			t.Errorf("%s: %q, want %q", c.who, got, c.want)
		}
	}
	if n := reads.Load(); n != 3 {
		t.Errorf("the handler ran %d times, want 3 (alice again is a hit)", n)
	}
}
