package servers

import (
	"net/http"
	"testing"
)

func TestWeftVariants(t *testing.T) {
	for _, v := range Variants {
		h, err := NewWeftVariant(v)
		if err != nil {
			t.Fatal(err)
		}
		p := NewInProc(h, EchoCall())
		w := p.Do(5)
		if err := CheckEcho(w.Code, w.Header().Get("Content-Type"), w.Body.Bytes(), 5); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
}

// BenchmarkWeftVariants: go test -run '^$' -bench WeftVariants -count 5 ./servers
func BenchmarkWeftVariants(b *testing.B) {
	for _, v := range Variants {
		b.Run(v, func(b *testing.B) {
			h, err := NewWeftVariant(v)
			if err != nil {
				b.Fatal(err)
			}
			p := NewInProc(h, EchoCall())
			id := int64(0)
			loop(b, func() {
				id++
				if w := p.Do(id); w.Code != http.StatusOK {
					b.Fatal(w.Code, w.Body.String())
				}
			})
		})
	}
}

// BenchmarkRequestOnly is the cost of building the in-memory request and
// recorder alone (no handler).
func BenchmarkRequestOnly(b *testing.B) {
	p := NewInProc(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), EchoCall())
	i := int64(0)
	loop(b, func() { i++; p.Do(i) })
}
