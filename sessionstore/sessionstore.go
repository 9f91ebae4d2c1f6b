// Package sessionstore persists the protocol sessions that Weft keeps for
// MCP 2025-11-25 ("legacy") clients: the negotiated version, the client's
// capabilities, the identity the session is bound to, the log level and the
// resource subscriptions. It also carries the answers to server-to-client
// requests (elicitation, sampling, roots) from the instance that receives
// them to the instance whose handler waits for them, so that a fleet can
// serve one session on any instance without sticky routing.
//
// Three implementations exist: [Memory] (this package, the default, one
// process), the SQLite store in sessionstore/sqlitestore (one host: state
// that outlives a restart) and the PostgreSQL store in sessionstore/pgstore
// (shared by a fleet). The contract both satisfy is tested by sessionstore/storetest.
//
// What lives where in a fleet:
//
//   - Session records (everything in [Session]) live in the store and are
//     read on every request, so any instance can serve any request of the
//     session, and a logging/setLevel or resources/subscribe handled by one
//     instance is seen by the others.
//   - Answers to server-to-client requests travel through the store's
//     mailbox ([Store.Expect], [Store.Deliver], [Store.Await]): the instance
//     that sent the request waits; the instance that receives the client's
//     answer delivers it.
//   - Open HTTP streams (the POST stream of a call that waits for input and
//     the GET stream of a session) are bound to the instance holding the
//     connection and never move; neither do in-flight handlers.
package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors returned by stores.
var (
	// ErrNotFound reports an unknown, expired or deleted session (or, for
	// the mailbox, a request nobody expects).
	ErrNotFound = errors.New("sessionstore: session not found")
	// ErrExists reports a session id that is already taken.
	ErrExists = errors.New("sessionstore: session id exists")
	// ErrLimit reports that creating a session would exceed a bound of
	// [Limits]: the caller should ask the client to retry later.
	ErrLimit = errors.New("sessionstore: session limit reached")
	// ErrInvalid reports a malformed argument (a session without id, a
	// non-positive timeout...).
	ErrInvalid = errors.New("sessionstore: invalid argument")
	// ErrClosed reports use of a closed store.
	ErrClosed = errors.New("sessionstore: store closed")
)

// Session is one protocol session. Stores return private copies.
type Session struct {
	// ID is the session id sent in the Mcp-Session-Id header: at least 128
	// random bits, printable ASCII, at most MaxIDBytes bytes.
	ID string
	// ProtocolVersion is the negotiated legacy revision, e.g. "2025-11-25".
	ProtocolVersion string
	// ClientCapabilities is the JSON object the client declared in
	// initialize, byte for byte.
	ClientCapabilities []byte
	// ClientInfo is the client's self-reported implementation (JSON).
	ClientInfo []byte
	// IdentityDigest binds the session to the identity admitted at
	// initialize (a digest of its partition and principal): requests whose
	// identity differs are treated as if the session did not exist.
	IdentityDigest string
	// Owner is what Limits.MaxPerIdentity counts and what a full store
	// with Limits.EvictWhenFull ranks: a digest of the admitted identity,
	// or, for anonymous callers, of the identity their transport gives (the
	// client's network address). Empty means IdentityDigest.
	Owner string
	// Partition is what Limits.MaxPerPartition counts: a digest of the
	// admitted authorization partition, empty for sessions outside any
	// partition (that bound does not count them).
	Partition string
	// LogLevel is the level set by logging/setLevel ("" = never set).
	LogLevel string
	// Subscriptions are the resource URIs of resources/subscribe, in order,
	// without duplicates.
	Subscriptions []string
	// Initialized records notifications/initialized.
	Initialized bool
	// CreatedAt is when the session was created.
	CreatedAt time.Time
	// LastSeen is the last time a request used the session (Get refreshes it).
	LastSeen time.Time
	// IdleTimeout ends the session when it stays unused this long.
	IdleTimeout time.Duration
	// ExpiresAt ends the session regardless of use (absolute expiry).
	ExpiresAt time.Time
}

// MaxIDBytes bounds session ids and mailbox request ids.
const MaxIDBytes = 128

// ValidID reports whether id is a valid session or mailbox request id:
// 1..MaxIDBytes visible ASCII characters (0x21..0x7E).
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// Live reports whether s is usable at now: before its absolute expiry and
// used within its idle timeout.
func (s *Session) Live(now time.Time) bool {
	return now.Before(s.ExpiresAt) && now.Before(s.LastSeen.Add(s.IdleTimeout))
}

// Clone returns a deep copy.
func (s *Session) Clone() *Session {
	c := *s
	c.ClientCapabilities = append([]byte(nil), s.ClientCapabilities...)
	c.ClientInfo = append([]byte(nil), s.ClientInfo...)
	c.Subscriptions = append([]string(nil), s.Subscriptions...)
	return &c
}

// ForCreate validates s and returns the copy a store keeps when it
// creates it: CreatedAt and LastSeen default to now, and nil capabilities,
// client info and subscriptions become empty (never NULL in a database),
// and an empty Owner becomes IdentityDigest.
// Stores call it at the start of Create.
func (s *Session) ForCreate(now time.Time) (*Session, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	c := s.Clone()
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	if c.LastSeen.IsZero() {
		c.LastSeen = now
	}
	if c.Owner == "" {
		c.Owner = c.IdentityDigest
	}
	if c.Subscriptions == nil {
		c.Subscriptions = []string{}
	}
	if c.ClientCapabilities == nil {
		c.ClientCapabilities = []byte{}
	}
	if c.ClientInfo == nil {
		c.ClientInfo = []byte{}
	}
	return c, nil
}

// Validate checks the fields a store relies on.
func (s *Session) Validate() error {
	switch {
	case !ValidID(s.ID):
		return errors.Join(ErrInvalid, errors.New("session id must be 1..128 visible ASCII characters"))
	case s.IdleTimeout <= 0:
		return errors.Join(ErrInvalid, errors.New("idle timeout must be positive"))
	case s.ExpiresAt.IsZero():
		return errors.Join(ErrInvalid, errors.New("absolute expiry must be set"))
	}
	return nil
}

// Limits bound the sessions a store holds. Zero means the default.
type Limits struct {
	// MaxSessions bounds the live sessions of the store (of the whole fleet
	// for a shared store). Default 10,000.
	MaxSessions int
	// MaxPerIdentity bounds the live sessions of one owner (Session.Owner:
	// one identity, or one network address of anonymous callers), so that
	// one caller cannot take the sessions every caller shares. Default 100
	// (DefaultMaxPerIdentity).
	MaxPerIdentity int
	// MaxPerPartition bounds the live sessions of one authorization
	// partition (Session.Partition; sessions without one are not counted),
	// so that one tenant's many principals cannot take the store. Default
	// 2,500 (DefaultMaxPerPartition), a quarter of the default store.
	MaxPerPartition int
	// EvictWhenFull makes a store holding MaxSessions live sessions make
	// room for a new one by deleting the least recently used session of
	// the owner that holds the most; when the creator is (one of) the
	// owners holding the most, it gets ErrLimit instead. So a full store
	// refuses the caller that filled it, not everyone. Without it a full
	// store refuses every Create. Weft's 2025-11-25 server sets it on its
	// default store; set it on a shared store that serves sessions (not on
	// one that holds work that must not vanish, such as a gateway's parked
	// calls).
	EvictWhenFull bool
	// MaxPendingAnswers bounds the expected answers of one session.
	// Default 256.
	MaxPendingAnswers int
}

// Defaults and ceilings of Limits.
const (
	DefaultMaxSessions       = 10000
	MaxSessionsCeiling       = 1_000_000
	DefaultMaxPerIdentity    = 100
	DefaultMaxPerPartition   = 2500
	DefaultMaxPendingAnswers = 256
	MaxPendingAnswersCeiling = 4096
)

// Validate reports a bound outside 0 (the default) .. its ceiling.
func (l Limits) Validate() error {
	switch {
	case l.MaxSessions < 0 || l.MaxSessions > MaxSessionsCeiling:
		return fmt.Errorf("%w: Limits.MaxSessions = %d is outside 0..%d", ErrInvalid, l.MaxSessions, MaxSessionsCeiling)
	case l.MaxPerIdentity < 0 || l.MaxPerIdentity > MaxSessionsCeiling:
		return fmt.Errorf("%w: Limits.MaxPerIdentity = %d is outside 0..%d", ErrInvalid, l.MaxPerIdentity, MaxSessionsCeiling)
	case l.MaxPerPartition < 0 || l.MaxPerPartition > MaxSessionsCeiling:
		return fmt.Errorf("%w: Limits.MaxPerPartition = %d is outside 0..%d", ErrInvalid, l.MaxPerPartition, MaxSessionsCeiling)
	case l.MaxPendingAnswers < 0 || l.MaxPendingAnswers > MaxPendingAnswersCeiling:
		return fmt.Errorf("%w: Limits.MaxPendingAnswers = %d is outside 0..%d", ErrInvalid, l.MaxPendingAnswers, MaxPendingAnswersCeiling)
	}
	return nil
}

// WithDefaults fills zero fields.
func (l Limits) WithDefaults() Limits {
	if l.MaxSessions <= 0 {
		l.MaxSessions = DefaultMaxSessions
	}
	if l.MaxPerIdentity <= 0 {
		l.MaxPerIdentity = DefaultMaxPerIdentity
	}
	if l.MaxPerPartition <= 0 {
		l.MaxPerPartition = DefaultMaxPerPartition
	}
	if l.MaxPendingAnswers <= 0 {
		l.MaxPendingAnswers = DefaultMaxPendingAnswers
	}
	return l
}

// Store persists sessions and routes answers to server-to-client requests.
// All methods are safe for concurrent use; a shared store (PostgreSQL) is
// also safe for use by many processes.
type Store interface {
	// Create stores a new session. It fails with ErrExists when the id is
	// taken and ErrLimit when a bound of Limits would be exceeded (expired
	// sessions are purged first and do not count; with EvictWhenFull a
	// full store evicts another owner's session instead, see Limits).
	Create(ctx context.Context, s *Session) error
	// Get returns the live session with the given id and refreshes its
	// LastSeen (idle expiry). Unknown, expired and deleted sessions are
	// ErrNotFound.
	Get(ctx context.Context, id string) (*Session, error)
	// Update applies fn to the live session atomically (under a lock that
	// serializes concurrent updates of the session, across processes for a
	// shared store) and stores the result. fn may change LogLevel,
	// Subscriptions and Initialized; other changes are ignored. An error
	// from fn aborts the update and is returned.
	Update(ctx context.Context, id string, fn func(*Session) error) (*Session, error)
	// Delete removes the session and its pending answers; it reports whether
	// a live session existed.
	Delete(ctx context.Context, id string) (bool, error)

	// Expect opens a mailbox slot for the answer to the server-to-client
	// request requestID of the session, until expires. ErrNotFound when the
	// session is not live; ErrLimit when the session already expects
	// MaxPendingAnswers answers.
	Expect(ctx context.Context, sessionID, requestID string, expires time.Time) error
	// Deliver puts the client's answer (a JSON-RPC response message) into
	// the slot and wakes its waiter, wherever it runs. It reports false when
	// no live slot expects it (never issued, already answered, expired);
	// such answers are dropped.
	Deliver(ctx context.Context, sessionID, requestID string, msg []byte) (bool, error)
	// Await waits until the answer for the slot is delivered and returns it.
	// It always removes the slot before returning: on success, on ctx's end
	// (returning ctx's error) and when the slot expires or its session is
	// deleted or expires, idle expiry included (ErrNotFound): the store
	// notices an expiry by itself, without another call on the session
	// (polling stores within their poll interval). An answer delivered
	// before the expiry is still returned.
	Await(ctx context.Context, sessionID, requestID string) ([]byte, error)
}
