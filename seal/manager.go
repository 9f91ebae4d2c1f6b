package seal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Protector turns (binding, plaintext) into an opaque request-state token
// and back. The server core calls it; [*Manager] implements it, and
// applications may supply their own (for example one backed by a KMS).
// Neither method may retain binding, or Seal's plaintext, after it returns
// (as with io.Writer): the server reuses those buffers. The plaintext Open
// returns belongs to the caller.
type Protector interface {
	// Seal protects plaintext and binds it to binding. The token must be a
	// string the client can echo verbatim.
	Seal(ctx context.Context, binding, plaintext []byte) (string, error)
	// Open returns the plaintext sealed into token. It must authenticate
	// binding exactly, and must return an error wrapping [ErrInvalidState]
	// for any token it cannot open. Other errors mean the protector itself
	// is unavailable.
	Open(ctx context.Context, token string, binding []byte) ([]byte, error)
}

var _ Protector = (*Manager)(nil)

// ManagerOptions configure a [Manager]. The zero value (or nil) is usable.
type ManagerOptions struct {
	// MaxTokenBytes is the maximum token length in bytes (0 means
	// [DefaultMaxTokenBytes]; negative is an error, NewManager panics).
	// Open rejects longer tokens before decoding them, and Seal refuses to
	// produce them ([ErrStateTooLarge]).
	MaxTokenBytes int
}

// Manager is the live keyring of a running server. It seals with the active
// key and opens tokens sealed under any key of the current keyring. Its keys
// can be changed while it is in use: [Manager.Stage], [Manager.Activate],
// [Manager.Rotate] and [Manager.Remove] each swap in a new immutable
// [Keyring] atomically. A Manager is safe for concurrent use.
type Manager struct {
	ring atomic.Pointer[Keyring]

	mu       sync.Mutex               // serializes keyring changes and reservations
	reserved map[string]*atomic.Int64 // outstanding seal reservations per key id

	maxTokenBytes int
	ephemeral     bool
	nonces        io.Reader // nonce source; crypto/rand unless a test replaces it

	// aads holds *[]byte scratch for the AAD that Open authenticates, so
	// that the plaintext is an Open's only allocation, of its own size.
	aads sync.Pool
}

// maxPooledAAD bounds the AAD buffers a Manager keeps: a rare huge binding
// does not pin its buffer.
const maxPooledAAD = 4 << 10

// NewManager returns a manager whose keys are those of r; opts may be nil.
// It panics if r is nil or a zero Keyring not made by NewKeyring, or if
// opts.MaxTokenBytes is negative.
func NewManager(r *Keyring, opts *ManagerOptions) *Manager {
	if r == nil || !r.active.valid() {
		panic("seal: NewManager: nil or zero Keyring (use NewKeyring)")
	}
	m := &Manager{
		reserved:      make(map[string]*atomic.Int64),
		maxTokenBytes: DefaultMaxTokenBytes,
		nonces:        rand.Reader,
	}
	if opts != nil {
		switch n := opts.MaxTokenBytes; {
		case n < 0:
			panic("seal: NewManager: ManagerOptions.MaxTokenBytes must not be negative, got " + strconv.Itoa(n))
		case n > 0:
			m.maxTokenBytes = n
		}
	}
	m.ring.Store(r)
	return m
}

// NewEphemeralManager returns a manager with a single random key whose id
// is "ephemeral-" followed by 8 hex digits. Tokens it seals cannot be opened
// by any other process or after a restart, so it is for development only;
// servers should log a prominent warning when they use it. opts may be nil.
func NewEphemeralManager(opts *ManagerOptions) *Manager {
	var suffix [4]byte
	rand.Read(suffix[:])
	k, err := GenerateKey("ephemeral-" + hex.EncodeToString(suffix[:]))
	if err != nil {
		panic("seal: NewEphemeralManager: " + err.Error()) // unreachable: the id and length are valid
	}
	r, err := NewKeyring(k)
	if err != nil {
		panic("seal: NewEphemeralManager: " + err.Error())
	}
	m := NewManager(r, opts)
	m.ephemeral = true
	return m
}

// IsEphemeral reports whether m was created by [NewEphemeralManager].
func (m *Manager) IsEphemeral() bool { return m.ephemeral }

// Keyring returns the current keyring.
func (m *Manager) Keyring() *Keyring { return m.ring.Load() }

// Snapshot is a secret-free view of a manager's keyring at one moment.
type Snapshot struct {
	ActiveID        string
	VerificationIDs []string // sorted
	Fingerprint     Fingerprint
}

// Snapshot returns the current key ids and fingerprint.
func (m *Manager) Snapshot() Snapshot {
	r := m.ring.Load()
	return Snapshot{ActiveID: r.ActiveID(), VerificationIDs: r.VerificationIDs(), Fingerprint: r.Fingerprint()}
}

// Seal seals plaintext with the active key, bound to binding. It holds a
// reservation on the key for its duration (see [Manager.Reserve]). ctx is
// not used.
//
// Seal fails with [ErrKeyExhausted] once the active key has sealed 2^32
// tokens in this process, and with [ErrStateTooLarge] if the token would
// exceed the maximum token size.
func (m *Manager) Seal(ctx context.Context, binding, plaintext []byte) (string, error) {
	k, count, err := m.reserve()
	if err != nil {
		return "", err
	}
	defer count.Add(-1)
	return m.sealWith(k, binding, plaintext)
}

// Open authenticates token against binding and returns the sealed
// plaintext. Every failure is an [*OpenError] matching [ErrInvalidState];
// its Reason is for server-side metrics only. ctx is not used.
func (m *Manager) Open(ctx context.Context, token string, binding []byte) ([]byte, error) {
	p, reason := parseToken(token, m.maxTokenBytes)
	if reason != "" {
		return nil, openError(reason)
	}
	k, ok := m.ring.Load().lookup(p.id)
	if !ok {
		return nil, openError(ReasonUnknownKey)
	}
	bp, _ := m.aads.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	pt, aad, reason := openParsed(k, p, binding, *bp)
	if cap(aad) <= maxPooledAAD {
		*bp = aad[:0]
		m.aads.Put(bp)
	}
	if reason != "" {
		return nil, openError(reason)
	}
	return pt, nil
}

func (m *Manager) sealWith(k Key, binding, plaintext []byte) (string, error) {
	if uint64(len(binding)) > math.MaxUint32 {
		return "", errors.New("seal: binding exceeds 2^32-1 bytes")
	}
	if n := sealedLen(len(k.id), len(plaintext)); n > m.maxTokenBytes {
		return "", fmt.Errorf("%w: %d bytes of plaintext seal to %d bytes, limit %d", ErrStateTooLarge, len(plaintext), n, m.maxTokenBytes)
	}
	if k.mat().seals.Add(1) > maxSealsPerKey {
		return "", fmt.Errorf("%w (key %q)", ErrKeyExhausted, k.id)
	}
	return sealToken(k, m.nonces, binding, plaintext)
}

// Reservation holds the key that was active when it was taken, so that the
// key cannot be removed while a seal that uses it is in flight. Obtain one
// with [Manager.Reserve] and always Release it.
type Reservation struct {
	m        *Manager
	key      Key
	count    *atomic.Int64
	released atomic.Bool
}

// Reserve reserves the active key for sealing. Until the reservation is
// released, [Manager.Remove] refuses to remove that key (with
// [ErrKeyInUse]) even after another key has been activated. It fails with
// [ErrKeyExhausted] if the active key cannot seal any more tokens.
func (m *Manager) Reserve() (*Reservation, error) {
	k, count, err := m.reserve()
	if err != nil {
		return nil, err
	}
	return &Reservation{m: m, key: k, count: count}, nil
}

func (m *Manager) reserve() (Key, *atomic.Int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.ring.Load().active
	if k.mat().seals.Load() >= maxSealsPerKey {
		return Key{}, nil, fmt.Errorf("%w (key %q)", ErrKeyExhausted, k.id)
	}
	c := m.reserved[k.id]
	if c == nil {
		c = new(atomic.Int64)
		m.reserved[k.id] = c
	}
	c.Add(1)
	return k, c, nil
}

// KeyID returns the id of the reserved key.
func (r *Reservation) KeyID() string { return r.key.id }

// Seal seals plaintext with the reserved key, bound to binding, like
// [Manager.Seal]. It may be called more than once, but not after (or
// concurrently with) Release.
func (r *Reservation) Seal(binding, plaintext []byte) (string, error) {
	if r.released.Load() {
		return "", errors.New("seal: Reservation.Seal called after Release")
	}
	return r.m.sealWith(r.key, binding, plaintext)
}

// Release ends the reservation. It is idempotent.
func (r *Reservation) Release() {
	if r.released.CompareAndSwap(false, true) {
		r.count.Add(-1)
	}
}

// String describes the reservation without secrets.
func (r *Reservation) String() string {
	return "seal.Reservation{key:" + strconv.Quote(r.key.id) + ", released:" + strconv.FormatBool(r.released.Load()) + "}"
}

// Format implements fmt.Formatter: every verb prints [Reservation.String].
func (r *Reservation) Format(f fmt.State, verb rune) { formatRedacted(f, verb, r.String()) }

// Stage adds k as a verification-only key. It succeeds without change if an
// identical key (same id and bytes) is already present in any role, and
// fails with [ErrKeyConflict], changing nothing, if k's id is present with
// other bytes or k's bytes are present under another id.
func (m *Manager) Stage(k Key) error {
	if !k.valid() {
		return fmt.Errorf("%w: zero Key", ErrInvalidKey)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.ring.Load()
	if done, err := present(r, k); done || err != nil {
		return err
	}
	return m.replace(r.active, append(r.Verification(), k))
}

// Activate makes the key with the given id, which must already be present,
// the active key; the previously active key becomes verification-only. It
// succeeds without change if the key is already active, and fails with
// [ErrUnknownKey] if it is absent.
func (m *Manager) Activate(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.ring.Load()
	if r.active.id == id {
		return nil
	}
	k, ok := r.byID[id]
	if !ok {
		return fmt.Errorf("%w: %q (stage it first)", ErrUnknownKey, id)
	}
	return m.activateLocked(r, k)
}

// Rotate stages k (if it is not already present) and activates it, as one
// atomic change. It is retry-safe: rotating to the key that is already
// active succeeds without change. On a fleet, use Stage everywhere before
// Activate instead (see docs/key-rotation.md).
func (m *Manager) Rotate(k Key) error {
	if !k.valid() {
		return fmt.Errorf("%w: zero Key", ErrInvalidKey)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.ring.Load()
	if r.active.identical(k) {
		return nil
	}
	done, err := present(r, k)
	if err != nil {
		return err
	}
	if done {
		k = r.byID[k.id] // keep the staged Key and its seal counter
	}
	return m.activateLocked(r, k)
}

// activateLocked makes k (present in r or new) the active key.
func (m *Manager) activateLocked(r *Keyring, k Key) error {
	if k.mat().seals.Load() >= maxSealsPerKey {
		return fmt.Errorf("%w (key %q)", ErrKeyExhausted, k.id)
	}
	ver := slices.DeleteFunc(r.Verification(), func(v Key) bool { return v.id == k.id })
	return m.replace(k, append(ver, r.active))
}

// Remove removes the verification-only key with the given id. It returns
// (true, nil) if it removed the key and (false, nil) if no key has that id.
// It fails with [ErrActiveKey] for the active key and with [ErrKeyInUse]
// while a [Reservation] on the key is outstanding; retry after the
// reservations drain.
func (m *Manager) Remove(id string) (removed bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.ring.Load()
	if r.active.id == id {
		return false, fmt.Errorf("%w: cannot remove %q; activate another key first", ErrActiveKey, id)
	}
	if _, ok := r.byID[id]; !ok {
		return false, nil
	}
	if c := m.reserved[id]; c != nil && c.Load() > 0 {
		return false, fmt.Errorf("%w: %q has %d outstanding seal reservation(s)", ErrKeyInUse, id, c.Load())
	}
	ver := slices.DeleteFunc(r.Verification(), func(v Key) bool { return v.id == id })
	if err := m.replace(r.active, ver); err != nil {
		return false, err
	}
	delete(m.reserved, id)
	return true, nil
}

// present reports whether r already holds k identically (done), or an error
// if k conflicts with a key of r.
func present(r *Keyring, k Key) (done bool, err error) {
	if o, ok := r.byID[k.id]; ok {
		if sameSecret(o, k) {
			return true, nil
		}
		return false, fmt.Errorf("%w: key id %q is already present with different bytes", ErrKeyConflict, k.id)
	}
	for _, o := range r.byID {
		if sameSecret(o, k) {
			return false, fmt.Errorf("%w: the bytes of key %q are already present as key %q", ErrKeyConflict, k.id, o.id)
		}
	}
	return false, nil
}

// replace installs a new keyring; m.mu must be held.
func (m *Manager) replace(active Key, verification []Key) error {
	r, err := newKeyring(active, verification)
	if err != nil {
		return err
	}
	m.ring.Store(r)
	return nil
}

// String describes the manager without secrets.
func (m *Manager) String() string {
	r := m.ring.Load()
	var b strings.Builder
	b.WriteString("seal.Manager{active:")
	b.WriteString(strconv.Quote(r.active.id))
	b.WriteString(", verification:[")
	for i, id := range r.VerificationIDs() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(id))
	}
	b.WriteString("], fingerprint:")
	b.WriteString(strconv.Quote(r.fingerprint.String()))
	b.WriteString(", ephemeral:")
	b.WriteString(strconv.FormatBool(m.ephemeral))
	b.WriteByte('}')
	return b.String()
}

// Format implements fmt.Formatter: every verb prints [Manager.String].
func (m *Manager) Format(f fmt.State, verb rune) { formatRedacted(f, verb, m.String()) }

// LogValue implements slog.LogValuer with the key ids, the fingerprint and
// whether the manager is ephemeral.
func (m *Manager) LogValue() slog.Value {
	r := m.ring.Load()
	return slog.GroupValue(
		slog.String("active", r.active.id),
		slog.Any("verification", r.VerificationIDs()),
		slog.String("fingerprint", r.fingerprint.String()),
		slog.Bool("ephemeral", m.ephemeral),
	)
}
