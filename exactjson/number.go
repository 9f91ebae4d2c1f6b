package exactjson

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Number is an exact decimal kept as its validated JSON literal, so scale
// and spelling are preserved (3.50 stays "3.50", 1E+2 stays "1E+2"). The
// zero Number behaves as the literal "0".
type Number struct {
	lit string
}

// expSat is where exponent accumulation saturates; it is far beyond any
// limit yet cannot overflow int64 arithmetic on adjusted exponents.
const expSat = 1 << 52

// ParseNumber parses s as a JSON number literal: strict RFC 8259 grammar,
// at most DefaultMaxNumberLength bytes, and an adjusted exponent (see the
// package documentation) of magnitude at most DefaultMaxExponent. Grammar
// violations are reported as *SyntaxError, limit violations as *LimitError.
func ParseNumber(s string) (Number, error) {
	if s == "" {
		return Number{}, &SyntaxError{Offset: 0, Msg: "empty number"}
	}
	lim := DefaultLimits()
	end, err := scanNumber(s, 0, &lim)
	if err != nil {
		return Number{}, err
	}
	if end != len(s) {
		return Number{}, &SyntaxError{Offset: int64(end), Msg: "invalid character " + describeByte(s, end) + " after number"}
	}
	return Number{lit: s}, nil
}

// NumberFromDecimal returns the number unscaled × 10^-scale (a nil unscaled
// means 0). For scale >= 0 the literal is in plain notation with exactly
// scale fraction digits (e.g. 350, 2 → "3.50"), except that when the plain
// literal would be longer than DefaultMaxNumberLength the equivalent form
// "<unscaled>E-<scale>" is used (e.g. 7, 5000 → "7E-5000"); for scale < 0
// it is "<unscaled>E+<-scale>" (e.g. 12, -3 → "12E+3"). Either way Decimal
// returns (unscaled, scale) for the result. Numbers outside the encoding
// limits can be constructed but fail to encode.
func NumberFromDecimal(unscaled *big.Int, scale int32) Number {
	digits := "0"
	neg := false
	if unscaled != nil {
		neg = unscaled.Sign() < 0
		digits = new(big.Int).Abs(unscaled).Text(10)
	}
	var b strings.Builder
	b.Grow(len(digits) + 16)
	if neg {
		b.WriteByte('-')
	}
	switch {
	case scale == 0:
		b.WriteString(digits)
	case scale < 0:
		b.WriteString(digits)
		b.WriteString("E+")
		b.WriteString(strconv.FormatInt(-int64(scale), 10))
	case plainLength(neg, len(digits), int(scale)) > DefaultMaxNumberLength:
		b.WriteString(digits)
		b.WriteString("E-")
		b.WriteString(strconv.FormatInt(int64(scale), 10))
	case len(digits) > int(scale):
		k := len(digits) - int(scale)
		b.WriteString(digits[:k])
		b.WriteByte('.')
		b.WriteString(digits[k:])
	default:
		b.WriteString("0.")
		for range int(scale) - len(digits) {
			b.WriteByte('0')
		}
		b.WriteString(digits)
	}
	return Number{lit: b.String()}
}

// plainLength is the length of the plain literal with the given sign,
// digit count and positive scale.
func plainLength(neg bool, ndigits, scale int) int {
	n := max(ndigits+1, scale+2)
	if neg {
		n++
	}
	return n
}

// String returns the literal exactly as written or constructed ("0" for
// the zero Number).
func (n Number) String() string {
	if n.lit == "" {
		return "0"
	}
	return n.lit
}

// Canonical returns the canonical spelling of n (see the package
// documentation; like Java's BigDecimal.stripTrailingZeros().toString()).
func (n Number) Canonical() string {
	var buf [40]byte
	return string(appendCanonicalNumber(buf[:0], n.lit))
}

// Int64 returns n as an int64 if its value is an integer that fits
// (2.0 → 2; 2.5 and 1E+19 → false).
func (n Number) Int64() (int64, bool) {
	lit := n.String()
	if isSmallInt(lit) {
		i, err := strconv.ParseInt(lit, 10, 64)
		return i, err == nil
	}
	var buf [24]byte
	b, ok := integerDigits(buf[:0], lit, 19)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	return i, true
}

// Uint64 returns n as a uint64 if its value is a non-negative integer
// that fits (-0 → 0).
func (n Number) Uint64() (uint64, bool) {
	lit := n.String()
	var buf [24]byte
	b, ok := integerDigits(buf[:0], lit, 20)
	if !ok {
		return 0, false
	}
	if len(b) > 0 && b[0] == '-' {
		return 0, false // integerDigits maps all zeros to "0"
	}
	u, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	return u, true
}

// isSmallInt reports whether lit is an optional '-' followed by 1..18 digits.
func isSmallInt(lit string) bool {
	s := lit
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// canonicalInt reports whether lit is an integer literal already in both
// compact and canonical spelling: "0", or an optional '-' then 1..18
// digits with neither a leading nor a trailing zero ("-0", "07" and "10"
// are not: canonical JSON writes 0, and 10 as 1E+1).
func canonicalInt(lit string) bool {
	if lit == "0" {
		return true
	}
	s := lit
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 18 || s[0] == '0' || s[len(s)-1] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// plainInteger reports whether lit is an integer in plain notation without
// redundant digits (-?(0|[1-9][0-9]*), not -0): the only spelling of its
// value in that form, so two such literals are equal exactly when their
// text is.
func plainInteger(lit string) bool {
	s := lit
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || s[0] == '0' && (len(s) > 1 || len(lit) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// integerDigits appends the plain integer spelling of lit (with a leading
// '-' for negative non-zero values) if its value is an integer of at most
// maxDigits digits.
func integerDigits(dst []byte, lit string, maxDigits int64) ([]byte, bool) {
	p := splitLiteral(lit)
	first, last, nz := p.sigRange()
	if !nz {
		return append(dst, '0'), true
	}
	adj := p.adjusted(first)
	d := int64(last - first + 1)
	if d-1 > adj || adj >= maxDigits {
		return dst, false
	}
	if p.neg {
		dst = append(dst, '-')
	}
	dst = p.appendDigits(dst, first, last+1)
	for k := d - 1; k < adj; k++ {
		dst = append(dst, '0')
	}
	return dst, true
}

// Float64 returns the float64 nearest to n. Values beyond the float64 range
// yield ±Inf; values too small yield ±0.
func (n Number) Float64() float64 {
	f, _ := strconv.ParseFloat(n.String(), 64)
	return f
}

// Rat returns the exact value of n. The cost grows with the magnitude of
// the exponent (it is bounded for parsed numbers by Limits.MaxExponent).
func (n Number) Rat() *big.Rat {
	if n.IsZero() {
		return new(big.Rat)
	}
	u, scale := n.Decimal()
	if scale <= 0 {
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(-int64(scale)), nil)
		return new(big.Rat).SetInt(u.Mul(u, p))
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	return new(big.Rat).SetFrac(u, p)
}

// Decimal returns n as unscaled × 10^-scale, preserving the literal's scale
// (3.50 → 350, 2; 1.5E+3 → 15, -2). For a zero literal whose scale does not
// fit in int32 (e.g. 0E-99999999999) the scale is clamped.
func (n Number) Decimal() (unscaled *big.Int, scale int32) {
	p := splitLiteral(n.String())
	u := new(big.Int)
	if p.intp == "" && p.frac == "" {
		return u, 0
	}
	if _, ok := u.SetString(p.intp+p.frac, 10); !ok {
		return new(big.Int), 0
	}
	if p.neg {
		u.Neg(u)
	}
	s := int64(len(p.frac)) - p.exp
	switch {
	case s > 1<<31-1:
		s = 1<<31 - 1
	case s < -1<<31:
		s = -1 << 31
	}
	return u, int32(s)
}

// Cmp compares n and m numerically and exactly, returning -1, 0 or +1.
func (n Number) Cmp(m Number) int { return cmpLiterals(n.lit, m.lit) }

// IsInteger reports whether the numeric value of n is an integer (1.0 and
// 1E+2 are integers, 1.5 and 1E-2 are not).
func (n Number) IsInteger() bool {
	p := splitLiteral(n.lit)
	first, last, nz := p.sigRange()
	if !nz {
		return true
	}
	return int64(last-first) <= p.adjusted(first)
}

// IsZero reports whether the numeric value of n is zero (true for the zero
// Number, "0", "-0", "0.00", "0E+5").
func (n Number) IsZero() bool {
	p := splitLiteral(n.lit)
	_, _, nz := p.sigRange()
	return !nz
}

// MarshalJSON returns the literal. It fails for numbers beyond the encoding
// limits (see the package documentation).
func (n Number) MarshalJSON() ([]byte, error) {
	if err := checkLiteral(n.lit); err != nil {
		return nil, err
	}
	return []byte(n.String()), nil
}

// UnmarshalJSON sets n from a JSON number (see ParseNumber). JSON null
// leaves n unchanged; any other kind of value is an error.
func (n *Number) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), " \t\r\n")
	if s == "null" {
		return nil
	}
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return fmt.Errorf("exactjson: cannot unmarshal %s into Number: not a JSON number", truncate(s, 32))
	}
	x, err := ParseNumber(s)
	if err != nil {
		return err
	}
	*n = x
	return nil
}

// numParts is the decomposition of a valid number literal.
type numParts struct {
	neg  bool
	intp string // integer digits
	frac string // fraction digits
	exp  int64  // exponent, saturated at ±expSat
}

// splitLiteral decomposes a literal that has already been validated. It
// never panics, even on invalid input.
func splitLiteral(lit string) numParts {
	var p numParts
	if lit == "" {
		p.intp = "0"
		return p
	}
	i := 0
	if lit[0] == '-' {
		p.neg = true
		i = 1
	}
	j := i
	for j < len(lit) && isDigit(lit[j]) {
		j++
	}
	p.intp = lit[i:j]
	if j < len(lit) && lit[j] == '.' {
		k := j + 1
		for k < len(lit) && isDigit(lit[k]) {
			k++
		}
		p.frac = lit[j+1 : k]
		j = k
	}
	if j < len(lit) && (lit[j] == 'e' || lit[j] == 'E') {
		j++
		neg := false
		if j < len(lit) && (lit[j] == '+' || lit[j] == '-') {
			neg = lit[j] == '-'
			j++
		}
		for ; j < len(lit) && isDigit(lit[j]); j++ {
			if p.exp < expSat {
				p.exp = p.exp*10 + int64(lit[j]-'0')
			}
		}
		if neg {
			p.exp = -p.exp
		}
	}
	return p
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digit returns digit k of the concatenation intp+frac.
func (p *numParts) digit(k int) byte {
	if k < len(p.intp) {
		return p.intp[k]
	}
	return p.frac[k-len(p.intp)]
}

// sigRange returns the indexes (into intp+frac) of the first and last
// non-zero digits, and false if all digits are zero.
func (p *numParts) sigRange() (first, last int, nonzero bool) {
	n := len(p.intp) + len(p.frac)
	first = -1
	for k := 0; k < n; k++ {
		if p.digit(k) != '0' {
			first = k
			break
		}
	}
	if first < 0 {
		return 0, 0, false
	}
	last = n - 1
	for p.digit(last) == '0' {
		last--
	}
	return first, last, true
}

// adjusted returns the adjusted exponent given the first non-zero digit.
func (p *numParts) adjusted(first int) int64 {
	return p.exp + int64(len(p.intp)) - 1 - int64(first)
}

// appendDigits appends digits [from, to) of intp+frac.
func (p *numParts) appendDigits(dst []byte, from, to int) []byte {
	li := len(p.intp)
	if from < li {
		e := min(to, li)
		dst = append(dst, p.intp[from:e]...)
		from = e
	}
	if from < to {
		dst = append(dst, p.frac[from-li:to-li]...)
	}
	return dst
}

// cmpLiterals compares two valid literals numerically.
func cmpLiterals(a, b string) int {
	pa, pb := splitLiteral(a), splitLiteral(b)
	fa, la, nza := pa.sigRange()
	fb, lb, nzb := pb.sigRange()
	sa, sb := signOf(pa.neg, nza), signOf(pb.neg, nzb)
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	c := 0
	if aa, ab := pa.adjusted(fa), pb.adjusted(fb); aa != ab {
		c = 1
		if aa < ab {
			c = -1
		}
	} else {
		na, nb := la-fa+1, lb-fb+1
		for k := 0; k < min(na, nb); k++ {
			da, db := pa.digit(fa+k), pb.digit(fb+k)
			if da != db {
				c = 1
				if da < db {
					c = -1
				}
				break
			}
		}
		if c == 0 && na != nb {
			// The longer one has an extra non-zero digit.
			c = 1
			if na < nb {
				c = -1
			}
		}
	}
	return c * sa
}

func signOf(neg, nonzero bool) int {
	switch {
	case !nonzero:
		return 0
	case neg:
		return -1
	}
	return 1
}

// appendCanonicalNumber appends the canonical spelling of a valid literal.
func appendCanonicalNumber(dst []byte, lit string) []byte {
	p := splitLiteral(lit)
	first, last, nz := p.sigRange()
	if !nz {
		return append(dst, '0')
	}
	if p.neg {
		dst = append(dst, '-')
	}
	d := int64(last - first + 1)
	adj := p.adjusted(first)
	scale := d - 1 - adj
	if scale >= 0 && adj >= -6 {
		if adj >= 0 {
			k := first + int(adj) + 1 // end of the integer part
			dst = p.appendDigits(dst, first, k)
			if k <= last {
				dst = append(dst, '.')
				dst = p.appendDigits(dst, k, last+1)
			}
			return dst
		}
		dst = append(dst, '0', '.')
		for k := int64(0); k < -adj-1; k++ {
			dst = append(dst, '0')
		}
		return p.appendDigits(dst, first, last+1)
	}
	dst = append(dst, p.digit(first))
	if d > 1 {
		dst = append(dst, '.')
		dst = p.appendDigits(dst, first+1, last+1)
	}
	dst = append(dst, 'E')
	if adj < 0 {
		dst = append(dst, '-')
		adj = -adj
	} else {
		dst = append(dst, '+')
	}
	return strconv.AppendInt(dst, adj, 10)
}

// checkLiteral verifies a number literal against the encoding ceilings.
func checkLiteral(lit string) error {
	return checkLiteralWithin(lit, MaxNumberLengthCeiling, MaxExponentCeiling)
}

// checkLiteralWithin verifies a number literal against a length and an
// absolute adjusted exponent bound.
func checkLiteralWithin(lit string, maxLen, maxExp int) error {
	if len(lit) > maxLen {
		return &LimitError{Limit: "MaxNumberLength", Max: maxLen, Offset: -1}
	}
	if len(lit) < maxExp && strings.IndexAny(lit, "eE") < 0 {
		return nil // plain notation: |adjusted exponent| < its length
	}
	p := splitLiteral(lit)
	first, _, nz := p.sigRange()
	if nz {
		if adj := p.adjusted(first); adj > int64(maxExp) || adj < -int64(maxExp) {
			return &LimitError{Limit: "MaxExponent", Max: maxExp, Offset: -1}
		}
	}
	return nil
}

// CheckNumbers reports the first number of v (at any depth, member names
// aside) that a parser with limits l would refuse: longer than
// l.MaxNumberLength or with an absolute adjusted exponent above
// l.MaxExponent (zero fields: the defaults), as a *LimitError with a
// negative Offset. The encoders check numbers only against the ceilings
// (see "Encoding limits"), so a value built in code ([NumberFromDecimal])
// can encode and still be refused by every reader using the default
// limits; check such values with the readers' limits before sending them.
func (l Limits) CheckNumbers(v Value) error {
	l = l.resolved()
	return checkNumbers(v, l.MaxNumberLength, l.MaxExponent)
}

func checkNumbers(v Value, maxLen, maxExp int) error {
	switch v.kind {
	case KindNumber:
		return checkLiteralWithin(v.s, maxLen, maxExp)
	case KindArray, KindObject:
		for _, m := range v.members() {
			if k := m.Value.kind; k == KindNumber || k == KindArray || k == KindObject {
				if err := checkNumbers(m.Value, maxLen, maxExp); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// scanNumber scans a number token starting at s[i] (which must exist) and
// returns the index just past it.
func scanNumber(s string, i int, lim *Limits) (int, error) {
	start := i
	n := len(s)
	if s[i] == '-' {
		i++
		if i >= n {
			return i, &SyntaxError{Offset: int64(i), Msg: "unexpected end of input in number"}
		}
	}
	nd, nInt, firstNZ := 0, 0, -1
	switch c := s[i]; {
	case c == '0':
		i++
		nd, nInt = 1, 1
		if i < n && isDigit(s[i]) {
			return i, &SyntaxError{Offset: int64(start), Msg: "invalid number: leading zero"}
		}
	case c >= '1' && c <= '9':
		firstNZ = 0
		for i < n && isDigit(s[i]) {
			nd++
			i++
		}
		nInt = nd
	default:
		return i, &SyntaxError{Offset: int64(i), Msg: "invalid character " + describeByte(s, i) + " in number (expected digit)"}
	}
	if i < n && s[i] == '.' {
		i++
		if i >= n || !isDigit(s[i]) {
			return i, &SyntaxError{Offset: int64(i), Msg: "invalid number: expected digit after decimal point"}
		}
		for i < n && isDigit(s[i]) {
			if firstNZ < 0 && s[i] != '0' {
				firstNZ = nd
			}
			nd++
			i++
		}
	}
	var exp int64
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < n && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		if i >= n || !isDigit(s[i]) {
			return i, &SyntaxError{Offset: int64(i), Msg: "invalid number: expected digit in exponent"}
		}
		for i < n && isDigit(s[i]) {
			if exp < expSat {
				exp = exp*10 + int64(s[i]-'0')
			}
			i++
		}
		if neg {
			exp = -exp
		}
	}
	if i-start > lim.MaxNumberLength {
		return i, &LimitError{Limit: "MaxNumberLength", Max: lim.MaxNumberLength, Offset: int64(start)}
	}
	if firstNZ >= 0 {
		adj := exp + int64(nInt) - 1 - int64(firstNZ)
		if adj > int64(lim.MaxExponent) || adj < -int64(lim.MaxExponent) {
			return i, &LimitError{Limit: "MaxExponent", Max: lim.MaxExponent, Offset: int64(start)}
		}
	}
	return i, nil
}
