package exactjson

import "math/bits"

// plainASCII returns the index of the first byte at or after i in s that a
// JSON string cannot hold verbatim or that needs a closer look: a control
// byte (< 0x20), '"', '\\' or a non-ASCII byte (>= 0x80). It checks eight
// bytes at a time (SWAR); the string loops of the parser and the encoder
// call it to skip plain runs. Within the window that holds one, the lowest
// marked lane is the first such byte: no lane below it sets a mark.
func plainASCII(s string, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for ; i+8 <= len(s); i += 8 {
		// The compiler merges these byte loads into one 64-bit load, and
		// the eight-byte window needs one bounds check, not eight.
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		// A byte with the high bit set, or one below 0x20, or one equal to
		// '"' or '\\' (each found as a zero byte after XOR), sets the high
		// bit of its lane in t. A borrow only starts at a lane that holds
		// one (below 0x20, or zero after XOR), so it can mark a lane above
		// a true hit but never below one: the lowest mark is exact.
		quote := x ^ (ones * '"')
		slash := x ^ (ones * '\\')
		t := (x | (x - ones*0x20) | (quote-ones)&^quote | (slash-ones)&^slash) & highs
		if t != 0 {
			return i + bits.TrailingZeros64(t)>>3
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return i
		}
	}
	return i
}
