package weft

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/addrkey"
	"github.com/weftmcp/weft/sessionstore"
)

// Sessions of 2025-11-25 ("legacy") clients: ids, identity binding, the
// context value handlers can read, and the node-local registry of what cannot
// move between instances (open GET streams, in-flight calls).

// sessionIDBytes is the entropy of a legacy session id (256 bits). Ids are
// base64url without padding: 43 visible ASCII characters.
const sessionIDBytes = 32

func newSessionID() (string, error) {
	var b [sessionIDBytes]byte
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
	return digestOf(identityDomain, id.Partition, id.Principal)
}

// Domains of the digests that sessionstore's per-identity and
// per-partition bounds count.
const (
	ownerDomain     = "weft-legacy-session-owner-v1"
	partitionDomain = "weft-legacy-session-partition-v1"
)

// sessionOwner is the key the store's per-identity bound counts
// (sessionstore.Session.Owner): the identity's digest, or, for anonymous
// callers over HTTP, a digest of their partition and network address, so
// that anonymous clients on different addresses get separate shares
// instead of one shared by all of them.
func sessionOwner(id Identity, remoteAddr string) string {
	addr := addrkey.Of(remoteAddr)
	if !id.Anonymous() || addr == "" {
		return identityDigest(id)
	}
	return digestOf(ownerDomain, id.Partition, addr)
}

// sessionPartition is the key the store's per-partition bound counts: a
// digest of the partition, "" without one.
func sessionPartition(id Identity) string {
	if id.Partition == "" {
		return ""
	}
	return digestOf(partitionDomain, id.Partition)
}

func digestOf(domain string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	for _, s := range parts {
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
