// Package limitsdoc reads the tables of docs/limits.md for the tests that
// hold each package's limits to them: the root package's, the response
// cache's (package middleware) and the gateway's. A package's test lists
// its limits as [Limit]s and calls [Check] on the rows of its sections;
// [Constants] lists the package's constants, so that a test fails when one
// that names a limit is in no Limit.
package limitsdoc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Row is one row of a table of docs/limits.md.
type Row struct {
	Section string   // the "## " heading above the table
	Label   string   // the first ("limit") column
	Names   []string // the backticked Go identifiers of the other columns but "past it"
	Default string   // the raw "default" (or "value") cell; "" when the table has none
	Ceiling string   // the raw "ceiling" cell
	// HasCeiling says whether the table has a ceiling column.
	HasCeiling bool
	Past       string // the raw "past it" cell
}

var backticks = regexp.MustCompile("`([^`]+)`")

// ident matches the backticked names that are Go identifiers (possibly
// qualified, possibly a call), not protocol names such as `Mcp-Name`.
var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\([^)]*\))?$`)

// Parse reads the table rows of the Markdown file at path.
func Parse(path string) ([]Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("limitsdoc: %w", err)
	}
	var rows []Row
	var section string
	var cols []string
	cells := func(line string) []string {
		line = strings.TrimSpace(line)
		line = strings.TrimPrefix(line, "|")
		line = strings.TrimSuffix(line, "|")
		parts := strings.Split(line, "|")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			section, cols = strings.TrimPrefix(line, "## "), nil
		case strings.HasPrefix(line, "|"):
			c := cells(line)
			if cols == nil {
				cols = c
				continue
			}
			if strings.Trim(strings.Join(c, ""), "-: ") == "" {
				continue // the separator row
			}
			r := Row{Section: section, Label: c[0]}
			for i := 1; i < len(c) && i < len(cols); i++ {
				switch cols[i] {
				case "default", "value":
					r.Default = c[i]
				case "ceiling":
					r.Ceiling, r.HasCeiling = c[i], true
				case "past it":
					r.Past = c[i]
					continue
				}
				for _, m := range backticks.FindAllStringSubmatch(c[i], -1) {
					if ident.MatchString(m[1]) {
						r.Names = append(r.Names, m[1])
					}
				}
			}
			rows = append(rows, r)
		default:
			if strings.TrimSpace(line) == "" {
				cols = nil
			}
		}
	}
	return rows, nil
}

// InSections splits rows into those whose section starts with one of
// prefixes and the rest.
func InSections(rows []Row, prefixes ...string) (in, rest []Row) {
	for _, r := range rows {
		if slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(r.Section, p) }) {
			in = append(in, r)
		} else {
			rest = append(rest, r)
		}
	}
	return in, rest
}

// Value is a default or ceiling: none, a number, a duration, or a
// reference to another limit.
type Value struct {
	kind byte // 0 none, 'n' number, 'd' duration, 'r' reference
	n    int64
	ref  string
}

// None is the value of a limit without a default or a ceiling.
func None() Value { return Value{} }

// Num is a count or a size in bytes.
func Num(n int64) Value { return Value{kind: 'n', n: n} }

// Dur is a duration.
func Dur(d time.Duration) Value { return Value{kind: 'd', n: int64(d)} }

// Ref is the value of the limit named name.
func Ref(name string) Value { return Value{kind: 'r', ref: name} }

// IsNone reports whether v is None.
func (v Value) IsNone() bool { return v.kind == 0 }

func (v Value) String() string {
	switch v.kind {
	case 'n':
		return strconv.FormatInt(v.n, 10)
	case 'd':
		return time.Duration(v.n).String()
	case 'r':
		return "= " + v.ref
	}
	return "none"
}

var valueRe = regexp.MustCompile(`^(?:[≥=]\s*)?(?:\d+–)?([0-9][0-9,]*)(?:\^([0-9]+))?\s*(MiB|KiB|min|ms|s|h|days)?\b`)

// ParseValue reads a documented default or ceiling cell: "—", "off" and
// "unlimited..." are None, a leading backticked name a Ref, otherwise a
// number (with thousands separators, a power, a size or a time unit) and
// whatever text follows it.
func ParseValue(cell string) (Value, error) {
	cell = strings.TrimSpace(cell)
	switch {
	case cell == "" || cell == "—" || cell == "off" || strings.HasPrefix(cell, "unlimited"):
		return None(), nil
	case strings.HasPrefix(cell, "= `"), strings.HasPrefix(cell, "`"):
		return Ref(backticks.FindStringSubmatch(cell)[1]), nil
	}
	m := valueRe.FindStringSubmatch(cell)
	if m == nil {
		return Value{}, fmt.Errorf("cannot read %q", cell)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	if err != nil {
		return Value{}, fmt.Errorf("cannot read %q: %w", cell, err)
	}
	if m[2] != "" {
		e, _ := strconv.Atoi(m[2])
		b := n
		for n = 1; e > 0; e-- {
			n *= b
		}
	}
	switch m[3] {
	case "MiB":
		return Num(n << 20), nil
	case "KiB":
		return Num(n << 10), nil
	case "days":
		return Dur(time.Duration(n) * 24 * time.Hour), nil
	case "h":
		return Dur(time.Duration(n) * time.Hour), nil
	case "min":
		return Dur(time.Duration(n) * time.Minute), nil
	case "s":
		return Dur(time.Duration(n) * time.Second), nil
	case "ms":
		return Dur(time.Duration(n) * time.Millisecond), nil
	}
	return Num(n), nil
}

// Limit is a limit as the code has it.
type Limit struct {
	Doc     string   // the row's label in docs/limits.md, verbatim
	Names   []string // every backticked identifier of the row (but in "past it"), in order
	Default Value    // the default in effect
	Ceiling Value    // the hard ceiling (None when there is none)
	Past    []string // substrings the row's "past it" cell must contain
}

// Check compares rows with limits, both ways: a row no limit has, a limit
// no row has, and a row whose names, default, ceiling or "past it" differ
// from its limit's. It returns a description of each difference.
func Check(rows []Row, limits []Limit) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	byDoc := map[string]*Limit{}
	for i := range limits {
		l := &limits[i]
		if byDoc[l.Doc] != nil {
			fail("inventory: %q appears twice", l.Doc)
		}
		byDoc[l.Doc] = l
	}
	documented := map[string]bool{}
	for _, d := range rows {
		documented[d.Label] = true
		l := byDoc[d.Label]
		if l == nil {
			fail("docs/limits.md (%s) documents %q, which the inventory lacks", d.Section, d.Label)
			continue
		}
		if got, want := strings.Join(d.Names, ", "), strings.Join(l.Names, ", "); got != want {
			fail("%q: docs/limits.md names [%s], the inventory [%s]", d.Label, got, want)
		}
		if v, err := ParseValue(d.Default); err != nil {
			fail("%q default: %v", d.Label, err)
		} else if v != l.Default {
			fail("%q: docs/limits.md default %s (%q), the code %s", d.Label, v, d.Default, l.Default)
		}
		if d.HasCeiling {
			if v, err := ParseValue(d.Ceiling); err != nil {
				fail("%q ceiling: %v", d.Label, err)
			} else if v != l.Ceiling {
				fail("%q: docs/limits.md ceiling %s (%q), the code %s", d.Label, v, d.Ceiling, l.Ceiling)
			}
		} else if !l.Ceiling.IsNone() {
			fail("%q: the code has ceiling %s, docs/limits.md has no ceiling column for it", d.Label, l.Ceiling)
		}
		for _, p := range l.Past {
			if !strings.Contains(d.Past, p) {
				fail("%q: docs/limits.md \"past it\" is %q, missing %q", d.Label, d.Past, p)
			}
		}
	}
	for _, l := range limits {
		if !documented[l.Doc] {
			fail("inventory limit %q (%s) is not documented in docs/limits.md", l.Doc, strings.Join(l.Names, ", "))
		}
	}
	return errs
}

// Constants returns the names of the package-level constants declared in
// the non-test Go files of dir whose names match, sorted.
func Constants(dir string, match func(name string) bool) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, fmt.Errorf("limitsdoc: %w", err)
	}
	fset := token.NewFileSet()
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("limitsdoc: %w", err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if match(n.Name) {
						out = append(out, n.Name)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// CheckSection holds a package's limits to its section of the document at
// doc, both ways ([Check]), and the package in dir to its limits
// ([Uncovered]); it returns every problem found.
func CheckSection(doc, section, dir string, limits []Limit, also []string, notLimits map[string]string) ([]string, error) {
	all, err := Parse(doc)
	if err != nil {
		return nil, err
	}
	rows, _ := InSections(all, section)
	if len(rows) == 0 {
		return nil, fmt.Errorf("limitsdoc: %s has no %s section", doc, section)
	}
	errs := Check(rows, limits)
	more, err := Uncovered(dir, limits, also, notLimits)
	if err != nil {
		return nil, err
	}
	return append(errs, more...), nil
}

// Uncovered checks that the package in dir documents every limit it
// declares: it lists each constant named like a limit ([LimitName]) that
// no limit names (nor also, constants a documented row stands for without
// naming them), unless notLimits says why it bounds nothing a client makes
// large, and each notLimits entry the package does not declare.
func Uncovered(dir string, limits []Limit, also []string, notLimits map[string]string) ([]string, error) {
	consts, err := Constants(dir, LimitName)
	if err != nil {
		return nil, err
	}
	covered := map[string]bool{}
	for _, l := range limits {
		for _, n := range l.Names {
			covered[n] = true
		}
	}
	for _, n := range also {
		covered[n] = true
	}
	var errs []string
	for _, c := range consts {
		if !covered[c] && notLimits[c] == "" {
			errs = append(errs, fmt.Sprintf("constant %s names a limit that docs/limits.md lacks (document it, or say why it is no limit)", c))
		}
	}
	for _, c := range slices.Sorted(maps.Keys(notLimits)) {
		if !slices.Contains(consts, c) {
			errs = append(errs, fmt.Sprintf("the constants said to be no limits include %s, which the package does not declare", c))
		}
	}
	return errs, nil
}

// LimitName reports whether a constant's name reads as a limit's: it starts
// with Default or Max (or default or max), or ends with Timeout, TTL or
// Ceiling.
func LimitName(name string) bool {
	for _, p := range []string{"Default", "Max", "default", "max"} {
		if rest, ok := strings.CutPrefix(name, p); ok && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z' {
			return true
		}
	}
	for _, s := range []string{"Timeout", "TTL", "Ceiling"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}
