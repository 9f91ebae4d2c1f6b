package main

import (
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/weftmcp/weft/bench/servers"
)

// micro is one in-process benchmark result (median of rounds).
type micro struct {
	name        string
	ns          float64 // wall time per op
	cpu         float64 // process CPU time (user+system, all threads, GC included) per op, ns
	bytes       int64   // allocated per op
	allocs      int64   // allocations per op
	setBytes    int64   // bytes processed per op, for MB/s
	note        string
	roundsNs    []float64
	roundsCPU   []float64 // CPU per op of each round, in round order
	unavailable bool
}

// mbps is bytes processed per second of CPU time, in MB/s.
func (m micro) mbps() float64 {
	if m.cpu == 0 {
		return 0
	}
	return float64(m.setBytes) / m.cpu * 1e3 // bytes/ns = GB/s; *1e3 = MB/s
}

// benchErr is the error of the last failed benchmark (testing.Benchmark
// does not report it).
var benchErr error

// fail records an error and stops the benchmark.
func fail(b *testing.B, format string, args ...any) {
	benchErr = fmt.Errorf(format, args...)
	b.FailNow()
}

// bench is a named operation to benchmark; op performs one operation.
type bench struct {
	name     string
	setBytes int64
	op       func() error
}

// cpuNow returns this process's CPU time so far (all threads).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchFunc turns bn into a testing benchmark that also records the process
// CPU time per op into *cpu. With b.Loop the function runs once.
func benchFunc(bn bench, cpu *float64) func(b *testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		if bn.setBytes > 0 {
			b.SetBytes(bn.setBytes)
		}
		n := 0
		c0 := cpuNow()
		for b.Loop() {
			if err := bn.op(); err != nil {
				fail(b, "%v", err)
			}
			n++
		}
		if n > 0 {
			*cpu = float64(cpuNow()-c0) / float64(n)
		}
	}
}

// runMicro runs every benchmark rounds times, alternating and rotating the
// starting one each round (A B C, B C A, C A B, ...) so that no benchmark
// always runs first or after the same neighbour, and keeps the median time
// per op of each; allocations are the median too.
func runMicro(rounds int, benches []bench) ([]micro, error) {
	res := make([][]testing.BenchmarkResult, len(benches))
	cpus := make([][]float64, len(benches))
	for r := range rounds {
		for k := range benches {
			i := (k + r) % len(benches)
			bn := benches[i]
			var cpu float64
			runtime.GC()
			br := testing.Benchmark(benchFunc(bn, &cpu))
			if br.N == 0 {
				return nil, fmt.Errorf("benchmark %s failed: %v", bn.name, benchErr)
			}
			res[i] = append(res[i], br)
			cpus[i] = append(cpus[i], cpu)
			logf("  %-36s round %d: %9s wall %9s CPU %6d B %4d allocs", bn.name, r+1, fmtDur(nsPerOp(br)), fmtDur(cpu),
				br.AllocedBytesPerOp(), br.AllocsPerOp())
		}
	}
	out := make([]micro, len(benches))
	for i, bn := range benches {
		var ns []float64
		var by, al []int64
		for _, br := range res[i] {
			ns = append(ns, nsPerOp(br))
			by = append(by, br.AllocedBytesPerOp())
			al = append(al, br.AllocsPerOp())
		}
		out[i] = micro{name: bn.name, ns: median(ns), cpu: median(cpus[i]), bytes: median(by), allocs: median(al),
			setBytes: bn.setBytes, roundsNs: ns, roundsCPU: cpus[i]}
	}
	return out, nil
}

// pairedRatio is the median over rounds of a's CPU per op divided by b's in
// the same round: runs close in time share the machine's state (frequency,
// neighbours), so the per-round ratio is steadier than a ratio of medians.
func pairedRatio(a, b micro) float64 {
	var rs []float64
	for r := range min(len(a.roundsCPU), len(b.roundsCPU)) {
		if b.roundsCPU[r] > 0 {
			rs = append(rs, a.roundsCPU[r]/b.roundsCPU[r])
		}
	}
	return median(rs)
}

func nsPerOp(br testing.BenchmarkResult) float64 {
	if br.N == 0 {
		return 0
	}
	return float64(br.T.Nanoseconds()) / float64(br.N)
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtDur(ns float64) string {
	d := time.Duration(ns)
	switch {
	case d < 10*time.Microsecond:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	default:
		return fmt.Sprintf("%.2f s", ns/1e9)
	}
}

// serverOnly measures one tools/call through each handler in memory
// (ServeHTTP into an httptest.ResponseRecorder), plus the harness alone.
func serverOnly(rounds int) ([]micro, error) {
	var benches []bench
	for _, impl := range append([]string{"harness"}, servers.Impls...) {
		var h http.Handler = servers.Harness
		if impl != "harness" {
			var err error
			if h, err = servers.New(impl); err != nil {
				return nil, err
			}
			p := servers.NewInProc(h, servers.EchoCall())
			w := p.Do(1)
			if err := servers.CheckEcho(w.Code, w.Header().Get("Content-Type"), w.Body.Bytes(), 1); err != nil {
				return nil, fmt.Errorf("%s in memory: %w", impl, err)
			}
		}
		p := servers.NewInProc(h, servers.EchoCall())
		id := int64(1)
		benches = append(benches, bench{name: impl, op: func() error {
			id++
			if w := p.Do(id); w.Code != http.StatusOK {
				return fmt.Errorf("HTTP %d: %s", w.Code, w.Body.Bytes())
			}
			return nil
		}})
	}
	return runMicro(rounds, benches)
}

// ablations measures Weft's echo tool with one piece of per-call work
// removed at a time (servers.Variants), all through the public API.
func ablations(rounds int) ([]micro, error) {
	var benches []bench
	for _, v := range servers.Variants {
		h, err := servers.NewWeftVariant(v)
		if err != nil {
			return nil, err
		}
		p := servers.NewInProc(h, servers.EchoCall())
		if w := p.Do(1); servers.CheckEcho(w.Code, w.Header().Get("Content-Type"), w.Body.Bytes(), 1) != nil {
			return nil, fmt.Errorf("ablation %s answers wrongly: %s", v, w.Body.Bytes())
		}
		id := int64(1)
		benches = append(benches, bench{name: v, op: func() error {
			id++
			if w := p.Do(id); w.Code != http.StatusOK {
				return fmt.Errorf("HTTP %d: %s", w.Code, w.Body.Bytes())
			}
			return nil
		}})
	}
	return runMicro(rounds, benches)
}
