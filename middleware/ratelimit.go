package middleware

import (
	"context"

	"github.com/weftmcp/weft"
)

// ToolLimits configure [RateLimitTools].
type ToolLimits struct {
	// Tools maps tool names to the limiter of their calls (for example a
	// weft.NewTokenBucket per tool).
	Tools map[string]weft.RateLimiter
	// Default limits the calls of tools not in Tools; nil leaves them
	// unlimited.
	Default weft.RateLimiter
	// Key picks the caller's bucket within a tool's limiter. Default: the
	// identity's RateKey, else its partition, else its principal, else one
	// bucket for all anonymous callers.
	Key func(req *weft.Request) string
}

// RateLimitTools returns middleware that limits tools/call per tool and per
// caller, on top of the server-wide [weft.Options.RateLimiter]. A call over
// its limit is answered with the rate-limit error (HTTP 429 with
// Retry-After) before the tool's handler runs. Each retry of a multi-round
// call is a call of its own (a 2025-11-25 bridged call counts once per
// round); task steps are not limited (the call that created the task was).
func RateLimitTools(l ToolLimits) weft.Middleware {
	key := l.Key
	if key == nil {
		key = DefaultRateKey
	}
	return func(next weft.Handler) weft.Handler {
		return func(ctx context.Context, req *weft.Request) (weft.Result, error) {
			if req.Method != "tools/call" || req.Task() != nil {
				return next(ctx, req)
			}
			lim := l.Default
			if t, ok := l.Tools[req.Name]; ok {
				lim = t
			}
			if lim != nil {
				if ok, retry := lim.Allow(ctx, req.Name+"\x00"+key(req)); !ok {
					return nil, weft.RateLimited(retry)
				}
			}
			return next(ctx, req)
		}
	}
}

// DefaultRateKey is the bucket of a caller: the identity's RateKey, else
// its partition, else its principal, else "anonymous".
func DefaultRateKey(req *weft.Request) string {
	id := req.Identity
	switch {
	case id.RateKey != "":
		return "k:" + id.RateKey
	case id.Partition != "":
		return "p:" + id.Partition
	case id.Principal != "":
		return "u:" + id.Principal
	}
	return "anonymous"
}
