package uritemplate

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// oracle decides whether uri matches the compiled units by trying every
// split, using validity checks written independently of the matcher. It
// is exponential and only meant for short inputs.
type oracle struct {
	units []unit
	uri   string
	memo  map[[2]int]bool
}

func (o *oracle) match(i, p int) bool {
	if i == len(o.units) {
		return p == len(o.uri)
	}
	key := [2]int{i, p}
	if v, ok := o.memo[key]; ok {
		return v
	}
	res := false
	u := &o.units[i]
	for q := p; q <= len(o.uri) && !res; q++ {
		var ok bool
		switch u.kind {
		case unitLit:
			ok = normalizeHigh(o.uri[p:q]) == u.lit
		case unitCap:
			ok = validCapture(o.uri[p:q], u.class, u.maxRunes)
		case unitQuery:
			ok = o.validQuery(u, p, q)
		}
		res = ok && o.match(i+1, q)
	}
	o.memo[key] = res
	return res
}

// normalizeHigh decodes pct-encoded triplets of non-ASCII bytes.
func normalizeHigh(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			if b := unhex(s[i+1])<<4 | unhex(s[i+2]); b >= 0x80 {
				sb.WriteByte(b)
				i += 2
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

func pctValid(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func validCapture(v string, cls capClass, maxRunes int) bool {
	if v == "" || !pctValid(v) {
		return false
	}
	switch cls {
	case classSimple:
		if strings.ContainsAny(v, "/?#") {
			return false
		}
		d := pctDecode(v)
		return utf8.ValidString(d) && (maxRunes == 0 || utf8.RuneCountInString(d) <= maxRunes)
	default:
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c == '#' || (cls == classReserved && c == '?') {
				return false
			}
			if c != '%' && !isUnreserved(c) && !isReserved(c) {
				return false
			}
		}
		return maxRunes == 0 || len(v) <= maxRunes
	}
}

func validQueryValue(v string, maxRunes int) bool {
	if !pctValid(v) {
		return false
	}
	d := pctDecode(v)
	return utf8.ValidString(d) && (maxRunes == 0 || utf8.RuneCountInString(d) <= maxRunes)
}

// validQuery reports whether uri[p:q] is a query expression of u that
// may be followed by uri[q:].
func (o *oracle) validQuery(u *unit, p, q int) bool {
	if p == q {
		return true
	}
	s := o.uri[p:q]
	if s[0] != u.first || strings.Contains(s, "#") {
		return false
	}
	pairs := strings.Split(s[1:], "&")
	used := map[string]bool{}
	for j, pair := range pairs {
		last := j == len(pairs)-1
		name, val, hasEq := strings.Cut(pair, "=")
		if !hasEq && last && q < len(o.uri) && o.uri[q] != '&' && o.uri[q] != '#' {
			return false // a bare name must be a complete pair
		}
		if name == "" || used[name] {
			return false
		}
		used[name] = true
		found := false
		for _, qn := range u.qnames {
			if qn.name == name {
				found = validQueryValue(val, qn.maxRunes)
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func randomTemplate(rng *rand.Rand) string {
	lits := []string{"a", "/", "-", ".", ",", "ü", "%C3%BC", "%2F", "=", "?", "&", "#", "x;"}
	ops := []string{"", "", "+", "#", ".", "/", ";", "?", "&"}
	mods := []string{"", "", "", ":1", ":2", "*"}
	var sb strings.Builder
	nv := 0
	for k := rng.IntN(4) + 1; k > 0; k-- {
		if rng.IntN(2) == 0 {
			sb.WriteString(lits[rng.IntN(len(lits))])
			continue
		}
		sb.WriteString("{" + ops[rng.IntN(len(ops))])
		for j := rng.IntN(2); j >= 0; j-- {
			sb.WriteString(string(rune('a' + nv)))
			nv++
			sb.WriteString(mods[rng.IntN(len(mods))])
			if j > 0 {
				sb.WriteByte(',')
			}
		}
		sb.WriteString("}")
	}
	return sb.String()
}

func randomURI(rng *rand.Rand, tp *Template) string {
	alphabet := []string{"a", "b", "/", "?", "#", "&", "=", ",", ".", ";", "%", "%C3", "%A9", "ü", "%2F", "%4", "\xff", "%c3%bc", "x;"}
	values := []string{"", "a", "ab", "é", "a/b", "a&b", "%41", "a=b", "?", "😀"}
	var s string
	if rng.IntN(3) > 0 {
		vars := map[string]string{}
		for _, n := range tp.Variables() {
			if rng.IntN(4) > 0 {
				vars[n] = values[rng.IntN(len(values))]
			}
		}
		s, _ = tp.Expand(vars)
	}
	for k := rng.IntN(3); k > 0; k-- {
		i := 0
		if len(s) > 0 {
			i = rng.IntN(len(s) + 1)
		}
		if rng.IntN(2) == 0 || len(s) == 0 {
			s = s[:i] + alphabet[rng.IntN(len(alphabet))] + s[i:]
		} else if i < len(s) {
			s = s[:i] + s[i+1:]
		}
	}
	return s
}

// TestMatchAgainstOracle compares Match with the exhaustive oracle on
// random small templates and URIs.
func TestMatchAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(6570, 1))
	iterations := 30000
	if testing.Short() {
		iterations = 3000
	}
	matched := 0
	for it := 0; it < iterations; it++ {
		tmpl := randomTemplate(rng)
		tp, err := Parse(tmpl)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tmpl, err)
		}
		uri := randomURI(rng, tp)
		o := oracle{units: tp.units, uri: uri, memo: map[[2]int]bool{}}
		want := o.match(0, 0)
		vals, got := tp.Match(uri)
		if got != want {
			t.Fatalf("template %q, URI %q: Match = %v (%q), oracle = %v", tmpl, uri, got, vals, want)
		}
		if !got {
			continue
		}
		matched++
		out, err := tp.Expand(vals)
		if err != nil {
			t.Fatalf("template %q, URI %q: Expand(%q): %v", tmpl, uri, vals, err)
		}
		if _, ok := tp.Match(out); !ok {
			t.Fatalf("template %q, URI %q: Match gave %q, whose expansion %q does not match", tmpl, uri, vals, out)
		}
	}
	t.Logf("%d of %d matched", matched, iterations)
	if matched < iterations/10 {
		t.Fatalf("only %d of %d random cases matched; generator too weak", matched, iterations)
	}
}
