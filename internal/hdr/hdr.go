// Package hdr implements the value codec for the HTTP request-metadata
// headers of the MCP 2026-07-28 Streamable HTTP transport (SEP-2243):
// Mcp-Name and Mcp-Param-{Name}.
//
// A client mirrors a body value into a header either literally, when the
// value is plain visible ASCII, or in the Base64 sentinel form
//
//	=?base64?{standard Base64 of the UTF-8 bytes, with padding}?=
//
// when the value contains non-ASCII or control characters, has leading or
// trailing whitespace, or itself looks like the sentinel. Servers decode the
// header value with [Decode] before comparing it to the body value; clients
// produce it with [Encode].
//
// Integers are mirrored in decimal and booleans as "true"/"false"; see
// [FormatInteger], [ParseInteger], [FormatBool] and [ParseBool].
//
// The package holds no mutable state and all functions are safe for
// concurrent use.
package hdr

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDecodedValueBytes is the largest mirrored value, in bytes after
// decoding, that [Decode] accepts. It applies to literal values as well as
// to Base64 sentinel values.
const MaxDecodedValueBytes = 16384

// MaxSafeInteger is the largest integer magnitude that may be mirrored into
// a header (2^53-1, the IEEE 754 double-precision safe-integer limit).
const MaxSafeInteger = 1<<53 - 1

const (
	sentinelPrefix = "=?base64?"
	sentinelSuffix = "?="
	// maxEncodedPayload is the length of the Base64 encoding of
	// MaxDecodedValueBytes bytes; longer payloads are rejected before
	// decoding.
	maxEncodedPayload = (MaxDecodedValueBytes + 2) / 3 * 4
)

// ErrInvalid is wrapped by every error returned from [Decode],
// [ParseInteger] and [ParseBool]. The wrapping error says what was wrong.
var ErrInvalid = errors.New("invalid MCP header value")

// Decode interprets a received Mcp-Name or Mcp-Param-{Name} header value
// and returns the mirrored value.
//
// Surrounding optional whitespace (SP and HTAB) is trimmed first. A value
// that then starts with the exact (case-sensitive) prefix "=?base64?" and
// ends with the suffix "?=" is a sentinel: its payload must be canonical
// standard Base64 with padding (no characters outside the alphabet, no
// line breaks, correct padding, zero trailing bits), and the decoded bytes
// must be valid UTF-8. Any other value is a literal and is returned as is,
// but it may contain only visible ASCII characters, SP and HTAB.
//
// A value that has both markers but in which they overlap ("=?base64?=")
// is rejected: it is neither a well-formed sentinel nor a value a
// conforming client sends literally.
//
// The result is at most [MaxDecodedValueBytes] bytes long. All errors wrap
// [ErrInvalid].
func Decode(raw string) (string, error) {
	v := trimOWS(raw)
	hasPrefix := strings.HasPrefix(v, sentinelPrefix)
	hasSuffix := strings.HasSuffix(v, sentinelSuffix)
	if hasPrefix && hasSuffix {
		if len(v) < len(sentinelPrefix)+len(sentinelSuffix) {
			return "", fmt.Errorf("%w: Base64 sentinel markers overlap in %q", ErrInvalid, v)
		}
		return decodeSentinel(v[len(sentinelPrefix) : len(v)-len(sentinelSuffix)])
	}
	if len(v) > MaxDecodedValueBytes {
		return "", fmt.Errorf("%w: literal value is %d bytes, limit is %d", ErrInvalid, len(v), MaxDecodedValueBytes)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == ' ' || c == '\t' || (c >= 0x21 && c <= 0x7e) {
			continue
		}
		if c >= 0x80 {
			return "", fmt.Errorf("%w: literal value contains non-ASCII byte 0x%02x at offset %d (non-ASCII values must use the =?base64?...?= form)", ErrInvalid, c, i)
		}
		return "", fmt.Errorf("%w: literal value contains control character 0x%02x at offset %d", ErrInvalid, c, i)
	}
	return v, nil
}

func decodeSentinel(payload string) (string, error) {
	if len(payload) > maxEncodedPayload {
		return "", fmt.Errorf("%w: Base64 payload is %d characters, decoded value would exceed %d bytes", ErrInvalid, len(payload), MaxDecodedValueBytes)
	}
	for i := 0; i < len(payload); i++ {
		if !isBase64Char(payload[i]) {
			return "", fmt.Errorf("%w: Base64 payload contains %q at offset %d, outside the standard alphabet", ErrInvalid, payload[i], i)
		}
	}
	if len(payload)%4 != 0 {
		return "", fmt.Errorf("%w: Base64 payload length %d is not a multiple of 4 (padding is required)", ErrInvalid, len(payload))
	}
	b, err := base64.StdEncoding.Strict().DecodeString(payload)
	if err != nil {
		return "", fmt.Errorf("%w: malformed Base64 payload: %v", ErrInvalid, err)
	}
	// Strict decoding plus the alphabet check above already imply a
	// canonical encoding; re-encoding makes the guarantee explicit.
	if base64.StdEncoding.EncodeToString(b) != payload {
		return "", fmt.Errorf("%w: Base64 payload is not canonically encoded", ErrInvalid)
	}
	if len(b) > MaxDecodedValueBytes {
		return "", fmt.Errorf("%w: decoded value is %d bytes, limit is %d", ErrInvalid, len(b), MaxDecodedValueBytes)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%w: Base64 payload does not decode to valid UTF-8", ErrInvalid)
	}
	return string(b), nil
}

func isBase64Char(c byte) bool {
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '='
}

// trimOWS removes leading and trailing SP and HTAB.
func trimOWS(s string) string {
	return strings.Trim(s, " \t")
}

// Encode returns the header value a client sends for value: value itself
// when it is safe to send literally (see [NeedsEncoding]), otherwise the
// Base64 sentinel form "=?base64?...?=".
//
// Encode accepts any string, but [Decode] only accepts results that decode
// to valid UTF-8 of at most [MaxDecodedValueBytes] bytes, which is what
// JSON body values are.
func Encode(value string) string {
	if !NeedsEncoding(value) {
		return value
	}
	var sb strings.Builder
	sb.Grow(len(sentinelPrefix) + base64.StdEncoding.EncodedLen(len(value)) + len(sentinelSuffix))
	sb.WriteString(sentinelPrefix)
	sb.WriteString(base64.StdEncoding.EncodeToString([]byte(value)))
	sb.WriteString(sentinelSuffix)
	return sb.String()
}

// NeedsEncoding reports whether value must be sent in the Base64 sentinel
// form: it contains a byte outside visible ASCII and SP (non-ASCII, HTAB or
// other control characters), starts or ends with SP, or starts with
// "=?base64?" and ends with "?=". The empty string needs no encoding.
func NeedsEncoding(value string) bool {
	if value == "" {
		return false
	}
	if value[0] == ' ' || value[len(value)-1] == ' ' {
		return true
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 || c > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(value, sentinelPrefix) && strings.HasSuffix(value, sentinelSuffix)
}

// IsToken reports whether s is an RFC 9110 token (1*tchar), the syntax
// required of x-mcp-header names. Tokens are non-empty and contain no
// whitespace, control characters or delimiters.
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return false
		}
	}
	return true
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// FormatInteger returns the decimal form in which an integer body value is
// mirrored into a header, e.g. "42" or "-7".
func FormatInteger(n int64) string {
	return strconv.FormatInt(n, 10)
}

// ParseInteger parses a decoded header value that mirrors an integer, so
// that it can be compared numerically with the body value. It accepts an
// optional leading '-', decimal digits, and an optional fraction consisting
// only of zeros ("42", "-7", "42.0"); the magnitude must not exceed
// [MaxSafeInteger]. Errors wrap [ErrInvalid].
func ParseInteger(s string) (int64, error) {
	body := s
	neg := false
	if strings.HasPrefix(body, "-") {
		neg = true
		body = body[1:]
	}
	intPart, frac, hasFrac := strings.Cut(body, ".")
	if intPart == "" {
		return 0, fmt.Errorf("%w: integer value %q has no digits", ErrInvalid, s)
	}
	if hasFrac {
		if frac == "" {
			return 0, fmt.Errorf("%w: integer value %q has an empty fraction", ErrInvalid, s)
		}
		for i := 0; i < len(frac); i++ {
			if frac[i] != '0' {
				return 0, fmt.Errorf("%w: value %q is not an integer", ErrInvalid, s)
			}
		}
	}
	var n int64
	for i := 0; i < len(intPart); i++ {
		c := intPart[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: integer value %q contains %q", ErrInvalid, s, c)
		}
		n = n*10 + int64(c-'0')
		if n > MaxSafeInteger {
			return 0, fmt.Errorf("%w: integer value %q is outside the safe range ±%d", ErrInvalid, s, int64(MaxSafeInteger))
		}
	}
	if neg {
		n = -n
	}
	return n, nil
}

// FormatBool returns the form in which a boolean body value is mirrored
// into a header: "true" or "false".
func FormatBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// ParseBool parses a decoded header value that mirrors a boolean. Only the
// exact lowercase strings "true" and "false" are accepted, because header
// values are case-sensitive. Errors wrap [ErrInvalid].
func ParseBool(s string) (bool, error) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%w: boolean value %q is neither \"true\" nor \"false\"", ErrInvalid, s)
}

// Value returns the decoded value of the metadata header name, whether it
// is present, and an error for a repeated or undecodable one. name is
// matched case-insensitively; in its canonical form (Mcp-Protocol-Version)
// a present header is found without canonicalizing (which allocates a new
// key for any other spelling).
func Value(h http.Header, name string) (string, bool, error) {
	vs, ok := h[name]
	if !ok {
		vs = h.Values(name)
	}
	if len(vs) == 0 {
		return "", false, nil
	}
	if len(vs) > 1 {
		return "", true, fmt.Errorf("%s appears more than once", name)
	}
	v, err := Decode(vs[0])
	if err != nil {
		return "", true, fmt.Errorf("%s: %w", name, err)
	}
	return v, true, nil
}
