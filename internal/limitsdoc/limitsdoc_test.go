package limitsdoc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseValue(t *testing.T) {
	tests := []struct {
		cell string
		want Value
		err  bool
	}{
		{"—", None(), false},
		{"unlimited (0)", None(), false},
		{"= `Limits.MaxBodyBytes`", Ref("Limits.MaxBodyBytes"), false},
		{"10 MiB (`DefaultMaxBodyBytes`)", Num(10 << 20), false},
		{"64 KiB", Num(64 << 10), false},
		{"1,000,000 (`MaxSessionsCeiling`)", Num(1_000_000), false},
		{"2^32", Num(1 << 32), false},
		{"≥ 32 bytes", Num(32), false},
		{"1–64 token characters", Num(64), false},
		{"15 min", Dur(15 * time.Minute), false},
		{"30 days", Dur(30 * 24 * time.Hour), false},
		{"5 s", Dur(5 * time.Second), false},
		{"many", Value{}, true},
	}
	for _, tc := range tests {
		got, err := ParseValue(tc.cell)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseValue(%q) = %v, %v; want %v, error %v", tc.cell, got, err, tc.want, tc.err)
		}
	}
}

// TestCheck: a row or limit missing on either side, and a differing
// default, are reported.
func TestCheck(t *testing.T) {
	doc := "## A (`x`)\n\n| limit | field | default | ceiling | past it |\n|---|---|---|---|---|\n" +
		"| one | `F.One` | 8 (`DefaultOne`) | — | refused |\n| two | `F.Two` | 5 s | 1 min | cut |\n\n## B\n\n| limit | value | past it |\n|---|---|---|\n| three | 3 | dropped |\n"
	path := filepath.Join(t.TempDir(), "limits.md")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	rows, err := Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	a, b := InSections(rows, "A")
	if len(a) != 2 || len(b) != 1 || !slices.Equal(a[0].Names, []string{"F.One", "DefaultOne"}) {
		t.Fatalf("rows %+v / %+v", a, b)
	}
	good := []Limit{
		{Doc: "one", Names: []string{"F.One", "DefaultOne"}, Default: Num(8), Past: []string{"refused"}},
		{Doc: "two", Names: []string{"F.Two"}, Default: Dur(5 * time.Second), Ceiling: Dur(time.Minute), Past: []string{"cut"}},
	}
	if errs := Check(a, good); len(errs) != 0 {
		t.Fatalf("Check of matching limits: %v", errs)
	}
	tests := []struct {
		name   string
		limits []Limit
		want   string
	}{
		{"undocumented", append(slices.Clone(good), Limit{Doc: "four"}), `"four" () is not documented`},
		{"not in the inventory", good[:1], `documents "two", which the inventory lacks`},
		{"other default", []Limit{good[0], {Doc: "two", Names: []string{"F.Two"}, Default: Dur(time.Second), Ceiling: Dur(time.Minute)}}, `default 5s ("5 s"), the code 1s`},
		{"other past", []Limit{{Doc: "one", Names: []string{"F.One", "DefaultOne"}, Default: Num(8), Past: []string{"503"}}, good[1]}, `missing "503"`},
	}
	for _, tc := range tests {
		errs := Check(a, tc.limits)
		if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
			t.Errorf("%s: %v, want one error with %q", tc.name, errs, tc.want)
		}
	}
}

func TestLimitName(t *testing.T) {
	for name, want := range map[string]bool{
		"DefaultMaxBodyBytes": true, "MaxQueueCeiling": true, "maxLine": true, "ReadinessTimeout": true,
		"callerListTTL": true, "defaultPageSize": true, "Maximum": false, "Defaults": false, "defaults": false, "codeURLElicitationRequired": false,
	} {
		if got := LimitName(name); got != want {
			t.Errorf("LimitName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestUncovered(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nconst (\n\tDefaultWidth = 8\n\tmaxDepth = 4\n\tpoolTTL = 1\n\tname = \"x\"\n)\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		limits    []Limit
		also      []string
		notLimits map[string]string
		want      []string // constants reported, in order
	}{
		{"all covered", []Limit{{Names: []string{"DefaultWidth"}}}, []string{"maxDepth"}, map[string]string{"poolTTL": "a freshness window"}, nil},
		{"one undocumented", []Limit{{Names: []string{"DefaultWidth"}}}, nil, map[string]string{"poolTTL": "a freshness window"}, []string{"maxDepth"}},
		{"a stale exemption", []Limit{{Names: []string{"DefaultWidth", "maxDepth", "poolTTL"}}}, nil, map[string]string{"gone": "x"}, []string{"gone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, err := Uncovered(dir, tc.limits, tc.also, tc.notLimits)
			if err != nil {
				t.Fatal(err)
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("got %q, want reports of %q", errs, tc.want)
			}
			for i, e := range errs {
				if !slices.Contains(strings.FieldsFunc(e, func(r rune) bool { return r == ' ' || r == ',' }), tc.want[i]) {
					t.Errorf("report %q does not name %s", e, tc.want[i])
				}
			}
		})
	}
}
