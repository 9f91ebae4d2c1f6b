package seal

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
)

// Fingerprint constants; see docs/request-state-envelope.md.
const (
	// FingerprintVersion is the version of the fingerprint encoding.
	FingerprintVersion = "v1"
	// Profile names the protection profile: the token format and key
	// derivation implemented by this package.
	Profile = "weft-request-state-v1"

	fingerprintExtractDomain = "weft-key-fingerprint-v1"
	fingerprintTagDomain     = "weft-key-fingerprint-tag-v1"
	fingerprintRingDomain    = "weft-keyring-fingerprint-v1"

	roleActive       = 0x01
	roleVerification = 0x02
)

// fingerprintExtractKey = SHA-256(fingerprintExtractDomain || 0x00), the
// fixed HMAC key that turns secret bytes into a per-key fingerprint key.
var fingerprintExtractKey = sha256.Sum256([]byte(fingerprintExtractDomain + "\x00"))

// Fingerprint is a secret-free digest of a keyring: every key's exact bytes,
// id and role, and the protection profile. Two keyrings have equal
// fingerprints exactly when they hold the same keys in the same roles, so
// instances of a fleet can compare fingerprints to confirm that they can
// open each other's tokens. Compare all three fields (see [Fingerprint.Equal]).
type Fingerprint struct {
	Version string // FingerprintVersion
	Profile string // Profile
	Value   string // 43 characters of unpadded base64url (a SHA-256 digest)
}

// String returns "<version>:<profile>:<value>".
func (f Fingerprint) String() string { return f.Version + ":" + f.Profile + ":" + f.Value }

// Equal reports whether f and g have the same version, profile and value.
func (f Fingerprint) Equal(g Fingerprint) bool { return f == g }

// Keyring is an immutable set of keys: one active key, which seals new
// tokens, and zero or more verification-only keys, which only open tokens.
// A *Keyring is safe for concurrent use.
type Keyring struct {
	active       Key
	verification []Key // sorted by id
	byID         map[string]Key
	fingerprint  Fingerprint
}

// NewKeyring returns a keyring with the given active and verification keys.
// It fails with [ErrInvalidKey] for a zero Key and with [ErrKeyConflict] if
// two keys share an id (even with identical bytes: list each key once) or
// two ids share the same secret bytes.
func NewKeyring(active Key, verification ...Key) (*Keyring, error) {
	return newKeyring(active, verification)
}

func newKeyring(active Key, verification []Key) (*Keyring, error) {
	r := &Keyring{
		active:       active,
		verification: slices.Clone(verification),
		byID:         make(map[string]Key, 1+len(verification)),
	}
	slices.SortFunc(r.verification, func(a, b Key) int { return strings.Compare(a.id, b.id) })
	// Equal fingerprint keys (fkey) mean equal secret bytes: fkey is an
	// HMAC-SHA-256 of the secret under a fixed key.
	byFkey := make(map[[sha256.Size]byte]string, 1+len(verification))
	for _, k := range append([]Key{active}, r.verification...) {
		if !k.valid() {
			return nil, fmt.Errorf("%w: zero Key (use NewKey or GenerateKey)", ErrInvalidKey)
		}
		if o, dup := r.byID[k.id]; dup {
			if sameSecret(k, o) {
				return nil, fmt.Errorf("%w: key %q is listed twice", ErrKeyConflict, k.id)
			}
			return nil, fmt.Errorf("%w: key id %q is used for two different secrets", ErrKeyConflict, k.id)
		}
		if o, dup := byFkey[k.mat().fkey]; dup {
			return nil, fmt.Errorf("%w: keys %q and %q have the same secret bytes", ErrKeyConflict, o, k.id)
		}
		r.byID[k.id] = k
		byFkey[k.mat().fkey] = k.id
	}
	r.fingerprint = fingerprintOf(r.active, r.verification)
	return r, nil
}

// ActiveID returns the id of the active key.
func (r *Keyring) ActiveID() string { return r.active.id }

// VerificationIDs returns the ids of the verification-only keys, sorted.
func (r *Keyring) VerificationIDs() []string {
	ids := make([]string, len(r.verification))
	for i, k := range r.verification {
		ids[i] = k.id
	}
	return ids
}

// Active returns the active key.
func (r *Keyring) Active() Key { return r.active }

// Verification returns the verification-only keys, sorted by id.
func (r *Keyring) Verification() []Key { return slices.Clone(r.verification) }

// Fingerprint returns the keyring's fingerprint.
func (r *Keyring) Fingerprint() Fingerprint { return r.fingerprint }

func (r *Keyring) lookup(id []byte) (Key, bool) {
	k, ok := r.byID[string(id)]
	return k, ok
}

// String returns a secret-free description with the key ids and the
// fingerprint.
func (r *Keyring) String() string {
	if r == nil {
		return "seal.Keyring(nil)"
	}
	var b strings.Builder
	b.WriteString("seal.Keyring{active:")
	b.WriteString(strconv.Quote(r.active.id))
	b.WriteString(", verification:[")
	for i, k := range r.verification {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(k.id))
	}
	b.WriteString("], fingerprint:")
	b.WriteString(strconv.Quote(r.fingerprint.String()))
	b.WriteByte('}')
	return b.String()
}

// Format implements fmt.Formatter: every verb prints [Keyring.String].
func (r *Keyring) Format(f fmt.State, verb rune) { formatRedacted(f, verb, r.String()) }

// LogValue implements slog.LogValuer with the key ids and the fingerprint.
func (r *Keyring) LogValue() slog.Value {
	if r == nil {
		return slog.StringValue("<nil>")
	}
	return slog.GroupValue(
		slog.String("active", r.active.id),
		slog.Any("verification", r.VerificationIDs()),
		slog.String("fingerprint", r.fingerprint.String()),
	)
}

// fingerprintOf computes the keyring fingerprint:
//
//	fkey     = HMAC-SHA-256(key = SHA-256("weft-key-fingerprint-v1" || 0x00), msg = secret)
//	metadata = u32be(len(id)) || id || u32be(len(Profile)) || Profile || role
//	tag      = HMAC-SHA-256(key = fkey, msg = "weft-key-fingerprint-tag-v1" || 0x00 || metadata)
//	record   = u32be(len(metadata)) || metadata || tag
//	value    = base64url-nopad(SHA-256("weft-keyring-fingerprint-v1" || 0x00 ||
//	               u32be(count) || records sorted by metadata bytes))
func fingerprintOf(active Key, verification []Key) Fingerprint {
	type record struct{ metadata, tag []byte }
	recs := make([]record, 0, 1+len(verification))
	add := func(k Key, role byte) {
		md := make([]byte, 0, 4+len(k.id)+4+len(Profile)+1)
		md = binary.BigEndian.AppendUint32(md, uint32(len(k.id)))
		md = append(md, k.id...)
		md = binary.BigEndian.AppendUint32(md, uint32(len(Profile)))
		md = append(md, Profile...)
		md = append(md, role)
		mac := hmac.New(sha256.New, k.mat().fkey[:])
		mac.Write([]byte(fingerprintTagDomain))
		mac.Write([]byte{0})
		mac.Write(md)
		recs = append(recs, record{md, mac.Sum(nil)})
	}
	add(active, roleActive)
	for _, k := range verification {
		add(k, roleVerification)
	}
	slices.SortFunc(recs, func(a, b record) int { return bytes.Compare(a.metadata, b.metadata) })

	h := sha256.New()
	h.Write([]byte(fingerprintRingDomain))
	h.Write([]byte{0})
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(recs))))
	for _, rec := range recs {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(rec.metadata))))
		h.Write(rec.metadata)
		h.Write(rec.tag)
	}
	return Fingerprint{
		Version: FingerprintVersion,
		Profile: Profile,
		Value:   base64.RawURLEncoding.EncodeToString(h.Sum(nil)),
	}
}
