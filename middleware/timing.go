package middleware

import (
	"context"
	"time"

	"github.com/weftmcp/weft"
)

// Timing returns middleware that calls record after every request with the
// time its handler (and the middleware inside this one) took and what it
// returned; see [Outcome] to classify it. record runs on the request's
// goroutine before the result is encoded, so it should be quick (feed a
// histogram, not a network call).
func Timing(record func(ctx context.Context, req *weft.Request, d time.Duration, res weft.Result, err error)) weft.Middleware {
	return func(next weft.Handler) weft.Handler {
		if record == nil {
			return next
		}
		return func(ctx context.Context, req *weft.Request) (weft.Result, error) {
			start := time.Now()
			res, err := next(ctx, req)
			record(ctx, req, time.Since(start), res, err)
			return res, err
		}
	}
}
