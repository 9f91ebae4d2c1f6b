package seal

import (
	"encoding/base64"
	"encoding/binary"
	"sync"
)

// b64 is the token encoding, canonical (Strict) unpadded base64url: its
// lengths and encoder; decodeB64 is its decoder.
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

// b64Quads maps each byte, at each of the four positions of a group of
// four characters, to its value shifted into place within the group's 24
// bits, or to badQuad if it is not in the alphabet: a group decodes to the
// OR of four lookups, and fails when badQuad is set in it. Built once,
// never written after.
var b64Quads = sync.OnceValue(func() *[4][256]uint32 {
	var t [4][256]uint32
	v := b64Values()
	for pos := range t {
		for c := range t[pos] {
			if x := v[c]; x < 64 {
				t[pos][c] = uint32(x) << (18 - 6*pos)
			} else {
				t[pos][c] = badQuad
			}
		}
	}
	return &t
})

// badQuad marks a character outside the alphabet in b64Quads; no 24-bit
// group value has it.
const badQuad = 1 << 31

// decodeB64 decodes canonical unpadded base64url s into dst, which must
// hold b64.DecodedLen(len(s)) bytes, and returns the decoded length. It
// accepts exactly the strings b64 (Strict) accepts, except that it refuses
// CR and LF, which b64 skips: any byte outside the alphabet, a length of 1
// mod 4, and non-zero unused bits in the last character fail
// (FuzzDecodeB64 checks it against the standard library).
func decodeB64(dst []byte, s string) (int, bool) {
	t := b64Values()
	if len(s)%4 == 1 || len(dst) < len(s)*6/8 {
		return 0, false
	}
	si, di := 0, 0
	// Eight characters to six bytes, storing eight (the last two are
	// overwritten by the next group) while that fits: two groups of four
	// characters, each the OR of four positional lookups.
	qt := b64Quads()
	for ; si+8 <= len(s) && di+8 <= len(dst); si, di = si+8, di+6 {
		q := s[si : si+8] // one bounds check for the group
		hi := qt[0][q[0]] | qt[1][q[1]] | qt[2][q[2]] | qt[3][q[3]]
		lo := qt[0][q[4]] | qt[1][q[5]] | qt[2][q[6]] | qt[3][q[7]]
		if (hi|lo)&badQuad != 0 {
			return 0, false
		}
		binary.BigEndian.PutUint64(dst[di:], uint64(hi)<<40|uint64(lo)<<16)
	}
	// The rest four characters at a time, then a final two or three.
	for ; si < len(s); si += 4 {
		q := s[si:min(si+4, len(s))]
		var v uint32
		var bad uint8
		for _, c := range []byte(q) {
			x := t[c]
			bad |= x
			v = v<<6 | uint32(x)
		}
		if bad >= 64 {
			return 0, false
		}
		switch len(q) {
		case 4:
			dst[di], dst[di+1], dst[di+2] = byte(v>>16), byte(v>>8), byte(v)
			di += 3
		case 3: // 18 bits: two bytes and two unused bits
			if v&0x3 != 0 {
				return 0, false
			}
			dst[di], dst[di+1] = byte(v>>10), byte(v>>2)
			di += 2
		case 2: // 12 bits: one byte and four unused bits
			if v&0xf != 0 {
				return 0, false
			}
			dst[di] = byte(v >> 4)
			di++
		}
	}
	return di, true
}
