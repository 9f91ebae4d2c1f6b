package hdr

import (
	"strings"
	"testing"
)

func BenchmarkDecodeLiteral(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode("file:///projects/myapp/config.json"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSentinel(b *testing.B) {
	raw := Encode("Hello, 世界 — a longer mirrored value with non-ASCII text")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSentinelMax(b *testing.B) {
	raw := Encode(strings.Repeat("é", MaxDecodedValueBytes/2))
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Encode("Hello, 世界")
	}
}

func BenchmarkIsToken(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = IsToken("X-Tenant-Region_v2")
	}
}
