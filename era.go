package weft

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
	if r.legacy != nil {
		return era2025
	}
	return eraModern
}
