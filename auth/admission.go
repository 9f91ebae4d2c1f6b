package auth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/weftmcp/weft"
)

// scopePolicy is the scope configuration the token validators share: the
// scopes every request needs, those an operation adds, and scope implication.
type scopePolicy struct {
	required  []string
	scopeFunc func(string, *weft.AdmissionRequest) []string
	implies   func(string, string) bool
	log       *slog.Logger
	dpop      *DPoPVerifier // nil: DPoP-bound tokens are refused
	audience  string        // the htu of DPoP proofs
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
// token, named by principal and partitioned by partition.
func tokenAdmission(meta *ResourceMetadata, p *scopePolicy, validate func(context.Context, string) (*Claims, error), principal, partition func(*Claims) string) weft.Admission {
	return func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
		needed, err := p.neededScopes(r)
		if err != nil {
			if p.log != nil {
				p.log.LogAttrs(ctx, slog.LevelError, "auth: ScopeFunc failed", slog.String("method", r.Method), slog.String("error", err.Error()))
			}
			return weft.Identity{}, &weft.AdmissionError{Status: http.StatusInternalServerError, Message: "Authorization is misconfigured"}
		}
		token, scheme := r.BearerToken, "Bearer"
		if token == "" && p.dpop != nil && r.Header != nil {
			if a := r.Header.Get("Authorization"); len(a) > 5 && strings.EqualFold(a[:5], "dpop ") {
				token, scheme = strings.TrimSpace(a[5:]), "DPoP"
			}
		}
		if token == "" {
			return weft.Identity{}, p.withDPoPChallenge(meta.MissingToken(needed), "")
		}
		claims, err := validate(ctx, token)
		if err != nil {
			if p.log != nil {
				p.log.LogAttrs(ctx, slog.LevelInfo, "auth: access token rejected",
					slog.String("method", r.Method), slog.String("remote", r.RemoteAddr), slog.String("reason", err.Error()))
			}
			if errors.Is(err, ErrKeySource) || errors.Is(err, ErrIntrospection) {
				return weft.Identity{}, &weft.AdmissionError{Status: http.StatusServiceUnavailable, Message: "Authorization temporarily unavailable",
					Header: http.Header{"Retry-After": {"5"}}}
			}
			return weft.Identity{}, p.withDPoPChallenge(meta.InvalidToken(needed, describe(err)), "")
		}
		if err := p.checkDPoP(ctx, r, scheme, token, claims); err != nil {
			if p.log != nil {
				p.log.LogAttrs(ctx, slog.LevelInfo, "auth: DPoP check failed",
					slog.String("method", r.Method), slog.String("remote", r.RemoteAddr), slog.String("reason", err.Error()))
			}
			return weft.Identity{}, p.dpopRejection(err)
		}
		if missing := p.missingScopes(claims.Scopes, needed); len(missing) > 0 {
			if p.log != nil {
				p.log.LogAttrs(ctx, slog.LevelInfo, "auth: access token lacks scopes",
					slog.String("method", r.Method), slog.String("subject", claims.Subject), slog.Any("missing", missing))
			}
			return weft.Identity{}, meta.InsufficientScope(needed, "The access token lacks scopes this operation requires")
		}
		return weft.Identity{
			Principal: principal(claims),
			Partition: partition(claims),
			Scopes:    slices.Clone(claims.Scopes),
			Data:      claims,
		}, nil
	}
}

// checkDPoP enforces the DPoP binding of a valid token: a bound token
// needs the DPoP scheme and a proof of its key; an unbound one must not
// use the DPoP scheme.
func (p *scopePolicy) checkDPoP(ctx context.Context, r *weft.AdmissionRequest, scheme, token string, c *Claims) error {
	if p.dpop == nil {
		return nil
	}
	if c.DPoPJKT == "" {
		if scheme == "DPoP" {
			return errors.New("auth: a token without a DPoP binding was sent with the DPoP scheme")
		}
		return nil
	}
	if scheme != "DPoP" {
		return errors.New("auth: a DPoP-bound token was sent as a bearer token")
	}
	var proofs []string
	if r.Header != nil {
		proofs = r.Header.Values("DPoP")
	}
	if len(proofs) != 1 {
		return errors.New("auth: a DPoP-bound token needs exactly one DPoP proof header")
	}
	proof, err := p.dpop.Verify(ctx, proofs[0], http.MethodPost, p.audience, token)
	if err != nil {
		return err
	}
	if proof.JKT != c.DPoPJKT {
		return errors.New("auth: the DPoP proof's key is not the one the token is bound to")
	}
	return nil
}

// dpopChallenge is the DPoP WWW-Authenticate challenge (RFC 9449 §7.1).
func (p *scopePolicy) dpopChallenge(code string) string {
	c := `DPoP algs="` + strings.Join(DPoPAlgorithms(), " ") + `"`
	if p.dpop != nil && len(p.dpop.Algorithms) > 0 {
		c = `DPoP algs="` + strings.Join(p.dpop.Algorithms, " ") + `"`
	}
	if code != "" {
		c += `, error="` + code + `"`
	}
	return c
}

// withDPoPChallenge adds the DPoP challenge next to the Bearer one when
// DPoP is accepted.
func (p *scopePolicy) withDPoPChallenge(ae *weft.AdmissionError, code string) *weft.AdmissionError {
	if p.dpop == nil {
		return ae
	}
	h := http.Header{}
	for k, v := range ae.Header {
		h[k] = v
	}
	h["Www-Authenticate"] = []string{ae.Challenge, p.dpopChallenge(code)}
	ae.Header, ae.Challenge = h, ""
	return ae
}

// dpopRejection is the 401 of a failed DPoP check: use_dpop_nonce with a
// fresh DPoP-Nonce, or invalid_dpop_proof.
func (p *scopePolicy) dpopRejection(err error) *weft.AdmissionError {
	if errors.Is(err, ErrDPoPNonce) {
		return &weft.AdmissionError{Status: http.StatusUnauthorized, Message: "DPoP nonce required",
			Challenge: p.dpopChallenge("use_dpop_nonce"), Header: http.Header{"Dpop-Nonce": {p.dpop.Nonce()}}}
	}
	return &weft.AdmissionError{Status: http.StatusUnauthorized, Message: "Invalid DPoP proof", Challenge: p.dpopChallenge("invalid_dpop_proof")}
}
