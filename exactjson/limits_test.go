package exactjson

import (
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"
)

// TestLimitsSame: same agrees with == whichever field differs, so a field
// added to Limits and not to same fails here.
func TestLimitsSame(t *testing.T) {
	base := DefaultLimits()
	if !base.same(base) || !(Limits{}).same(Limits{}) || base.same(Limits{}) {
		t.Fatal("same disagrees with == on whole values")
	}
	for i := range reflect.TypeFor[Limits]().NumField() {
		o := base
		f := reflect.ValueOf(&o).Elem().Field(i)
		f.SetInt(f.Int() + 1)
		if base.same(o) || o.same(base) || (base == o) {
			t.Errorf("field %s: same reports equal limits that differ", reflect.TypeFor[Limits]().Field(i).Name)
		}
	}
}

func TestCheckNumbers(t *testing.T) {
	num := func(digits string, scale int32) Value {
		u, _ := new(big.Int).SetString(digits, 10)
		return NumberValue(NumberFromDecimal(u, scale))
	}
	long := strings.Repeat("9", DefaultMaxNumberLength)
	cases := []struct {
		name  string
		lim   Limits
		v     Value
		limit string // "" = accepted
	}{
		{"small integer", Limits{}, Int(42), ""},
		{"exponent at the default", Limits{}, num("1", -DefaultMaxExponent), ""},
		{"exponent past the default", Limits{}, num("1", -DefaultMaxExponent-1), "MaxExponent"},
		{"negative exponent past the default", Limits{}, num("1", DefaultMaxExponent+1), "MaxExponent"},
		{"length at the default", Limits{}, num(long, 0), ""},
		{"length past the default", Limits{}, num(long+"9", 0), "MaxNumberLength"},
		{"nested in arrays and objects", Limits{}, Object(Field("a", Array(String("1E+99999"), Object(Field("n", num("1", -10001)))))), "MaxExponent"},
		{"strings are not numbers", Limits{}, Array(String("1E+99999")), ""},
		{"configured exponent", Limits{MaxExponent: 5}, num("1", -6), "MaxExponent"},
		{"configured length", Limits{MaxNumberLength: 3}, Int(1234), "MaxNumberLength"},
		{"zero with a huge exponent", Limits{}, mustNum(t, "0E+99999"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.lim.CheckNumbers(c.v)
			var le *LimitError
			switch {
			case c.limit == "" && err != nil:
				t.Fatalf("CheckNumbers = %v, want nil", err)
			case c.limit != "" && (!errors.As(err, &le) || le.Limit != c.limit || le.Offset >= 0):
				t.Fatalf("CheckNumbers = %v, want a %s LimitError without offset", err, c.limit)
			}
		})
	}
}

func mustNum(t *testing.T, lit string) Value {
	t.Helper()
	v, err := ParseString(lit, Limits{MaxExponent: MaxExponentCeiling})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
