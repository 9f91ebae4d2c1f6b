package gateway

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateLine(t *testing.T) {
	long := strings.Repeat("a", noiseLineMax-1) + "é" + "tail" // é straddles the bound
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "hello", "hello"},
		{"at the bound", strings.Repeat("x", noiseLineMax), strings.Repeat("x", noiseLineMax)},
		{"over the bound", strings.Repeat("x", noiseLineMax+1), strings.Repeat("x", noiseLineMax) + "..."},
		{"cut at a rune boundary", long, strings.Repeat("a", noiseLineMax-1) + "..."},
		{"invalid UTF-8", "caf\xe9", "caf\uFFFD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := truncateLine([]byte(tc.in))
			if got != tc.want || !utf8.ValidString(got) {
				t.Errorf("truncateLine(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestStdoutNoiseBounded checks that the log of a chatty process grows with
// the logarithm of its lines, and what is kept for errors.
func TestStdoutNoiseBounded(t *testing.T) {
	for _, tc := range []struct {
		lines   int
		records int // log records
		last    []string
	}{
		{0, 0, nil},
		{1, 1, []string{"line 0"}},
		{noiseLogged, noiseLogged + 1, []string{"line 5", "line 6", "line 7", "line 8", "line 9"}},
		{15, noiseLogged + 1 + 1, nil},          // + the summary at the end
		{16, noiseLogged + 1 + 1 + 1, nil},      // + 16
		{1000, noiseLogged + 1 + 6 + 1, nil},    // + 16, 32, 64, 128, 256, 512
		{100000, noiseLogged + 1 + 13 + 1, nil}, // + 16 ... 65536
	} {
		t.Run(fmt.Sprint(tc.lines), func(t *testing.T) {
			var buf bytes.Buffer
			s := &stdoutNoise{name: "up", pid: 1, log: slog.New(slog.NewTextHandler(&buf, nil))}
			for i := range tc.lines {
				s.add([]byte(fmt.Sprintf("line %d", i)))
			}
			s.summary()
			if got := strings.Count(buf.String(), "\n"); got != tc.records {
				t.Errorf("%d log records, want %d:\n%s", got, tc.records, buf.String())
			}
			n, last := s.since(0)
			if n != tc.lines || len(last) != min(tc.lines, noiseKept) {
				t.Errorf("since(0) = %d, %q", n, last)
			}
			if tc.last != nil && fmt.Sprint(last) != fmt.Sprint(tc.last) {
				t.Errorf("last = %q, want %q", last, tc.last)
			}
			if d, l := s.since(n); d != 0 || len(l) != 0 {
				t.Errorf("since(%d) = %d, %q", n, d, l)
			}
		})
	}
	var nilNoise *stdoutNoise // strict framing
	if err := fmt.Errorf("x"); nilNoise.explain(err, 0) != err || nilNoise.count() != 0 {
		t.Error("a nil report changes errors")
	}
	nilNoise.summary()
}
