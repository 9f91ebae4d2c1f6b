package weft

import (
	"context"
	"net/http"

	"github.com/weftmcp/weft/exactjson"
)

// era is the protocol era a message is encoded for. The core asks it what
// differs between the eras instead of testing for the 2025 one; only the
// 2025-11-25 adapter (legacy_*.go) picks era2025.
type era uint8

const (
	eraModern era = iota // MCP 2026-07-28
	era2025              // MCP 2025-11-25 and 2025-06-18 sessions
	numEras
)

// resultEnvelope reports whether results carry resultType, the caching hint
// (ttlMs, cacheScope) and serverInfo in _meta: 2026-07-28 results do;
// 2025-era results carry none (serverInfo came with initialize).
func (e era) resultEnvelope() bool { return e == eraModern }

// objectsOnly reports whether structuredContent and output schemas must be
// JSON objects: in the 2025 era they must, and others are left out.
func (e era) objectsOnly() bool { return e == era2025 }

// era is the era of the client that sent the request.
func (r *Request) era() era {
	if r.session != nil {
		return era2025
	}
	return eraModern
}

// eraAdapter is a protocol era served beside the core's own (2026-07-28),
// as connect-go serves its protocols behind one handler: the transports hand
// it every message first, it decodes the messages of its era and encodes
// their replies, and it enters the core only to admit and dispatch them.
// The 2025-11-25 era (legacy_*.go, Options.Legacy) is the one adapter; a
// later protocol revision is another.
type eraAdapter interface {
	// serveMessage serves a parsed message of its era; it reports false
	// for a message it leaves to the core.
	serveMessage(ctx context.Context, in *inbound, v exactjson.Value, rt *requestTelemetry) (reply, bool)
	// serveHTTP serves an HTTP request other than a POST of a message (an
	// event stream, the end of a session); it reports false for one it
	// leaves to the core.
	serveHTTP(w http.ResponseWriter, r *http.Request) bool
	// stdioEvents sends the events of a stdio connection's session until
	// ctx ends; the transport starts it once the session is set up.
	stdioEvents(ctx context.Context, conn *stdioConn)
	// endStdio releases what a stdio connection that ended held.
	endStdio(conn *stdioConn)
	// run does the adapter's background work until done is closed.
	run(done <-chan struct{})
	// ready reports a store of the adapter that cannot be read, naming it.
	ready(ctx context.Context) (string, error)
}

// adaptersServeHTTP offers an HTTP request other than a POST of a message
// to the era adapters; it reports whether one served it.
func (s *Server) adaptersServeHTTP(w http.ResponseWriter, r *http.Request) bool {
	for _, a := range s.adapters {
		if a.serveHTTP(w, r) {
			return true
		}
	}
	return false
}
