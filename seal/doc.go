// Package seal protects framework-owned request state for Weft servers.
//
// An MCP server that returns an input_required result may hand the client an
// opaque requestState string, which the client echoes on its retry. Weft
// seals application JSON into that string with AES-256-GCM so that the client
// can neither read nor alter it, and binds every token to the operation it was
// issued for (the binding, supplied by the server core as associated data).
//
// The package owns four things:
//
//   - [Key]: a key id plus at least [MinKeyBytes] secret bytes, redacted in
//     every printed, logged or marshalled form.
//   - [Keyring]: an immutable set of one active key and zero or more
//     verification-only keys, with a secret-free [Fingerprint] that lets
//     operators check that every instance of a fleet holds identical keys.
//   - [Manager]: the live keyring of a running server. It seals with the
//     active key, opens with any key, and supports staged rotation (Stage,
//     Activate, Remove) while requests are in flight.
//   - The token format ("weft1." + base64url), documented byte by byte in
//     docs/request-state-envelope.md; the fleet rotation runbook lives in
//     docs/key-rotation.md.
//
// Every failure to open a token is reported as [ErrInvalidState], whatever
// the cause, so that clients learn nothing about which check failed. The
// cause is still available to the server for metrics through [Reason].
package seal
