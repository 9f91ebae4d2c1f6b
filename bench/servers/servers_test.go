package servers

import (
	"net/http"
	"syscall"
	"testing"
	"time"
)

// cpuNow returns this process's CPU time (all threads, GC included).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs op in b.Loop and reports the process CPU time per op as
// cpu-ns/op, which a busy shared machine disturbs less than wall time.
func loop(b *testing.B, op func()) {
	b.ReportAllocs()
	n := 0
	c0 := cpuNow()
	for b.Loop() {
		op()
		n++
	}
	b.ReportMetric(float64(cpuNow()-c0)/float64(n), "cpu-ns/op")
}

// TestEcho checks that every implementation answers the measured request
// correctly (no timing is asserted anywhere in this module).
func TestEcho(t *testing.T) {
	for _, impl := range Impls {
		t.Run(impl, func(t *testing.T) {
			h, err := New(impl)
			if err != nil {
				t.Fatal(err)
			}
			p := NewInProc(h, EchoCall())
			for id := int64(1); id <= 3; id++ {
				w := p.Do(id)
				if err := CheckEcho(w.Code, w.Header().Get("Content-Type"), w.Body.Bytes(), id); err != nil {
					t.Fatalf("%s: %v", impl, err)
				}
			}
			t.Logf("%s: %s", impl, p.Do(7).Body.String())
		})
	}
}

// BenchmarkServeHTTP is the server-only cost of one tools/call; profile it
// with -cpuprofile/-memprofile.
func BenchmarkServeHTTP(b *testing.B) {
	for _, impl := range append([]string{"harness"}, Impls...) {
		b.Run(impl, func(b *testing.B) {
			h, err := New(impl)
			if impl == "harness" {
				h, err = Harness, nil
			}
			if err != nil {
				b.Fatal(err)
			}
			p := NewInProc(h, EchoCall())
			id := int64(0)
			loop(b, func() {
				id++
				if w := p.Do(id); w.Code != 200 {
					b.Fatal(w.Code, w.Body.String())
				}
			})
		})
	}
}

// TestConfirmRoundTrip: echo_confirm asks for input with sealed state in
// round 1, and the retry carrying it completes like echo, through the
// handler benchserver serves (-impl weft-mrtr).
func TestConfirmRoundTrip(t *testing.T) {
	h, err := New("weft-mrtr")
	if err != nil {
		t.Fatal(err)
	}
	w := NewInProc(h, FirstCall()).Do(1)
	var resp Response
	if err := DecodeResponse(w.Header().Get("Content-Type"), w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if w.Code != http.StatusOK || resp.Result == nil || resp.Result.ResultType != "input_required" || resp.Result.RequestState == "" {
		t.Fatalf("round 1: HTTP %d %s", w.Code, w.Body.Bytes())
	}
	for id := int64(2); id < 5; id++ {
		w := NewInProc(h, RetryCall(resp.Result.RequestState)).Do(id)
		if err := CheckEcho(w.Code, w.Header().Get("Content-Type"), w.Body.Bytes(), id); err != nil {
			t.Fatalf("retry %d: %v", id, err)
		}
	}
	// The emitting request's id may not retry.
	w = NewInProc(h, RetryCall(resp.Result.RequestState)).Do(1)
	if w.Code != http.StatusBadRequest {
		t.Fatalf("retry reusing the emitting id: HTTP %d %s", w.Code, w.Body.Bytes())
	}
}

// BenchmarkMultiRound is the plain call, round 1 and the retry of the
// multi-round table, for profiling (-cpuprofile/-memprofile); benchload
// measures them side by side.
func BenchmarkMultiRound(b *testing.B) {
	h, err := New("weft-mrtr")
	if err != nil {
		b.Fatal(err)
	}
	w := NewInProc(h, FirstCall()).Do(1)
	var resp Response
	if err := DecodeResponse(w.Header().Get("Content-Type"), w.Body.Bytes(), &resp); err != nil || resp.Result == nil {
		b.Fatalf("round 1: %v %s", err, w.Body.Bytes())
	}
	for _, c := range []struct {
		name string
		call *Call
	}{{"plain", PlainCall()}, {"first", FirstCall()}, {"retry", RetryCall(resp.Result.RequestState)}} {
		b.Run(c.name, func(b *testing.B) {
			p := NewInProc(h, c.call)
			id := int64(1)
			loop(b, func() {
				id++
				if w := p.Do(id); w.Code != http.StatusOK {
					b.Fatal(w.Code, w.Body.String())
				}
			})
		})
	}
}
