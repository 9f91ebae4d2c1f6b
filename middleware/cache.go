package middleware

import (
	"container/list"
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// DefaultCacheEntries bounds a [Cache] whose CacheOptions.MaxEntries is 0.
const DefaultCacheEntries = 1024

// CacheOptions configure a [Cache].
type CacheOptions struct {
	// MaxEntries bounds the cached results; the least recently used go
	// first. Default DefaultCacheEntries.
	MaxEntries int
	// MaxEntryTTL caps how long a result is kept, whatever its hint says.
	// Default: no cap.
	MaxEntryTTL time.Duration
}

// Cache is a server-side response cache for the cacheable methods
// (server/discover, the four list methods and resources/read) that honours
// each result's caching hint: a result is kept for its ttlMs (a result with
// ttlMs 0 or no hint is not kept), and a private result (cacheScope
// "private") only for the same caller (partition and principal), while a
// public one is shared by the callers of the same partition (callers
// without a partition: of the same principal; anonymous callers with each
// other). Results are keyed by protocol version, method, target, the
// client's declared capabilities and the canonical params without _meta. Every catalog change the server
// learns of ([weft.Server.CatalogVersion]: a registration, a removal, a
// resource update, the fleet's events) invalidates the whole cache, so a
// client never gets a list older than a change it was told about. Retries
// of multi-round reads (inputResponses, requestState) and task steps pass
// through.
//
// A Cache is safe for concurrent use; one Cache may serve several servers.
type Cache struct {
	max    int
	maxTTL time.Duration

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     list.List // of *cacheEntry, most recent first
	hits    uint64
	misses  uint64
}

type cacheEntry struct {
	key     string
	res     weft.Result
	expires time.Time
}

// NewCache returns an empty cache.
func NewCache(o *CacheOptions) *Cache {
	var opts CacheOptions
	if o != nil {
		opts = *o
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultCacheEntries
	}
	return &Cache{max: opts.MaxEntries, maxTTL: opts.MaxEntryTTL, entries: map[string]*list.Element{}}
}

// CacheStats are a cache's counters.
type CacheStats struct {
	Entries      int
	Hits, Misses uint64
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Entries: len(c.entries), Hits: c.hits, Misses: c.misses}
}

// Purge drops every cached result.
func (c *Cache) Purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
	c.lru.Init()
}

// cacheable are the methods whose results carry caching hints.
func cacheable(method string) bool {
	switch method {
	case "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read":
		return true
	}
	return false
}

// Middleware returns the middleware that serves from and fills the cache.
func (c *Cache) Middleware() weft.Middleware {
	return func(next weft.Handler) weft.Handler {
		return func(ctx context.Context, req *weft.Request) (weft.Result, error) {
			if !cacheable(req.Method) || req.Task() != nil || req.Params.Has("inputResponses") || req.Params.Has("requestState") {
				return next(ctx, req)
			}
			base, ok := requestKey(req)
			if !ok {
				return next(ctx, req)
			}
			public, private := callerKeys(base, req.Identity)
			now := time.Now()
			if res, ok := c.get(now, public, private); ok {
				return res, nil
			}
			res, err := next(ctx, req)
			if err != nil {
				return res, err
			}
			hint, ok := weft.CacheHint(res)
			if !ok || hint.TTLMillis <= 0 {
				return res, nil
			}
			ttl := time.Duration(hint.TTLMillis) * time.Millisecond
			if c.maxTTL > 0 {
				ttl = min(ttl, c.maxTTL)
			}
			key := private
			if hint.Public {
				key = public
			}
			c.put(key, res, now.Add(ttl))
			return res, nil
		}
	}
}

// callerKeys extend a request's key with its caller: public is shared by
// the callers of one partition (callers without a partition: by one
// principal, since nothing else tells their authorization contexts apart;
// anonymous callers by each other), private by one principal of one
// partition.
func callerKeys(base string, id weft.Identity) (public, private string) {
	scope := "p:" + strconv.Itoa(len(id.Partition)) + ":" + id.Partition
	if id.Partition == "" {
		scope = "u:" + id.Principal
	}
	public = base + "\x00public\x00" + scope
	private = base + "\x00private\x00p:" + strconv.Itoa(len(id.Partition)) + ":" + id.Partition + "\x00" + id.Principal
	return public, private
}

// requestKey is the cache key of a request without its caller: the server's
// catalog version, the protocol version, the method, the target, the
// client's declared capabilities (results may depend on them) and the
// canonical params without _meta.
func requestKey(req *weft.Request) (string, bool) {
	params := req.Params
	if params.Kind() == exactjson.KindObject {
		params = params.Without("_meta")
	}
	b := make([]byte, 0, 128)
	if srv := req.Server(); srv != nil {
		b = strconv.AppendUint(b, srv.CatalogVersion(), 10)
		b = append(b, 0)
		b = append(b, srv.Implementation().Name...)
		b = append(b, 0)
	}
	b = append(b, req.ProtocolVersion...)
	b = append(b, 0)
	b = append(b, req.Method...)
	b = append(b, 0)
	b = append(b, req.Name...)
	b = append(b, 0)
	b, err := exactjson.AppendCanonical(b, req.ClientCapabilities)
	if err != nil {
		return "", false
	}
	b = append(b, 0)
	if b, err = exactjson.AppendCanonical(b, params); err != nil {
		return "", false
	}
	return string(b), true
}

// get returns the first fresh result of keys.
func (c *Cache) get(now time.Time, keys ...string) (weft.Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range keys {
		el, ok := c.entries[key]
		if !ok {
			continue
		}
		e := el.Value.(*cacheEntry)
		if !now.Before(e.expires) {
			c.lru.Remove(el)
			delete(c.entries, key)
			continue
		}
		c.lru.MoveToFront(el)
		c.hits++
		return e.res, true
	}
	c.misses++
	return nil, false
}

func (c *Cache) put(key string, res weft.Result, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*cacheEntry)
		e.res, e.expires = res, expires
		c.lru.MoveToFront(el)
		return
	}
	c.entries[key] = c.lru.PushFront(&cacheEntry{key: key, res: res, expires: expires})
	for len(c.entries) > c.max {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).key)
	}
}
