package weft

import (
	"context"
	"errors"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/addrkey"
)

// Defaults of the overload controls in [Options].
const (
	defaultMaxConcurrent = 64
	defaultMaxQueue      = 256
	// defaultMaxConcurrentPerIdentity is Options.MaxConcurrentPerIdentity
	// at the default MaxConcurrent: half of it, so one caller never holds
	// more than half the handler slots and the other half stays free for
	// everyone else. When MaxConcurrent is set, the default is half of it.
	defaultMaxConcurrentPerIdentity = defaultMaxConcurrent / 2
	// defaultMaxQueuePerIdentity is Options.MaxQueuePerIdentity at the
	// default MaxQueue: a quarter of it. When MaxQueue is set, the default
	// is a quarter of it.
	defaultMaxQueuePerIdentity = defaultMaxQueue / 4
	defaultQueueTimeout        = 5 * time.Second
	defaultRequestTimeout      = 60 * time.Second
)

// RateLimiter decides whether a request may proceed. Allow is called once per
// admitted request with the identity's rate key (RateKey, else Partition,
// else Principal, else the remote host; "stdio" on stdio), so each caller
// is charged to its own share; a denial answers HTTP 429 with Retry-After
// and JSON-RPC code -31999. Charges are never refunded.
type RateLimiter interface {
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration)
}

// TokenBucket is the default [RateLimiter]: one bucket per key refilled at
// Rate tokens per second up to Burst. At most MaxKeys buckets are kept; when
// full, buckets that have refilled completely are dropped first.
type TokenBucket struct {
	Rate    float64
	Burst   int
	MaxKeys int
	Now     func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// defaultTokenBucketMaxKeys is the number of buckets NewTokenBucket keeps
// (clients choose the keys through their addresses, so the map is bounded).
const defaultTokenBucketMaxKeys = 65536

// NewTokenBucket returns a token-bucket limiter keeping at most 65,536
// buckets (TokenBucket.MaxKeys).
func NewTokenBucket(perSecond float64, burst int) *TokenBucket {
	return &TokenBucket{Rate: perSecond, Burst: burst, MaxKeys: defaultTokenBucketMaxKeys}
}

// Allow implements RateLimiter.
func (tb *TokenBucket) Allow(ctx context.Context, key string) (bool, time.Duration) {
	now := time.Now()
	if tb.Now != nil {
		now = tb.Now()
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.buckets == nil {
		tb.buckets = map[string]*bucket{}
	}
	b, ok := tb.buckets[key]
	if !ok {
		if tb.MaxKeys > 0 && len(tb.buckets) >= tb.MaxKeys {
			tb.evict(now)
		}
		b = &bucket{tokens: float64(tb.Burst), last: now}
		tb.buckets[key] = b
	}
	b.tokens = math.Min(float64(tb.Burst), b.tokens+now.Sub(b.last).Seconds()*tb.Rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	if tb.Rate <= 0 {
		return false, time.Minute
	}
	wait := time.Duration((1 - b.tokens) / tb.Rate * float64(time.Second))
	return false, max(wait, time.Second)
}

// evict drops full buckets, or (when none is full) an arbitrary half.
func (tb *TokenBucket) evict(now time.Time) {
	for k, b := range tb.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*tb.Rate >= float64(tb.Burst) {
			delete(tb.buckets, k)
		}
	}
	if len(tb.buckets) >= tb.MaxKeys {
		n := 0
		for k := range tb.buckets {
			if n >= tb.MaxKeys/2 {
				break
			}
			delete(tb.buckets, k)
			n++
		}
	}
}

// gate bounds concurrent handlers with a bounded queue, shared fairly among
// the callers' fairness keys (fairKeyOf): each key runs at most perKey
// handlers at once and queues at most queuePerKey requests, and a freed
// slot goes to the queued key running the fewest handlers, among equals
// the one served longest ago (round-robin, one request per turn), so one
// key's backlog never waits in front of another key's first request.
// When the whole queue is full, a key queueing less than the key with the
// longest queue takes the newest place of that one (which is answered
// busy): a flood is refused before anyone else is.
type gate struct {
	mu                    sync.Mutex
	max, perKey           int
	queueMax, queuePerKey int
	timeout               time.Duration
	active, queued        int
	tenants               map[fairKey]*tenant
	// ring holds the tenants with queued requests; turn counts the slots
	// given (tenant.served is the turn of a tenant's latest).
	ring []*tenant
	turn uint64
	free []*tenant // reset tenants, reused so that a new caller does not allocate
}

// fairKey is what the gate shares slots by: the partition, else the
// principal, else the transport's identity of an anonymous caller (the
// remote host over HTTP; one key for stdio, which is one client). A struct,
// not a concatenated string, so that computing it does not allocate.
type fairKey struct {
	kind byte // 'p' partition, 'u' principal, 'a' remote host, 's' stdio
	s    string
}

// fairKeyOf is the fairness key of a request (see fairKey).
func fairKeyOf(id Identity, remoteAddr string) fairKey {
	switch {
	case id.Partition != "":
		return fairKey{'p', id.Partition}
	case id.Principal != "":
		return fairKey{'u', id.Principal}
	case remoteAddr != "":
		return fairKey{'a', remoteHost(remoteAddr)}
	}
	return fairKey{kind: 's'}
}

// remoteHost is the network identity of a remote address (host:port): the
// host of an IPv4 address (a substring: no allocation on the hot path), and
// for IPv6 its /64 prefix as the 2025 sessions count it (addrkey.Of), so
// that one client cannot take a share per address of its /64.
func remoteHost(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		h = addr
	}
	if strings.Contains(h, ":") {
		if o := addrkey.Of(h); o != "" {
			return o
		}
	}
	return h
}

// String renders the key for rate limiting and logs.
func (k fairKey) String() string {
	if k.kind == 's' {
		return "stdio"
	}
	return string(k.kind) + ":" + k.s
}

// tenant is one fairness key's share of the gate.
type tenant struct {
	key     fairKey
	running int
	served  uint64    // the gate's turn when the tenant last got a slot
	queue   []*waiter // FIFO
	inRing  bool
}

// waiter is one queued request.
type waiter struct {
	t     *tenant
	ready chan struct{} // closed when state leaves waiting
	state waitState
}

type waitState uint8

const (
	waiting waitState = iota
	granted           // the slot is the waiter's
	evicted           // pushed out of a full queue: busy
)

func newGate(concurrent, perKey, queue, queuePerKey int, timeout time.Duration) *gate {
	return &gate{max: concurrent, perKey: perKey, queueMax: queue, queuePerKey: queuePerKey, timeout: timeout,
		tenants: map[fairKey]*tenant{}}
}

var errBusy = errors.New("weft: server busy")

// acquire takes a slot for key, waiting in key's queue when none is free
// or key already runs its share. The returned tenant is given back to
// release.
func (g *gate) acquire(ctx context.Context, key fairKey) (*tenant, error) {
	g.mu.Lock()
	t := g.tenants[key]
	if t == nil {
		t = g.tenant(key)
	}
	if g.active < g.max && t.running < g.perKey && len(t.queue) == 0 {
		g.take(t)
		g.mu.Unlock()
		return t, nil
	}
	if len(t.queue) >= g.queuePerKey || g.queued >= g.queueMax && !g.pushOut(len(t.queue)) {
		g.drop(t)
		g.mu.Unlock()
		return nil, errBusy
	}
	w := &waiter{t: t, ready: make(chan struct{})}
	t.queue = append(t.queue, w)
	g.queued++
	if !t.inRing {
		t.inRing = true
		g.ring = append(g.ring, t)
	}
	g.mu.Unlock()

	timer := time.NewTimer(g.timeout)
	var err error
	select {
	case <-w.ready:
	case <-timer.C:
		err = errBusy
	case <-ctx.Done():
		err = ctx.Err()
	}
	timer.Stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	switch w.state {
	case granted: // granted as it gave up: the slot is taken all the same
		return t, nil
	case evicted:
		return nil, errBusy
	}
	i := slices.Index(t.queue, w)
	t.queue = slices.Delete(t.queue, i, i+1)
	g.queued--
	if len(t.queue) == 0 {
		g.unring(t)
	}
	g.drop(t)
	return nil, err
}

// release gives back the slot of t and hands free slots to the queue.
func (g *gate) release(t *tenant) {
	g.mu.Lock()
	t.running--
	g.active--
	if len(g.ring) > 0 {
		g.grant()
	}
	g.drop(t)
	g.mu.Unlock()
}

// grant gives free slots to queued requests, one at a time to the queued
// tenant running the fewest handlers, among equals the one served longest
// ago, skipping tenants that run their share: a tenant's first request goes
// before the backlog of tenants already running, and tenants with equal
// shares take turns.
func (g *gate) grant() {
	for g.active < g.max && len(g.ring) > 0 {
		pick := -1
		for i, t := range g.ring {
			if t.running >= g.perKey {
				continue
			}
			if pick < 0 || t.running < g.ring[pick].running || t.running == g.ring[pick].running && t.served < g.ring[pick].served {
				pick = i
			}
		}
		if pick < 0 {
			return
		}
		t := g.ring[pick]
		w := t.queue[0]
		t.queue[0] = nil
		t.queue = t.queue[1:]
		g.queued--
		g.take(t)
		w.state = granted
		close(w.ready)
		if len(t.queue) == 0 {
			g.unring(t)
		}
	}
}

// take gives t a slot.
func (g *gate) take(t *tenant) {
	t.running++
	g.active++
	g.turn++
	t.served = g.turn
}

// pushOut makes room in a full queue for a tenant queueing mine requests:
// the newest request of the tenant with the longest queue, if that queue
// is longer than mine+1, is answered busy. It reports whether it did.
func (g *gate) pushOut(mine int) bool {
	var longest *tenant
	for _, t := range g.ring {
		if longest == nil || len(t.queue) > len(longest.queue) {
			longest = t
		}
	}
	if longest == nil || len(longest.queue) <= mine+1 {
		return false
	}
	last := len(longest.queue) - 1
	w := longest.queue[last]
	longest.queue[last] = nil
	longest.queue = longest.queue[:last]
	g.queued--
	w.state = evicted
	close(w.ready)
	return true // longest keeps at least one queued request: it stays in the ring
}

// unring takes t, whose queue is empty, out of the ring.
func (g *gate) unring(t *tenant) {
	if !t.inRing {
		return
	}
	t.inRing = false
	i := slices.Index(g.ring, t)
	g.ring = slices.Delete(g.ring, i, i+1)
}

// tenant registers a tenant for key.
func (g *gate) tenant(key fairKey) *tenant {
	var t *tenant
	if n := len(g.free); n > 0 {
		t, g.free = g.free[n-1], g.free[:n-1]
	} else {
		t = &tenant{}
	}
	t.key = key
	g.tenants[key] = t
	return t
}

// drop forgets t once it runs and queues nothing, unless the gate knows
// few callers (at most maxIdleTenants): then t stays, so that a caller's
// next request finds it without a map insertion.
func (g *gate) drop(t *tenant) {
	if t.running > 0 || len(t.queue) > 0 || len(g.tenants) <= maxIdleTenants {
		return
	}
	delete(g.tenants, t.key)
	if len(g.free) < maxIdleTenants {
		*t = tenant{queue: t.queue[:0]}
		g.free = append(g.free, t)
	}
}

// maxIdleTenants bounds the idle per-caller records the gate keeps: in its
// map while it knows at most this many callers, and reset for reuse.
const maxIdleTenants = 64

// counts reports the running and queued requests (metrics).
func (g *gate) counts() (active, queued int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.active, g.queued
}

func busyReply() reply {
	e := withFault(protocolError(CodeInternalError, "Server busy", exactjson.Value{}), faultUnavailable)
	e.retryAfter = time.Second
	return errReply(ID{}, e)
}

func deadlineReply() reply {
	return reply{err: withFault(protocolError(CodeInternalError, "Request deadline exceeded", exactjson.Value{}), faultDeadline), outcome: OutcomeDeadlineExceeded}
}

// rateKey is the key a RateLimiter charges: Identity.RateKey, else the
// fairness key (partition, principal, remote host, stdio).
func rateKey(id Identity, remoteAddr string) string {
	if id.RateKey != "" {
		return id.RateKey
	}
	return fairKeyOf(id, remoteAddr).String()
}
