package auth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"

	"github.com/weftmcp/weft"
)

// scopePolicy is the scope configuration the token validators share: the
// scopes every request needs, those an operation adds, and scope implication.
type scopePolicy struct {
	required  []string
	scopeFunc func(string, *weft.AdmissionRequest) []string
	implies   func(string, string) bool
	log       *slog.Logger
}

// failClosed is the admission of a misconfigured validator: it logs the
// problem once (when there is a logger) and refuses every request with a
// 500.
func failClosed(log *slog.Logger, what string, err error) weft.Admission {
	if log != nil {
		log.Error("auth: "+what+" misconfigured; every request will be refused", slog.String("error", err.Error()))
	}
	return func(context.Context, *weft.AdmissionRequest) (weft.Identity, error) {
		return weft.Identity{}, &weft.AdmissionError{Status: http.StatusInternalServerError, Message: "Authorization is misconfigured"}
	}
}

// tokenAdmission is the weft.Admission of a token validator: the scopes
// the operation needs, the challenges of a missing, invalid or
// insufficient token, a 503 when the validator's own dependency (signing
// keys, the introspection endpoint) fails, and the identity of a valid
// token, partitioned by partition.
func tokenAdmission(meta *ResourceMetadata, p *scopePolicy, validate func(context.Context, string) (*Claims, error), partition func(*Claims) string) weft.Admission {
	return func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
		needed, err := p.neededScopes(r)
		if err != nil {
			if p.log != nil {
				p.log.LogAttrs(ctx, slog.LevelError, "auth: ScopeFunc failed", slog.String("method", r.Method), slog.String("error", err.Error()))
			}
			return weft.Identity{}, &weft.AdmissionError{Status: http.StatusInternalServerError, Message: "Authorization is misconfigured"}
		}
		if r.BearerToken == "" {
			return weft.Identity{}, meta.MissingToken(needed)
		}
		claims, err := validate(ctx, r.BearerToken)
		if err != nil {
			if p.log != nil {
				p.log.LogAttrs(ctx, slog.LevelInfo, "auth: access token rejected",
					slog.String("method", r.Method), slog.String("remote", r.RemoteAddr), slog.String("reason", err.Error()))
			}
			if errors.Is(err, ErrKeySource) || errors.Is(err, ErrIntrospection) {
				return weft.Identity{}, &weft.AdmissionError{Status: http.StatusServiceUnavailable, Message: "Authorization temporarily unavailable",
					Header: http.Header{"Retry-After": {"5"}}}
			}
			return weft.Identity{}, meta.InvalidToken(needed, describe(err))
		}
		if missing := p.missingScopes(claims.Scopes, needed); len(missing) > 0 {
			if p.log != nil {
				p.log.LogAttrs(ctx, slog.LevelInfo, "auth: access token lacks scopes",
					slog.String("method", r.Method), slog.String("subject", claims.Subject), slog.Any("missing", missing))
			}
			return weft.Identity{}, meta.InsufficientScope(needed, "The access token lacks scopes this operation requires")
		}
		return weft.Identity{
			Principal: claims.Subject,
			Partition: partition(claims),
			Scopes:    slices.Clone(claims.Scopes),
			Data:      claims,
		}, nil
	}
}
