package seal

import (
	"encoding/base64"
	"encoding/binary"
	"sync"
)

// b64 decodes tokens: canonical (Strict) unpadded base64url.
var b64 = base64.RawURLEncoding.Strict()

// b64Alphabet is the base64url alphabet the tables below are built from.
const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// b64Pairs maps each 12-bit value to its two base64url characters (first
// character in the low byte), so that encodeB64 turns six bytes into eight
// characters with one load, four lookups and one store. Built once, never
// written after.
var b64Pairs = sync.OnceValue(func() *[1 << 12]uint16 {
	var t [1 << 12]uint16
	for v := range t {
		t[v] = uint16(b64Alphabet[v>>6]) | uint16(b64Alphabet[v&63])<<8
	}
	return &t
})

// encodeB64 writes the unpadded base64url encoding of src to dst, which
// must be b64.EncodedLen(len(src)) bytes long. The output is exactly
// base64.RawURLEncoding's (TestEncodeB64MatchesStdlib, FuzzEncodeB64).
func encodeB64(dst, src []byte) {
	t := b64Pairs()
	si, di := 0, 0
	// Six bytes at a time, loading eight (the last two are ignored).
	for ; si+8 <= len(src) && di+8 <= len(dst); si, di = si+6, di+8 {
		x := binary.BigEndian.Uint64(src[si:])
		binary.LittleEndian.PutUint64(dst[di:], uint64(t[x>>52&0xfff])|uint64(t[x>>40&0xfff])<<16|
			uint64(t[x>>28&0xfff])<<32|uint64(t[x>>16&0xfff])<<48)
	}
	b64.Encode(dst[di:], src[si:])
}

// b64Values maps each byte to its base64url value, or 0xff if it is not in
// the alphabet. Built once, never written after.
var b64Values = sync.OnceValue(func() *[256]uint8 {
	var t [256]uint8
	for i := range t {
		t[i] = 0xff
	}
	for i := range len(b64Alphabet) {
		t[b64Alphabet[i]] = uint8(i)
	}
	return &t
})

// decodeB64 decodes canonical unpadded base64url s into dst (at least
// b64.DecodedLen(len(s)) bytes), returning the length: exactly what b64
// (Strict) decodes, and an error where it fails (FuzzDecodeB64). Whole
// groups of eight characters are decoded here; the rest, and any group
// with a byte outside the alphabet, by b64.
func decodeB64(dst []byte, s string) (int, error) {
	t := b64Values()
	si, di := 0, 0
	for ; si+8 <= len(s) && di+8 <= len(dst); si, di = si+8, di+6 {
		q := s[si : si+8] // one bounds check for the group
		a, b, c, d := uint64(t[q[0]]), uint64(t[q[1]]), uint64(t[q[2]]), uint64(t[q[3]])
		e, f, g, h := uint64(t[q[4]]), uint64(t[q[5]]), uint64(t[q[6]]), uint64(t[q[7]])
		if a|b|c|d|e|f|g|h >= 64 {
			break
		}
		binary.BigEndian.PutUint64(dst[di:], a<<58|b<<52|c<<46|d<<40|e<<34|f<<28|g<<22|h<<16)
	}
	n, err := b64.Decode(dst[di:], []byte(s[si:]))
	if err != nil {
		// Report the offset in s, as b64 would for the whole string.
		if ce, ok := err.(base64.CorruptInputError); ok {
			err = base64.CorruptInputError(int64(ce) + int64(si))
		}
		return di + n, err
	}
	return di + n, nil
}
