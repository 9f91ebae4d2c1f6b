package weft

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// Defaults of the overload controls in [Options].
const (
	DefaultMaxConcurrent  = 64
	DefaultMaxQueue       = 256
	DefaultQueueTimeout   = 5 * time.Second
	DefaultRequestTimeout = 60 * time.Second
)

// RateLimiter decides whether a request may proceed. Allow is called once per
// admitted request with the identity's rate key (RateKey, else Partition,
// else the remote address); a denial answers HTTP 429 with Retry-After and
// JSON-RPC code -31999. Charges are never refunded.
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

// DefaultTokenBucketMaxKeys is the number of buckets NewTokenBucket keeps
// (clients choose the keys through their addresses, so the map is bounded).
const DefaultTokenBucketMaxKeys = 65536

// NewTokenBucket returns a token-bucket limiter keeping at most
// DefaultTokenBucketMaxKeys buckets.
func NewTokenBucket(perSecond float64, burst int) *TokenBucket {
	return &TokenBucket{Rate: perSecond, Burst: burst, MaxKeys: DefaultTokenBucketMaxKeys}
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

// gate bounds concurrent handlers with a bounded queue.
type gate struct {
	slots   chan struct{}
	waiting chan struct{}
	timeout time.Duration
}

func newGate(concurrent, queue int, timeout time.Duration) *gate {
	return &gate{slots: make(chan struct{}, concurrent), waiting: make(chan struct{}, queue), timeout: timeout}
}

var errBusy = errors.New("weft: server busy")

// acquire takes a slot, waiting in the queue when none is free.
func (g *gate) acquire(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case g.waiting <- struct{}{}:
	default:
		return errBusy // the queue is full
	}
	defer func() { <-g.waiting }()
	t := time.NewTimer(g.timeout)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-t.C:
		return errBusy
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) release() { <-g.slots }

func busyReply() reply {
	e := withStatus(protocolError(CodeInternalError, "Server busy", exactjson.Value{}), http.StatusServiceUnavailable)
	e.retryAfter = time.Second
	return errReply(ID{}, e)
}

func deadlineReply() reply {
	return reply{err: withStatus(protocolError(CodeInternalError, "Request deadline exceeded", exactjson.Value{}), http.StatusGatewayTimeout), outcome: OutcomeDeadlineExceeded}
}

func rateKey(id Identity, remoteAddr string) string {
	switch {
	case id.RateKey != "":
		return id.RateKey
	case id.Partition != "":
		return "p:" + id.Partition
	case remoteAddr != "":
		if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
			return "a:" + h
		}
		return "a:" + remoteAddr
	}
	return "stdio"
}
