package seal

import (
	"encoding/binary"
	"io"
	"math"
	"unsafe"
)

// Envelope constants. docs/request-state-envelope.md describes the format
// byte by byte; changing any of these breaks every outstanding token.
const (
	// TokenPrefix starts every token sealed by this package.
	TokenPrefix = "weft1."

	envelopeVersion = 1
	nonceSize       = 12
	tagSize         = 16

	aeadSalt   = "weft-request-state-salt-v1"
	aeadInfo   = "weft-request-state-aead-v1"
	aadDomain  = "weft-request-state-aad-v1"
	headerBase = 2 // version byte + key id length byte

	// DefaultMaxTokenBytes is the default maximum token length, in bytes of
	// the token string including its prefix.
	DefaultMaxTokenBytes = 65536
)

// sealedLen returns the length of the token for a key id of length idLen
// and a plaintext of ptLen bytes.
func sealedLen(idLen, ptLen int) int {
	return len(TokenPrefix) + b64.EncodedLen(headerBase+idLen+nonceSize+ptLen+tagSize)
}

// appendAAD appends the GCM additional data:
//
//	aadDomain || 0x00 || u32be(len(header)) || header || u32be(len(binding)) || binding
func appendAAD(dst, header, binding []byte) []byte {
	dst = append(dst, aadDomain...)
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(header)))
	dst = append(dst, header...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(binding)))
	return append(dst, binding...)
}

func aadLen(headerLen, bindingLen int) int {
	return len(aadDomain) + 1 + 4 + headerLen + 4 + bindingLen
}

// sealToken seals plaintext under k, bound to binding, drawing the nonce
// from nonces. The caller has checked sizes and the seal budget.
func sealToken(k Key, nonces io.Reader, binding, plaintext []byte) (string, error) {
	hdrLen := headerBase + len(k.id)
	// One allocation for the envelope and, past its capacity, the AAD.
	n := hdrLen + nonceSize + len(plaintext) + tagSize
	buf := make([]byte, n+aadLen(hdrLen, len(binding)))
	raw := buf[: hdrLen+nonceSize : n]
	raw[0] = envelopeVersion
	raw[1] = byte(len(k.id))
	copy(raw[headerBase:], k.id)
	nonce := raw[hdrLen : hdrLen+nonceSize]
	if _, err := io.ReadFull(nonces, nonce); err != nil {
		return "", err
	}
	aad := appendAAD(buf[n:n], raw[:hdrLen], binding)
	raw = k.mat().aead.Seal(raw, nonce, plaintext, aad)

	// Encode straight into the token's only buffer, which nothing else
	// references, so the string can share it.
	tok := make([]byte, len(TokenPrefix)+b64.EncodedLen(len(raw)))
	copy(tok, TokenPrefix)
	encodeB64(tok[len(TokenPrefix):], raw)
	return unsafe.String(unsafe.SliceData(tok), len(tok)), nil
}

// parsedToken is a decoded token whose layout has been checked.
type parsedToken struct {
	raw    []byte // the whole decoded envelope
	hdrLen int
	id     []byte
}

// parseToken checks the prefix, the encoding and the layout of token. It
// returns a reason on failure. The decoded envelope has no spare capacity:
// it becomes the plaintext, and the AAD is built elsewhere (openParsed).
func parseToken(token string, maxTokenBytes int) (parsedToken, string) {
	if len(token) > maxTokenBytes {
		return parsedToken{}, ReasonTooLarge
	}
	if len(token) < len(TokenPrefix) || token[:len(TokenPrefix)] != TokenPrefix {
		return parsedToken{}, ReasonMalformed
	}
	raw, ok := decodeCanonical(token[len(TokenPrefix):])
	if !ok {
		return parsedToken{}, ReasonMalformed
	}
	if len(raw) < headerBase || raw[0] != envelopeVersion {
		return parsedToken{}, ReasonMalformed
	}
	idLen := int(raw[1])
	hdrLen := headerBase + idLen
	if len(raw) < hdrLen+nonceSize+tagSize {
		return parsedToken{}, ReasonMalformed
	}
	id := raw[headerBase:hdrLen]
	if !validKeyIDBytes(id) {
		return parsedToken{}, ReasonMalformed
	}
	return parsedToken{raw: raw, hdrLen: hdrLen, id: id}, ""
}

// openParsed authenticates and decrypts p under k. The plaintext is
// decrypted in place and aliases p.raw; the AAD is built in scratch, which
// is returned (grown if it had to be) for reuse.
func openParsed(k Key, p parsedToken, binding, scratch []byte) ([]byte, []byte, string) {
	if uint64(len(binding)) > math.MaxUint32 {
		return nil, scratch, ReasonMalformed
	}
	hdr := p.raw[:p.hdrLen]
	nonce := p.raw[p.hdrLen : p.hdrLen+nonceSize]
	ct := p.raw[p.hdrLen+nonceSize:]
	aad := appendAAD(scratch[:0], hdr, binding)
	pt, err := k.mat().aead.Open(ct[:0], nonce, ct, aad)
	if err != nil {
		return nil, aad, ReasonAuthFailed
	}
	if pt == nil {
		pt = []byte{}
	}
	return pt, aad, ""
}

// decodeCanonical decodes canonical unpadded base64url: exactly the strings
// that encoding their decoded bytes reproduces (see decodeB64).
func decodeCanonical(s string) ([]byte, bool) {
	raw := make([]byte, b64.DecodedLen(len(s)))
	n, ok := decodeB64(raw, s)
	return raw[:n], ok
}
