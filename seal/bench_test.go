package seal

import (
	"strconv"
	"testing"
)

var benchSizes = []int{1 << 10, 48 << 10}

func benchManager(b *testing.B) *Manager {
	k := mustKey(b, "2026-08", testSecret(1, 32))
	// 48 KiB of plaintext seals to about 65.6 KB, just over the default limit.
	return NewManager(mustKeyring(b, k), &ManagerOptions{MaxTokenBytes: 1 << 17})
}

func sizeName(n int) string { return strconv.Itoa(n>>10) + "KiB" }

var benchBinding = []byte("weft-binding\x00/mcp\x002026-07-28\x00tools/call\x01alice\x00" + "0123456789abcdef0123456789abcdef")

func BenchmarkSeal(b *testing.B) {
	m := benchManager(b)
	for _, n := range benchSizes {
		pt := make([]byte, n)
		b.Run(sizeName(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				if _, err := m.Seal(bg, benchBinding, pt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	m := benchManager(b)
	for _, n := range benchSizes {
		tok := mustSeal(b, m, benchBinding, make([]byte, n))
		b.Run(sizeName(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				if _, err := m.Open(bg, tok, benchBinding); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSealOpen(b *testing.B) {
	m := benchManager(b)
	for _, n := range benchSizes {
		pt := make([]byte, n)
		b.Run(sizeName(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				tok, err := m.Seal(bg, benchBinding, pt)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := m.Open(bg, tok, benchBinding); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSealParallel(b *testing.B) {
	m := benchManager(b)
	pt := make([]byte, 1<<10)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := m.Seal(bg, benchBinding, pt); err != nil {
				b.Fatal(err)
			}
		}
	})
}
