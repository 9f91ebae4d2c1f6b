package seal

import "errors"

// sentinel is the type of the package's error values. They are constants, so
// no importer can reassign them; compare with errors.Is.
type sentinel string

func (e sentinel) Error() string { return string(e) }

const (
	// ErrInvalidState reports a request-state token that cannot be opened:
	// it is malformed, too large, sealed under a key this server does not
	// hold, tampered with, or bound to a different operation. The causes are
	// deliberately indistinguishable; use [Reason] for server-side metrics.
	ErrInvalidState = sentinel("seal: invalid request state")

	// ErrKeyInUse reports that a verification key cannot be removed because
	// a seal reservation still holds it.
	ErrKeyInUse = sentinel("seal: key is reserved by a seal in progress")

	// ErrActiveKey reports an attempt to remove the active key.
	ErrActiveKey = sentinel("seal: key is the active key")

	// ErrUnknownKey reports a key id that the keyring does not hold.
	ErrUnknownKey = sentinel("seal: unknown key id")

	// ErrKeyExhausted reports that the active key has sealed the maximum
	// number of tokens this process allows under one key (2^32, the bound
	// for random 96-bit GCM nonces). Rotate to a new key.
	ErrKeyExhausted = sentinel("seal: active key exhausted; rotate to a new key")

	// ErrKeyConflict reports a key whose id is already present with
	// different secret bytes, or whose secret bytes are already present
	// under a different id, or a key listed twice.
	ErrKeyConflict = sentinel("seal: key conflicts with a key in the keyring")

	// ErrInvalidKey reports a malformed key: a bad id, a secret shorter than
	// [MinKeyBytes], or the zero Key.
	ErrInvalidKey = sentinel("seal: invalid key")

	// ErrStateTooLarge reports that a sealed token would exceed the
	// manager's maximum token size (see [ManagerOptions]).
	ErrStateTooLarge = sentinel("seal: sealed state exceeds the maximum token size")
)

// Reasons recorded by [OpenError]. They are intended for server-side metrics
// and logs and must never be sent to a client.
const (
	ReasonMalformed  = "malformed"   // bad prefix, encoding, version or layout
	ReasonTooLarge   = "too_large"   // longer than the maximum token size
	ReasonUnknownKey = "unknown_key" // well formed, but sealed under a key id not held
	ReasonAuthFailed = "auth_failed" // GCM authentication failed (tampering, wrong binding, other bytes under the same id)
)

// OpenError is the error returned by [Manager.Open]. It matches
// [ErrInvalidState] with errors.Is, and its message never reveals the
// reason, so it is safe to pass on. Reason is one of the Reason constants.
type OpenError struct {
	Reason string
}

// Error implements error.
func (e *OpenError) Error() string { return string(ErrInvalidState) }

// Unwrap returns [ErrInvalidState].
func (e *OpenError) Unwrap() error { return ErrInvalidState }

// Reason returns the recorded reason of the first [*OpenError] in err's
// chain, or "" if there is none (for example an error from a custom
// [Protector] that wraps [ErrInvalidState] without a reason).
func Reason(err error) string {
	var oe *OpenError
	if errors.As(err, &oe) {
		return oe.Reason
	}
	return ""
}

func openError(reason string) error { return &OpenError{Reason: reason} }
