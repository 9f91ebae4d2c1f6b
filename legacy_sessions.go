package weft

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"sync"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/sessionstore"
)

// Sessions of 2025-11-25 ("legacy") clients: ids, identity binding, the
// context value handlers can read, and the node-local registry of what cannot
// move between instances (open GET streams, in-flight calls).

// SessionIDBytes is the entropy of a legacy session id (256 bits). Ids are
// base64url without padding: 43 visible ASCII characters.
const SessionIDBytes = 32

func newSessionID() (string, error) {
	var b [SessionIDBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// newOutboundID returns the id of a server-to-client request: 128 random
// bits, so that answers cannot be guessed or pre-delivered.
func newOutboundID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "weft-" + hex.EncodeToString(b[:]), nil
}

const identityDomain = "weft-legacy-session-identity-v1"

// identityDigest binds a session to the admitted identity's partition and
// principal. Only the digest is stored.
func identityDigest(id Identity) string {
	h := sha256.New()
	h.Write([]byte(identityDomain))
	h.Write([]byte{0})
	for _, s := range []string{id.Partition, id.Principal} {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(s))))
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sameIdentity(sess *sessionstore.Session, id Identity) bool {
	return subtle.ConstantTimeCompare([]byte(sess.IdentityDigest), []byte(identityDigest(id))) == 1
}

// SessionInfo describes the legacy session a request belongs to.
type SessionInfo struct {
	// ID is the Mcp-Session-Id.
	ID string
	// ProtocolVersion is the negotiated revision, e.g. "2025-11-25".
	ProtocolVersion string
	// ClientInfo is the implementation the client reported in initialize.
	ClientInfo exactjson.Value
	// Transport is "http" or "stdio".
	Transport string
}

type sessionKey struct{}

// SessionFromContext returns the legacy session of the request being served
// (handlers get it through their ctx). It reports false for 2026-07-28
// requests, which have no session. Handlers do not need it to serve both
// eras: the same handler serves both, and input_required results reach a
// legacy client as server-to-client requests.
func SessionFromContext(ctx context.Context) (SessionInfo, bool) {
	si, ok := ctx.Value(sessionKey{}).(SessionInfo)
	return si, ok
}

// localSessions is what one instance holds for sessions: their open GET
// streams and in-flight calls. None of it moves between instances.
type localSessions struct {
	mu      sync.Mutex
	streams map[string]*legacyStream
	calls   map[string]map[string]context.CancelFunc // session -> request id key -> cancel
	stdio   map[*stdioWriter]string                  // stdio connection -> its session
	// byDigest finds a session with calls or a stream here from its
	// fleetDigest, for cancellations that arrive on another instance; kept
	// only when fleet (the server has a fleet event bus).
	byDigest map[string]string
	fleet    bool
}

func newLocalSessions() *localSessions {
	return &localSessions{streams: map[string]*legacyStream{}, calls: map[string]map[string]context.CancelFunc{},
		stdio: map[*stdioWriter]string{}, byDigest: map[string]string{}}
}

// fleetDigest names a session, or a call of a session, on the fleet's
// event bus without putting the session id there: the first 16 bytes of
// SHA-256 over a label and the parts, in hex.
func fleetDigest(label string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(label))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

func sessionDigest(sid string) string   { return fleetDigest("weft legacy session", sid) }
func callDigest(sid, key string) string { return fleetDigest("weft legacy call", sid, key) }

// track and untrack keep byDigest in step with the sessions that have calls
// or a stream here (l.mu held).
func (l *localSessions) track(sid string) {
	if !l.fleet {
		return
	}
	if _, calls := l.calls[sid]; !calls {
		if _, stream := l.streams[sid]; !stream {
			l.byDigest[sessionDigest(sid)] = sid
		}
	}
}

func (l *localSessions) untrack(sid string) {
	if !l.fleet {
		return
	}
	if _, calls := l.calls[sid]; !calls {
		if _, stream := l.streams[sid]; !stream {
			delete(l.byDigest, sessionDigest(sid))
		}
	}
}

// addStream registers the GET stream of a session; false if one is open.
func (l *localSessions) addStream(sid string, st *legacyStream) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.streams[sid]; ok {
		return false
	}
	l.track(sid)
	l.streams[sid] = st
	return true
}

func (l *localSessions) removeStream(sid string, st *legacyStream) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams[sid] == st {
		delete(l.streams, sid)
		l.untrack(sid)
	}
}

func (l *localSessions) stream(sid string) *legacyStream {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.streams[sid]
}

// addCall registers an in-flight call so that notifications/cancelled and
// DELETE can cancel it; the returned function unregisters it.
func (l *localSessions) addCall(sid, key string, cancel context.CancelFunc) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.calls[sid]
	if m == nil {
		l.track(sid)
		m = map[string]context.CancelFunc{}
		l.calls[sid] = m
	}
	if _, dup := m[key]; dup {
		return func() {}
	}
	m[key] = cancel
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if m := l.calls[sid]; m != nil {
			delete(m, key)
			if len(m) == 0 {
				delete(l.calls, sid)
				l.untrack(sid)
			}
		}
	}
}

// cancelCall cancels a call running here; it reports whether there was one.
func (l *localSessions) cancelCall(sid, key string) bool {
	l.mu.Lock()
	cancel := l.calls[sid][key]
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return cancel != nil
}

// cancelByDigest cancels the call named by a fleet cancellation, if it runs
// here.
func (l *localSessions) cancelByDigest(sessionD, callD string) {
	l.mu.Lock()
	sid, ok := l.byDigest[sessionD]
	var cancel context.CancelFunc
	if ok {
		for key, c := range l.calls[sid] {
			if callDigest(sid, key) == callD {
				cancel = c
				break
			}
		}
	}
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// endByDigest ends what this instance holds for a session deleted on
// another instance.
func (l *localSessions) endByDigest(sessionD string) {
	l.mu.Lock()
	sid, ok := l.byDigest[sessionD]
	l.mu.Unlock()
	if ok {
		l.end(sid)
	}
}

// end cancels what this instance holds for a deleted session.
func (l *localSessions) end(sid string) {
	l.mu.Lock()
	st := l.streams[sid]
	calls := l.calls[sid]
	delete(l.calls, sid)
	l.untrack(sid)
	l.mu.Unlock()
	for _, c := range calls {
		c()
	}
	if st != nil {
		st.end()
	}
}

func (l *localSessions) stdioSession(w *stdioWriter) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sid, ok := l.stdio[w]
	return sid, ok
}

func (l *localSessions) setStdioSession(w *stdioWriter, sid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stdio[w] = sid
}
