package exactjson

import (
	"reflect"
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
