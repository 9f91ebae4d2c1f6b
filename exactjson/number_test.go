package exactjson

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

func mustNumber(t testing.TB, s string) Number {
	t.Helper()
	n, err := ParseNumber(s)
	if err != nil {
		t.Fatalf("ParseNumber(%q): %v", s, err)
	}
	return n
}

func TestCanonicalNumbers(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"},
		{"-0", "0"},
		{"0.0", "0"},
		{"0E+5", "0"},
		{"-0.000e-7", "0"},
		{"1", "1"},
		{"-2", "-2"},
		{"1.5", "1.5"},
		{"1.50", "1.5"},
		{"3.50", "3.5"},
		{"123.45", "123.45"},
		{"0.000001", "0.000001"},
		{"0.0000001", "1E-7"},
		{"0.00000012", "1.2E-7"},
		{"0.0000010", "0.000001"},
		{"100", "1E+2"},
		{"10", "1E+1"},
		{"12", "12"},
		{"120", "1.2E+2"},
		{"1.2E3", "1.2E+3"},
		{"-12300", "-1.23E+4"},
		{"1E+0", "1"},
		{"10E-1", "1"},
		{"1e0", "1"},
		{"1.0", "1"},
		{"100E-2", "1"},
		{"123E-2", "1.23"},
		{"1E-6", "0.000001"},
		{"1E-7", "1E-7"},
		{"1.5E+3", "1.5E+3"},
		{"1234.5E-10", "1.2345E-7"},
		{"0.1", "0.1"},
		{"-0.5", "-0.5"},
		{"9007199254740993", "9007199254740993"},
		{"9007199254740990", "9.00719925474099E+15"},
		{"1E10000", "1E+10000"},
		{"1E-10000", "1E-10000"},
		{"0.00123E2", "0.123"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			n := mustNumber(t, tt.in)
			if got := n.Canonical(); got != tt.want {
				t.Errorf("Canonical(%s) = %s, want %s", tt.in, got, tt.want)
			}
			if n.String() != tt.in {
				t.Errorf("String() = %s, want %s", n.String(), tt.in)
			}
			c, err := Canonical(NumberValue(n))
			if err != nil || string(c) != tt.want {
				t.Errorf("Canonical(value) = %s, %v", c, err)
			}
			// The canonical form is itself a valid number with the same value.
			cn := mustNumber(t, tt.want)
			if cn.Cmp(n) != 0 || cn.Canonical() != tt.want {
				t.Errorf("canonical %s not stable/equal", tt.want)
			}
			// Cross-check the value with big.Rat.
			if tt.in != "1E10000" && tt.in != "1E-10000" && n.Rat().Cmp(cn.Rat()) != 0 {
				t.Errorf("Rat mismatch")
			}
		})
	}
}

func TestParseNumberErrors(t *testing.T) {
	tests := []struct{ in, limit string }{
		{"", ""}, {"+1", ""}, {"01", ""}, {".5", ""}, {"5.", ""}, {"1e", ""}, {"NaN", ""}, {"Infinity", ""},
		{"1 ", ""}, {" 1", ""}, {"1x", ""}, {"--1", ""}, {"0x1", ""}, {"1.5.5", ""},
		{strings.Repeat("9", 1025), "MaxNumberLength"},
		{"1E10001", "MaxExponent"},
		{"1E99999999999999999999999999999999", "MaxExponent"},
		{"1E-99999999999999999999999999999999", "MaxExponent"},
	}
	for _, tt := range tests {
		_, err := ParseNumber(tt.in)
		if err == nil {
			t.Errorf("ParseNumber(%q) succeeded", tt.in)
			continue
		}
		var le *LimitError
		var se *SyntaxError
		if tt.limit != "" {
			if !errors.As(err, &le) || le.Limit != tt.limit {
				t.Errorf("ParseNumber(%q) = %v, want %s", tt.in, err, tt.limit)
			}
		} else if !errors.As(err, &se) {
			t.Errorf("ParseNumber(%q) = %v, want *SyntaxError", tt.in, err)
		}
	}
}

func TestNumberInt64(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"2", 2, true},
		{"2.0", 2, true},
		{"2.5", 0, false},
		{"-7", -7, true},
		{"1E+2", 100, true},
		{"1.5E1", 15, true},
		{"150E-1", 15, true},
		{"1E-2", 0, false},
		{"9007199254740993", 9007199254740993, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"9.223372036854775807E18", math.MaxInt64, true},
		{"1E18", 1e18, true},
		{"1E19", 0, false},
		{"1E10000", 0, false},
		{"0.000E+99", 0, true},
		{"123456789012345678.000", 123456789012345678, true},
	}
	for _, tt := range tests {
		n := mustNumber(t, tt.in)
		got, ok := n.Int64()
		if got != tt.want || ok != tt.ok {
			t.Errorf("Int64(%s) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		if ok != (n.IsInteger() && n.Rat().Num().IsInt64()) {
			t.Errorf("Int64(%s) ok=%v inconsistent with IsInteger/Rat", tt.in, ok)
		}
	}
	if i, ok := (Number{}).Int64(); i != 0 || !ok {
		t.Errorf("zero Number Int64 = %d, %v", i, ok)
	}
}

func TestNumberUint64(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"-0.0", 0, true},
		{"-1", 0, false},
		{"18446744073709551615", math.MaxUint64, true},
		{"18446744073709551616", 0, false},
		{"1.8446744073709551615E19", math.MaxUint64, true},
		{"1E19", 1e19, true},
		{"1E20", 0, false},
		{"2.5", 0, false},
	}
	for _, tt := range tests {
		got, ok := mustNumber(t, tt.in).Uint64()
		if got != tt.want || ok != tt.ok {
			t.Errorf("Uint64(%s) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNumberDecimal(t *testing.T) {
	tests := []struct {
		in       string
		unscaled string
		scale    int32
	}{
		{"3.50", "350", 2},
		{"0", "0", 0},
		{"-0.00", "0", 2},
		{"1.5E+3", "15", -2},
		{"1E-2", "1", 2},
		{"-12.345e1", "-12345", 2},
		{"100", "100", 0},
	}
	for _, tt := range tests {
		n := mustNumber(t, tt.in)
		u, s := n.Decimal()
		if u.String() != tt.unscaled || s != tt.scale {
			t.Errorf("Decimal(%s) = %s, %d; want %s, %d", tt.in, u, s, tt.unscaled, tt.scale)
		}
		// NumberFromDecimal reproduces the same decimal and numeric value.
		m := NumberFromDecimal(u, s)
		u2, s2 := m.Decimal()
		if u2.Cmp(u) != 0 || s2 != s || m.Cmp(n) != 0 {
			t.Errorf("NumberFromDecimal(%s, %d) = %s (%s, %d)", u, s, m, u2, s2)
		}
	}
}

func TestNumberFromDecimal(t *testing.T) {
	tests := []struct {
		unscaled *big.Int
		scale    int32
		want     string
	}{
		{big.NewInt(350), 2, "3.50"},
		{big.NewInt(-350), 2, "-3.50"},
		{big.NewInt(5), 3, "0.005"},
		{big.NewInt(-5), 3, "-0.005"},
		{big.NewInt(0), 2, "0.00"},
		{nil, 0, "0"},
		{big.NewInt(12), 0, "12"},
		{big.NewInt(12), -3, "12E+3"},
		{big.NewInt(-1), -1, "-1E+1"},
		{big.NewInt(7), 5000, "7E-5000"},
		{big.NewInt(7), 1022, "0." + strings.Repeat("0", 1021) + "7"},
		{big.NewInt(-7), 1021, "-0." + strings.Repeat("0", 1020) + "7"},
		{big.NewInt(-7), 1022, "-7E-1022"},
		{big.NewInt(7), 1023, "7E-1023"},
		{new(big.Int).Exp(big.NewInt(10), big.NewInt(1500), nil), 2, "1" + strings.Repeat("0", 1500) + "E-2"},
		{big.NewInt(7), math.MaxInt32, "7E-2147483647"},
		{big.NewInt(7), math.MinInt32, "7E+2147483648"},
	}
	for _, tt := range tests {
		n := NumberFromDecimal(tt.unscaled, tt.scale)
		if n.String() != tt.want {
			t.Errorf("NumberFromDecimal(%v, %d) = %s, want %s", tt.unscaled, tt.scale, n, tt.want)
		}
		_, s := n.Decimal()
		if s != tt.scale {
			t.Errorf("NumberFromDecimal(%v, %d).Decimal scale = %d", tt.unscaled, tt.scale, s)
		}
	}
}

func TestNumberCmp(t *testing.T) {
	ordered := []string{
		"-1E+100", "-12300", "-2", "-1.5", "-1", "-0.5", "-1E-7",
		"0", "1E-10000", "0.000001", "0.5", "1", "1.000000001", "1.5", "2", "10", "12300", "1E+100",
	}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := mustNumber(t, a).Cmp(mustNumber(t, b)); got != want {
				t.Errorf("Cmp(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
	equal := []string{"1", "1.0", "1E+0", "10E-1", "0.1e1", "1.000", "100E-2"}
	for _, a := range equal {
		for _, b := range equal {
			if mustNumber(t, a).Cmp(mustNumber(t, b)) != 0 {
				t.Errorf("Cmp(%s, %s) != 0", a, b)
			}
		}
	}
	if (Number{}).Cmp(mustNumber(t, "-0.0")) != 0 {
		t.Error("zero Number != -0.0")
	}
}

func TestNumberMisc(t *testing.T) {
	var z Number
	if z.String() != "0" || z.Canonical() != "0" || !z.IsZero() || !z.IsInteger() || z.Float64() != 0 {
		t.Errorf("zero Number misbehaves: %q %q", z.String(), z.Canonical())
	}
	if b, err := z.MarshalJSON(); err != nil || string(b) != "0" {
		t.Errorf("zero MarshalJSON = %s, %v", b, err)
	}
	if r := z.Rat(); r.Sign() != 0 {
		t.Errorf("zero Rat = %v", r)
	}
	if mustNumber(t, "0.00").IsZero() != true || mustNumber(t, "0.01").IsZero() {
		t.Error("IsZero")
	}
	for s, want := range map[string]bool{"1.0": true, "1E+2": true, "1.5": false, "1E-2": false, "15E-1": false, "150E-1": true} {
		if got := mustNumber(t, s).IsInteger(); got != want {
			t.Errorf("IsInteger(%s) = %v", s, got)
		}
	}
	if f := mustNumber(t, "0.1").Float64(); f != 0.1 {
		t.Errorf("Float64(0.1) = %v", f)
	}
	if f := mustNumber(t, "1E400").Float64(); !math.IsInf(f, 1) {
		t.Errorf("Float64(1E400) = %v", f)
	}
	if r := mustNumber(t, "-1.25E+1").Rat(); r.Cmp(big.NewRat(-25, 2)) != 0 {
		t.Errorf("Rat = %v", r)
	}
	if r := mustNumber(t, "12E+2").Rat(); r.Cmp(big.NewRat(1200, 1)) != 0 {
		t.Errorf("Rat = %v", r)
	}
	huge := NumberFromDecimal(big.NewInt(1), -200000)
	if _, err := huge.MarshalJSON(); !errors.Is(err, ErrLimit) {
		t.Errorf("huge MarshalJSON err = %v", err)
	}
	long := NumberFromDecimal(new(big.Int).Exp(big.NewInt(10), big.NewInt(5000), nil), 0)
	if _, err := long.MarshalJSON(); !errors.Is(err, ErrLimit) {
		t.Errorf("long MarshalJSON err = %v", err)
	}
}

func TestNumberUnmarshalJSON(t *testing.T) {
	var n Number
	if err := n.UnmarshalJSON([]byte("3.50")); err != nil || n.String() != "3.50" {
		t.Fatalf("UnmarshalJSON = %s, %v", n, err)
	}
	if err := n.UnmarshalJSON([]byte("null")); err != nil || n.String() != "3.50" {
		t.Errorf("null changed n: %s, %v", n, err)
	}
	for _, bad := range []string{`"1"`, "true", "[1]", "01", "", "1E99999"} {
		if err := n.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("UnmarshalJSON(%q) succeeded", bad)
		}
	}
}

func TestFloat(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "-0"},
		{1, "1"},
		{0.1, "0.1"},
		{-2.5, "-2.5"},
		{1e21, "1E+21"},
		{1e20, "100000000000000000000"},
		{100000, "100000"},
		{1e-7, "1E-7"},
		{1.5e-300, "1.5E-300"},
		{123456789, "123456789"},
		{50, "50"},
		{0.000001, "0.000001"},
		{math.MaxFloat64, "1.7976931348623157E+308"},
		{5e-324, "5E-324"},
	}
	for _, tt := range tests {
		v, err := Float(tt.f)
		if err != nil {
			t.Fatalf("Float(%v): %v", tt.f, err)
		}
		n, _ := v.AsNumber()
		if n.String() != tt.want {
			t.Errorf("Float(%v) = %s, want %s", tt.f, n, tt.want)
		}
		if _, err := ParseNumber(n.String()); err != nil {
			t.Errorf("Float(%v) literal invalid: %v", tt.f, err)
		}
		if n.Float64() != tt.f || math.Signbit(n.Float64()) != math.Signbit(tt.f) {
			t.Errorf("Float(%v) does not round-trip: %v", tt.f, n.Float64())
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := Float(f); err == nil {
			t.Errorf("Float(%v) succeeded", f)
		}
	}
}

func ratInt(i int64) *big.Rat { return new(big.Rat).SetInt64(i) }

// Numbers built by NumberFromDecimal within the default limits always parse
// with DefaultLimits.
func TestNumberFromDecimalParses(t *testing.T) {
	for _, scale := range []int32{0, 1, 5, 1000, 1021, 1022, 1023, 1024, 5000, 9999, -5, -9000} {
		for _, u := range []int64{0, 7, -7, 123456789, -100} {
			n := NumberFromDecimal(big.NewInt(u), scale)
			p, err := ParseNumber(n.String())
			if err != nil {
				t.Errorf("NumberFromDecimal(%d, %d) = %.40s...: %v", u, scale, n, err)
				continue
			}
			if p.Cmp(n) != 0 {
				t.Errorf("value changed")
			}
			gu, gs := p.Decimal()
			if gu.Int64() != u || gs != scale {
				t.Errorf("NumberFromDecimal(%d, %d).Decimal() = %v, %d", u, scale, gu, gs)
			}
		}
	}
}
