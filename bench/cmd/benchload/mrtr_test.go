package main

import (
	"net/http"
	"testing"

	"github.com/weftmcp/weft/bench/servers"
)

// BenchmarkMultiRound profiles the plain call, round 1 and the retry:
//
//	go test -run '^$' -bench MultiRound/retry -cpuprofile cpu.prof ./cmd/benchload
func BenchmarkMultiRound(b *testing.B) {
	s, err := newMRTRServer()
	if err != nil {
		b.Fatal(err)
	}
	first := servers.FirstCall()
	w := servers.NewInProc(s, first).Do(1)
	var resp servers.Response
	if err := servers.DecodeResponse(w.Header().Get("Content-Type"), w.Body.Bytes(), &resp); err != nil || resp.Result == nil {
		b.Fatal(err, w.Body.String())
	}
	calls := map[string]*servers.Call{
		"plain":  servers.PlainCall(),
		"round1": first,
		"retry":  servers.RetryCall(resp.Result.RequestState),
	}
	for _, name := range []string{"plain", "round1", "retry"} {
		b.Run(name, func(b *testing.B) {
			p := servers.NewInProc(s, calls[name])
			b.ReportAllocs()
			id := int64(1)
			for b.Loop() {
				id++
				if w := p.Do(id); w.Code != http.StatusOK {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}

func TestPairedRatio(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []float64
		want float64
	}{
		{"steady", []float64{13, 26, 39}, []float64{10, 20, 30}, 1.3},
		{"drift cancels", []float64{12, 24, 60}, []float64{10, 20, 50}, 1.2},
		{"one outlier round", []float64{12, 12, 40}, []float64{10, 10, 10}, 1.2},
		{"shorter side bounds the rounds", []float64{11, 22}, []float64{10, 20, 30}, 1.1},
		{"zero rounds skipped", []float64{11, 5}, []float64{10, 0}, 1.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pairedRatio(micro{roundsCPU: tc.a}, micro{roundsCPU: tc.b})
			if d := got - tc.want; d > 1e-9 || d < -1e-9 {
				t.Errorf("pairedRatio = %v, want %v", got, tc.want)
			}
		})
	}
}
