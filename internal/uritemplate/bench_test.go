package uritemplate

import (
	"strings"
	"testing"
)

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("db://{schema}/{table}{?limit,offset}"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExpand(b *testing.B) {
	tp, err := Parse("db://{schema}/{table}{?limit,offset}")
	if err != nil {
		b.Fatal(err)
	}
	vars := map[string]string{"schema": "public", "table": "users list", "limit": "10"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tp.Expand(vars); err != nil {
			b.Fatal(err)
		}
	}
}

func benchMatch(b *testing.B, tmpl, uri string, want bool) {
	tp, err := Parse(tmpl)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(uri)))
	for b.Loop() {
		if _, ok := tp.Match(uri); ok != want {
			b.Fatalf("Match = %v", ok)
		}
	}
}

func BenchmarkMatchSimple(b *testing.B) {
	benchMatch(b, "test://template/{id}/data", "test://template/12345/data", true)
}

func BenchmarkMatchMiss(b *testing.B) {
	benchMatch(b, "test://template/{id}/data", "test://other/12345/data", false)
}

func BenchmarkMatchPath(b *testing.B) {
	benchMatch(b, "file:///{+path}", "file:///home/user/projects/weft/internal/uritemplate/match.go", true)
}

func BenchmarkMatchQuery(b *testing.B) {
	benchMatch(b, "db://{schema}/{table}{?limit,offset,order}", "db://public/users?order=name%20asc&limit=10&offset=20", true)
}

func BenchmarkMatchAdversarial(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 32; i++ {
		sb.WriteString("{v" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "}")
	}
	sb.WriteString("!")
	benchMatch(b, sb.String(), strings.Repeat("a", 10000), false)
}
