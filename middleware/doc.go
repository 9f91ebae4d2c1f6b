// Package middleware holds the [weft.Middleware] that servers otherwise write
// themselves: request logging ([Logging]), timing ([Timing]), per-tool rate
// limits ([RateLimitTools]), a response cache for discovery, list and read
// methods that honours the caching hints ([Cache]) and panic recovery with
// the stack ([Recover]).
//
// Middleware wrap the handler of every method of both protocol eras and
// every step of a durable task. [weft.Options.Middleware] lists them
// outermost first, so
//
//	weft.Options{Middleware: []weft.Middleware{
//		middleware.Recover(nil),
//		middleware.Logging(logger, slog.LevelInfo),
//		middleware.RateLimitTools(limits),
//		cache.Middleware(),
//	}}
//
// runs Recover first and the cache last, next to the method's handler. A
// request passes, in this order: the transport; parsing and the protocol
// checks (required _meta, HTTP headers, version, method, target name);
// admission; the Observer; the server-wide rate limiter; the concurrency
// gate and the request deadline; the handler span; the framework's own panic
// recovery; these middleware, outermost first; and the method's handler,
// which checks its target, arguments, capabilities and request state before
// it calls the application. A middleware therefore sees admitted requests
// only, with the identity set, and sees the requests the method rejects as
// errors. Put Recover outermost to catch panics in the other middleware;
// put the cache innermost (after the rate limits) so that cached answers
// are still counted, or outermost to let them bypass the limits.
//
// Results are shared: a middleware may return a different result, but must
// not modify one in place (a cached result is returned to many requests).
//
// A subscriptions/listen stream over HTTP/1.1 is detached from its request
// once acknowledged: next returns then, with a *weft.EmptyResult carrying
// the subscription id, and Logging and Timing record the request as
// complete at that moment; what a middleware returns for it is not sent, as
// the stream goes on without it. Elsewhere (HTTP/2, TLS, stdio, a wrapped
// ResponseWriter) next returns when the stream ends. See
// docs/architecture.md.
package middleware
