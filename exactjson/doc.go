// Package exactjson implements an exact JSON value model with a strict,
// bounded parser, a compact encoder, a canonical encoder and typed binding.
//
// # Values
//
// [Value] is an immutable JSON value. Objects keep their members in document
// order; numbers are kept as their validated JSON literal ([Number]), so no
// precision, scale or spelling is lost (3.50 stays "3.50"). The zero Value is
// JSON null.
//
// # Parsing
//
// [Parse] accepts exactly RFC 8259 JSON and rejects everything else:
// invalid UTF-8 anywhere, a leading byte order mark, raw control characters
// in strings, unpaired UTF-16 surrogate escapes, duplicate object member
// names (compared byte-wise after unescaping, so "a" and "\u0061" are
// duplicates), non-JSON whitespace, leading zeros, trailing garbage, and so
// on. Resource use is bounded by [Limits]; a violated limit is reported as a
// *[LimitError] (which matches [ErrLimit] with errors.Is), a grammar
// violation as a *[SyntaxError]. Both carry the byte offset.
//
// The parser makes one copy of the input (a single string), and every
// string, number literal and raw container span of the result is a substring
// of that copy. Parsed values therefore do not alias the caller's buffer, and
// the caller may reuse it after Parse returns; a retained value keeps the
// whole input copy alive.
//
// # Adjusted exponent
//
// The adjusted exponent of a non-zero number is the power of ten of its
// leading significant digit: 1.5E+3 → 3, 0.001 → -3, 123 → 2, 12.5E-1 → 0.
// The adjusted exponent of zero is 0 whatever its spelling. [Limits.MaxExponent]
// bounds its absolute value.
//
// # Compact encoding
//
// [AppendJSON] and [Encode] write compact JSON in document order with number
// literals unchanged. Strings escape only what JSON requires: '"' and '\'
// as \" and \\, control characters with the short forms \b \f \n \r \t, the
// other control characters below U+0020 as lowercase \u00xx; everything else
// (including '/', '<', '>', '&', U+2028 and U+2029) is written as raw UTF-8.
//
// # Canonical form
//
// [Canonical] and [AppendCanonical] produce a deterministic byte string used
// to compute digests ([AppendCanonicalWithout] leaves out members the digest
// must not cover). It is defined as follows:
//
//   - No whitespace anywhere.
//   - Object members are sorted by the unsigned byte order of their UTF-8
//     names (Go string comparison). Duplicate names are an error.
//   - Array elements keep their order.
//   - Strings are escaped exactly as in the compact encoding above. A string
//     with invalid UTF-8 is an error.
//   - Numbers are written like Java's BigDecimal.stripTrailingZeros().toString():
//     trailing zeros of the unscaled value are removed (adjusting the scale);
//     zero is always 0 (also -0, 0.0, 0E+5). Then, with d the number of digits
//     of the unscaled value and adjusted = -scale + (d-1): if scale >= 0 and
//     adjusted >= -6 the number is written in plain notation (1.5, 0.000001,
//     123.45, -2); otherwise in scientific notation: the first digit, then "."
//     and the remaining digits if d > 1, then "E", then the sign "+" or "-"
//     (always present), then |adjusted| (100 → 1E+2, 1.2E3 → 1.2E+3,
//     0.0000001 → 1E-7, -12300 → -1.23E+4).
//   - true, false and null are written as such.
//
// Two valid values have equal canonical bytes if and only if [Equal] reports
// true for them.
//
// # Encoding limits
//
// Both encoders reject values that no accepted [Limits] could have produced:
// nesting deeper than [MaxDepthCeiling], number literals longer than
// [MaxNumberLengthCeiling] or with an adjusted exponent beyond
// [MaxExponentCeiling] (as can be built with [NumberFromDecimal]). These are
// reported as *[LimitError] with a negative Offset.
//
// # Typed binding
//
// [Unmarshal], [Decode] and [FromGo] bridge to Go types through
// github.com/go-json-experiment/json (v2 semantics: case-sensitive member
// names, duplicate names rejected, unknown members ignored). [Value] and
// [Number] implement json.Marshaler and json.Unmarshaler so they can be used
// as field types with both that package and encoding/json.
package exactjson
