package oauth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// MaxRetainedBody bounds a request body the transport buffers itself to
// be able to resend it after authorizing (requests built with a
// GetBody, as http.NewRequest does for in-memory bodies, are not
// buffered).
const MaxRetainedBody = 16 << 20

// Transport is an http.RoundTripper that authorizes the requests to MCP
// servers: it adds the server's token (Bearer, or DPoP with a fresh
// proof), and on 401 discovers the authorization server and authorizes
// (refreshing first when it can), on 403 insufficient_scope steps up to
// the union of scopes (a bounded number of times per request), and on a
// DPoP use_dpop_nonce challenge retries once with the server's nonce.
// Each endpoint URL (without query) has its own [Authorizer], sharing the
// Config and its Store.
type Transport struct {
	// Base carries the requests. Default http.DefaultTransport.
	Base http.RoundTripper
	cfg  Config

	mu    sync.Mutex
	auths map[string]*Authorizer
}

// NewTransport returns a transport authorizing with cfg over base (nil:
// http.DefaultTransport).
func NewTransport(base http.RoundTripper, cfg Config) *Transport {
	if cfg.Store == nil {
		cfg.Store = &MemoryStore{}
	}
	return &Transport{Base: base, cfg: cfg, auths: map[string]*Authorizer{}}
}

// Authorizer returns the authorizer of the MCP endpoint serverURL.
func (t *Transport) Authorizer(serverURL string) *Authorizer {
	key := serverKey(serverURL)
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.auths[key]
	if a == nil {
		a = NewAuthorizer(key, t.cfg)
		t.auths[key] = a
	}
	return a
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	a := t.Authorizer(req.URL.String())
	getBody, err := rewindable(req)
	if err != nil {
		return nil, err
	}
	tok, err := a.Token(ctx)
	if err != nil {
		return nil, err
	}
	var (
		authorized bool
		stepUps    int
		nonceRetry bool
	)
	for {
		r := req.Clone(ctx)
		if getBody != nil {
			if r.Body, err = getBody(); err != nil {
				return nil, err
			}
		}
		if err := t.authorize(r, tok); err != nil {
			return nil, err
		}
		resp, err := t.base().RoundTrip(r)
		if err != nil {
			return nil, err
		}
		if tok.DPoP() && t.cfg.DPoP != nil {
			t.cfg.DPoP.setNonce(r.URL.String(), resp.Header.Get("DPoP-Nonce"))
		}
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			chs, perr := ParseChallenges(resp.Header)
			if perr != nil {
				return resp, nil
			}
			if ch, ok := FindChallenge(chs, "DPoP"); ok && tok.DPoP() && ch.Param("error") == "use_dpop_nonce" && resp.Header.Get("DPoP-Nonce") != "" && !nonceRetry {
				nonceRetry = true
				drain(resp)
				continue
			}
			if authorized {
				return resp, nil
			}
			drain(resp)
			authorized = true
			if tok, err = a.Authorize(ctx, chs, tok, false); err != nil {
				return nil, fmt.Errorf("oauth: authorizing %s: %w", a.server, err)
			}
		case http.StatusForbidden:
			chs, perr := ParseChallenges(resp.Header)
			if perr != nil {
				return resp, nil
			}
			ch, ok := FindChallenge(chs, "DPoP", "Bearer")
			if !ok || ch.Param("error") != "insufficient_scope" || t.cfg.MaxStepUps < 0 || stepUps >= maxStepUps(t.cfg) {
				return resp, nil
			}
			drain(resp)
			stepUps++
			if tok, err = a.Authorize(ctx, chs, tok, true); err != nil {
				return nil, fmt.Errorf("oauth: stepping up the authorization of %s: %w", a.server, err)
			}
		default:
			return resp, nil
		}
	}
}

func maxStepUps(cfg Config) int {
	if cfg.MaxStepUps == 0 {
		return DefaultMaxStepUps
	}
	return cfg.MaxStepUps
}

// authorize sets the Authorization (and DPoP) headers for tok.
func (t *Transport) authorize(r *http.Request, tok *Token) error {
	if tok == nil {
		return nil
	}
	if tok.DPoP() {
		if t.cfg.DPoP == nil {
			return errors.New("oauth: a DPoP token without a DPoP key")
		}
		proof, err := t.cfg.DPoP.Proof(r.Method, r.URL.String(), tok.AccessToken)
		if err != nil {
			return err
		}
		r.Header.Set("Authorization", "DPoP "+tok.AccessToken)
		r.Header.Set("DPoP", proof)
		return nil
	}
	r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return nil
}

// rewindable returns a function producing fresh copies of req's body.
func rewindable(req *http.Request) (func() (io.ReadCloser, error), error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		return req.GetBody, nil
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, MaxRetainedBody+1))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if len(data) > MaxRetainedBody {
		return nil, fmt.Errorf("oauth: request body exceeds %d bytes", MaxRetainedBody)
	}
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, nil
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
