package exactjson

import "fmt"

// Default values and hard ceilings for Limits.
const (
	// DefaultMaxInputBytes is the default Limits.MaxInputBytes (4 MiB).
	DefaultMaxInputBytes = 4 << 20
	// MaxInputBytesCeiling is the largest accepted Limits.MaxInputBytes (16 MiB).
	MaxInputBytesCeiling = 16 << 20
	// DefaultMaxDepth is the default Limits.MaxDepth.
	DefaultMaxDepth = 128
	// MaxDepthCeiling is the largest accepted Limits.MaxDepth.
	MaxDepthCeiling = 256
	// DefaultMaxNodes is the default Limits.MaxNodes.
	DefaultMaxNodes = 100_000
	// MaxNodesCeiling is the largest accepted Limits.MaxNodes.
	MaxNodesCeiling = 1_000_000
	// DefaultMaxNumberLength is the default Limits.MaxNumberLength.
	DefaultMaxNumberLength = 1024
	// MaxNumberLengthCeiling is the largest accepted Limits.MaxNumberLength.
	MaxNumberLengthCeiling = 4096
	// DefaultMaxExponent is the default Limits.MaxExponent.
	DefaultMaxExponent = 10_000
	// MaxExponentCeiling is the largest accepted Limits.MaxExponent.
	MaxExponentCeiling = 100_000
	// DefaultMaxStringBytes is the default Limits.MaxStringBytes (1 MiB).
	DefaultMaxStringBytes = 1 << 20
	// MaxStringBytesCeiling is the largest accepted Limits.MaxStringBytes (4 MiB).
	MaxStringBytesCeiling = 4 << 20
	// DefaultMaxOutputBytes is the output limit used by Encode when its
	// maxBytes argument is 0 (4 MiB).
	DefaultMaxOutputBytes = 4 << 20
)

// Limits bounds the resources a parse may use. A zero field means the
// default for that field, everywhere a Limits is accepted.
type Limits struct {
	// MaxInputBytes bounds the total input length (default 4 MiB, ceiling 16 MiB).
	MaxInputBytes int
	// MaxDepth bounds nesting of arrays and objects: a scalar at top level is
	// depth 0, [] is depth 1 (default 128, ceiling 256).
	MaxDepth int
	// MaxNodes bounds the number of values; every value counts as one node,
	// member names do not (default 100,000, ceiling 1,000,000).
	MaxNodes int
	// MaxNumberLength bounds the length of each number token in bytes
	// (default 1,024, ceiling 4,096).
	MaxNumberLength int
	// MaxExponent bounds the absolute adjusted exponent of each number (see
	// the package documentation; default 10,000, ceiling 100,000).
	MaxExponent int
	// MaxStringBytes bounds the decoded UTF-8 length of each string,
	// member names included (default 1 MiB, ceiling 4 MiB).
	MaxStringBytes int
}

// same is l == o, field by field: inlined, where == on the struct calls
// memequal (TestLimitsSame keeps it covering every field).
func (l Limits) same(o Limits) bool {
	return l.MaxInputBytes == o.MaxInputBytes && l.MaxDepth == o.MaxDepth && l.MaxNodes == o.MaxNodes &&
		l.MaxNumberLength == o.MaxNumberLength && l.MaxExponent == o.MaxExponent && l.MaxStringBytes == o.MaxStringBytes
}

// DefaultLimits returns the default limits with every field filled in.
func DefaultLimits() Limits {
	return Limits{
		MaxInputBytes:   DefaultMaxInputBytes,
		MaxDepth:        DefaultMaxDepth,
		MaxNodes:        DefaultMaxNodes,
		MaxNumberLength: DefaultMaxNumberLength,
		MaxExponent:     DefaultMaxExponent,
		MaxStringBytes:  DefaultMaxStringBytes,
	}
}

// Validate reports an error naming the first field that is neither 0
// (meaning the default) nor within 1..its ceiling.
func (l Limits) Validate() error {
	// The common case, every field valid, in six unsigned comparisons
	// (a negative value wraps to a huge one).
	if uint(l.MaxInputBytes) <= MaxInputBytesCeiling && uint(l.MaxDepth) <= MaxDepthCeiling &&
		uint(l.MaxNodes) <= MaxNodesCeiling && uint(l.MaxNumberLength) <= MaxNumberLengthCeiling &&
		uint(l.MaxExponent) <= MaxExponentCeiling && uint(l.MaxStringBytes) <= MaxStringBytesCeiling {
		return nil
	}
	checks := [...]struct {
		name    string
		v, ceil int
	}{
		{"MaxInputBytes", l.MaxInputBytes, MaxInputBytesCeiling},
		{"MaxDepth", l.MaxDepth, MaxDepthCeiling},
		{"MaxNodes", l.MaxNodes, MaxNodesCeiling},
		{"MaxNumberLength", l.MaxNumberLength, MaxNumberLengthCeiling},
		{"MaxExponent", l.MaxExponent, MaxExponentCeiling},
		{"MaxStringBytes", l.MaxStringBytes, MaxStringBytesCeiling},
	}
	for _, c := range checks {
		if c.v < 0 || c.v > c.ceil {
			return fmt.Errorf("exactjson: invalid Limits.%s %d: must be 0 (default) or 1..%d", c.name, c.v, c.ceil)
		}
	}
	return nil
}

// resolved returns l with zero fields replaced by defaults.
func (l Limits) resolved() Limits {
	if l.MaxInputBytes == 0 {
		l.MaxInputBytes = DefaultMaxInputBytes
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxNodes == 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	if l.MaxNumberLength == 0 {
		l.MaxNumberLength = DefaultMaxNumberLength
	}
	if l.MaxExponent == 0 {
		l.MaxExponent = DefaultMaxExponent
	}
	if l.MaxStringBytes == 0 {
		l.MaxStringBytes = DefaultMaxStringBytes
	}
	return l
}
