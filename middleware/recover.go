package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/weftmcp/weft"
)

// Recover returns middleware that turns a panic in the middleware inside it
// or in a handler into the error the client sees as "Internal error", and
// calls report with the panic value and the goroutine's stack. A nil report
// logs them with slog.Default() at slog.LevelError.
//
// The server recovers panics itself too (and logs their stack); Recover is
// for reporting them elsewhere (an error tracker) and for catching them
// before middleware outside it runs on.
func Recover(report func(ctx context.Context, req *weft.Request, panicValue any, stack []byte)) weft.Middleware {
	return func(next weft.Handler) weft.Handler {
		return func(ctx context.Context, req *weft.Request) (res weft.Result, err error) {
			defer func() {
				if p := recover(); p != nil {
					stack := debug.Stack()
					if report != nil {
						report(ctx, req, p, stack)
					} else {
						attrs := []any{"method", req.Method, "name", req.Name, "panic", p, "stack", string(stack)}
						if t := req.Task(); t != nil {
							attrs = append(attrs, "task", t.ID)
						}
						slog.Default().ErrorContext(ctx, "weft: handler panic", attrs...)
					}
					res, err = nil, fmt.Errorf("middleware: recovered panic: %v", p)
				}
			}()
			return next(ctx, req)
		}
	}
}
