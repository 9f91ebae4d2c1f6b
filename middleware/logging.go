package middleware

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/weftmcp/weft"
)

// Logging returns middleware that logs every request once it has been
// served, at level (and failures the client sees as "Internal error" at
// slog.LevelError): the method, the target name, the caller's principal and
// partition, the protocol version, a task step's task id, the outcome and
// the duration. Nothing of the params or the result is logged. A nil logger
// is slog.Default().
func Logging(logger *slog.Logger, level slog.Level) weft.Middleware {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next weft.Handler) weft.Handler {
		return func(ctx context.Context, req *weft.Request) (weft.Result, error) {
			start := time.Now()
			res, err := next(ctx, req)
			lv := level
			attrs := make([]slog.Attr, 0, 10)
			attrs = append(attrs, slog.String("method", req.Method))
			if req.Name != "" {
				attrs = append(attrs, slog.String("name", req.Name))
			}
			if p := req.Identity.Principal; p != "" {
				attrs = append(attrs, slog.String("principal", p))
			}
			if p := req.Identity.Partition; p != "" {
				attrs = append(attrs, slog.String("partition", p))
			}
			attrs = append(attrs, slog.String("protocol", req.ProtocolVersion))
			if t := req.Task(); t != nil {
				attrs = append(attrs, slog.String("task", t.ID))
			}
			outcome, code := Outcome(res, err)
			attrs = append(attrs, slog.String("outcome", outcome))
			if code != 0 {
				attrs = append(attrs, slog.Int("code", int(code)))
			}
			if outcome == "internal_error" {
				lv = slog.LevelError
				attrs = append(attrs, slog.String("err", err.Error()))
			}
			attrs = append(attrs, slog.Duration("duration", time.Since(start)))
			logger.LogAttrs(ctx, lv, "mcp request served", attrs...)
			return res, err
		}
	}
}

// Outcome names how a handler's return ends the request, as middleware
// sees it: "complete", "input_required", "task", "cancelled" (the client
// went away), "error" with the JSON-RPC code of an *weft.Error, or
// "internal_error" for any other error (the client sees -32603).
func Outcome(res weft.Result, err error) (outcome string, code weft.Code) {
	if err != nil {
		var e *weft.Error
		var ir *weft.InputRequired
		switch {
		case errors.As(err, &ir):
			return "input_required", 0
		case errors.As(err, &e) && e.Code == weft.CodeInternalError:
			return "internal_error", e.Code
		case errors.As(err, &e):
			return "error", e.Code
		case errors.Is(err, context.Canceled):
			return "cancelled", 0
		}
		return "internal_error", weft.CodeInternalError
	}
	if _, ok := res.(*weft.CreateTaskResult); ok {
		return "task", 0
	}
	return "complete", 0
}
