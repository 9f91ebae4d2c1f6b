package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// DefaultProbeTimeout bounds the server/discover probe of an unpinned
// client: a 2025-era server may leave a request sent before initialize
// unanswered, and the 2026-07-28 transport pages count that as the
// legacy era.
const DefaultProbeTimeout = 10 * time.Second

// ErrLegacyServer marks a request a 2026-07-28 client sent to a server that
// speaks only the 2025 era (it answered server/discover with an error that
// is not a 2026-07-28 one). It is returned, wrapped with the server's own
// error, when Options.ProtocolVersion pins 2026-07-28; an unpinned client
// falls back to initialize instead.
var ErrLegacyServer = errors.New("client: the server speaks only the 2025 era (initialize); leave the protocol version unpinned, or pin 2025-11-25")

// ErrModernServer marks an initialize refused by a server that speaks only
// 2026-07-28 (it named only newer versions). It is returned, wrapped with
// the server's own error, when Options.ProtocolVersion pins a 2025-era
// revision.
var ErrModernServer = errors.New("client: the server speaks only the 2026-07-28 era (no initialize); leave the protocol version unpinned")

// modernCodes are the JSON-RPC errors only a 2026-07-28 server sends: a
// server answering one of them is modern, whatever else it refused.
var modernCodes = []int{CodeHeaderMismatch, CodeMissingRequiredClientCapability, CodeUnsupportedProtocolVersion}

// ensureEra runs, once, the era detection the 2026-07-28 stdio and
// Streamable HTTP pages describe: probe with server/discover; a
// DiscoverResult listing a 2026-07-28 version, or a 2026-07-28 error, means
// a modern server; any other error, a result listing only 2025 revisions,
// or no answer within the probe timeout, a 2025-era server, which an
// unpinned client then reaches with initialize and a client pinned to
// 2026-07-28 reports as ErrLegacyServer (every time: the probe runs again
// on its next request). A client pinned to a 2025 revision does not probe.
// Errors that say nothing about the era (the server cannot be reached,
// asks for authorization, fails with 5xx, or the caller's context ends)
// are returned and the probe runs again on the next request. It returns
// the probe's DiscoverResult when it ran one and the server is modern.
func (c *Client) ensureEra(ctx context.Context) (*DiscoverResult, error) {
	if e := c.currentEra(); e.known {
		return nil, nil
	}
	c.initMu.Lock()
	defer c.initMu.Unlock()
	e := c.currentEra()
	if e.known {
		return nil, nil
	}
	timeout := c.opts.ProbeTimeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	pctx, cancel := context.WithTimeoutCause(ctx, timeout, errProbeTimeout)
	defer cancel()
	res, err := c.send(pctx, "server/discover", exactjson.Object(), nil, c.dispatch, e)
	var supported []string // the versions the server named
	var d *DiscoverResult
	legacy, decided := probeVerdict(err)
	var rerr *RPCError
	switch {
	case err == nil:
		d = parseDiscover(res)
		supported = d.SupportedVersions
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(context.Cause(pctx), errProbeTimeout):
		legacy, decided = true, true
	case !decided:
		return nil, err
	case errors.As(err, &rerr) && rerr.Code == CodeUnsupportedProtocolVersion:
		supported = supportedVersions(rerr)
	}
	if !legacy && offersOnlyLegacy(supported, e.version) {
		// A server that offers this client only 2025 revisions (the Go
		// SDK's stateful HTTP handler does).
		legacy = true
		if err == nil {
			err = fmt.Errorf("server/discover lists only %v", supported)
		}
	}
	if !legacy {
		c.eraMu.Lock()
		c.era.known = true
		c.eraMu.Unlock()
		return d, nil
	}
	if e.pinned {
		return nil, fmt.Errorf("%w: %w", ErrLegacyServer, err)
	}
	version := legacyVersions[0]
	for _, v := range legacyVersions {
		if slices.Contains(supported, v) {
			version = v
			break
		}
	}
	c.log.Info("client: the server does not speak 2026-07-28; using the 2025 era (initialize)", "version", version, "probe", err)
	c.eraMu.Lock()
	c.era = era{version: version, legacy: true, known: true}
	c.eraMu.Unlock()
	return nil, nil
}

// LegacyProbeAnswer reports whether err, the error of a server/discover
// probe sent before anything else, shows a server of the 2025 era, by the
// fallback rule of the 2026-07-28 stdio and Streamable HTTP pages: an
// error that is no recognised 2026-07-28 one (whatever its code), an
// HTTP 4xx without such an error in its body, an answer that is no
// 2026-07-28 response, or -32022 naming only 2025 revisions. Errors that
// say nothing about the era (the server cannot be reached, asks for
// authorization, is overloaded or fails with 5xx) report false. A client
// then speaks 2025 with initialize; [Client] does this itself, and the
// gateway's upstreams use it.
func LegacyProbeAnswer(err error) bool {
	var rerr *RPCError
	if errors.As(err, &rerr) && rerr.Code == CodeUnsupportedProtocolVersion {
		return offersOnlyLegacy(supportedVersions(rerr), ProtocolVersion)
	}
	legacy, decided := probeVerdict(err)
	return legacy && decided
}

// offersOnlyLegacy reports whether supported, the versions a server named
// to a client speaking version, leave that client only 2025 revisions.
func offersOnlyLegacy(supported []string, version string) bool {
	return !slices.Contains(supported, version) && slices.ContainsFunc(supported, isLegacy)
}

// errProbeTimeout is the cause of a probe that went unanswered.
var errProbeTimeout = errors.New("client: server/discover went unanswered")

// probeVerdict reads the error of a server/discover probe: whether it
// names the server's era (decided) and which (legacy).
func probeVerdict(err error) (legacy, decided bool) {
	if err == nil {
		return false, true
	}
	var rerr *RPCError
	if errors.As(err, &rerr) {
		switch {
		case slices.Contains(modernCodes, rerr.Code):
			return false, true
		case rerr.HTTPStatus == http.StatusUnauthorized || rerr.HTTPStatus == http.StatusForbidden ||
			rerr.HTTPStatus == http.StatusTooManyRequests || rerr.HTTPStatus >= 500:
			return false, false
		}
		return true, true
	}
	var herr *HTTPError
	if errors.As(err, &herr) {
		// The HTTP page: a 4xx without a recognised modern error body
		// is the legacy era (400 Server not initialized, 404 or 405 from
		// an older transport). Authorization and overload say nothing.
		switch herr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired, http.StatusTooManyRequests:
			return false, false
		}
		return true, herr.StatusCode >= 400 && herr.StatusCode < 500
	}
	if errors.Is(err, ErrProtocol) && !errors.Is(err, ErrStreamEnded) {
		// An answer that is no 2026-07-28 response at all.
		return true, true
	}
	return false, false
}

// eraError names the era a server speaks when the initialize of a client
// pinned to a 2025 revision was refused by a server naming only newer
// versions.
func (c *Client) eraError(err error) error {
	var rerr *RPCError
	if e := c.currentEra(); e.pinned && errors.As(err, &rerr) {
		supported := supportedVersions(rerr)
		if len(supported) > 0 && !slices.ContainsFunc(supported, isLegacy) {
			return fmt.Errorf("%w (it supports %v): %w", ErrModernServer, supported, err)
		}
	}
	return err
}
