package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/weftmcp/weft/bench/servers"
)

// summary is the median over rounds of one (implementation, concurrency).
type summary struct {
	impl             string
	conc             int
	throughput       float64
	p50, p99, cpuReq time.Duration
	ownReq           time.Duration // the gateway rows: the gateway process's own
	// medians of the cells' server-side counters (see cell)
	bytesReq, objsReq, gcPerK, sysReq float64
	gcCPUReq                          time.Duration
	rounds                            []cell
}

func (r *report) summaries(conc int) []summary {
	var out []summary
	for _, impl := range r.cfg.impls {
		s := summary{impl: impl, conc: conc}
		var tp []float64
		var p50, p99, cpu []time.Duration
		var by, ob, gc, sy []float64
		var gcc []time.Duration
		for _, c := range r.cells {
			if c.impl == impl && c.conc == conc {
				s.rounds = append(s.rounds, c)
				tp = append(tp, c.throughput)
				p50 = append(p50, c.p50)
				p99 = append(p99, c.p99)
				cpu = append(cpu, c.cpuPerReq)
				by, ob, gc, sy = append(by, c.bytesReq), append(ob, c.objsReq), append(gc, c.gcPerK), append(sy, c.sysReq)
				gcc = append(gcc, c.gcCPUReq)
			}
		}
		if len(tp) == 0 {
			continue
		}
		s.throughput, s.p50, s.p99, s.cpuReq = median(tp), median(p50), median(p99), median(cpu)
		s.bytesReq, s.objsReq, s.gcPerK, s.sysReq = median(by), median(ob), median(gc), median(sy)
		s.gcCPUReq = median(gcc)
		out = append(out, s)
	}
	return out
}

func find[T any](xs []T, pred func(T) bool) (T, bool) {
	for _, x := range xs {
		if pred(x) {
			return x, true
		}
	}
	var zero T
	return zero, false
}

func microNamed(ms []micro, name string) (micro, bool) {
	return find(ms, func(m micro) bool { return m.name == name })
}

func us(d time.Duration) string { return fmtDur(float64(d)) }

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func yes(ok bool) string {
	if ok {
		return "**yes**"
	}
	return "**no**"
}

// target is one goal of issue #7 and whether this run met it.
type target struct {
	goal, measured string
	met            bool
}

func (r *report) targets() []target {
	var ts []target
	base := r.cfg.impls[0]
	for _, c := range r.cfg.conc {
		ss := r.summaries(c)
		w, ok := find(ss, func(s summary) bool { return s.impl == base })
		if !ok {
			continue
		}
		if c >= 16 {
			for _, want := range []struct {
				impl string
				min  float64
			}{{"gosdk", 4}, {"mcpgo", 2.5}, {"bare", 0.85}} {
				if p, ok := find(ss, func(s summary) bool { return s.impl == want.impl }); ok {
					goal := fmt.Sprintf("throughput at %d clients ≥ %.1f× %s", c, want.min, servers.Names[want.impl])
					if want.impl == "bare" {
						goal = fmt.Sprintf("throughput at %d clients ≥ 0.85× the %s ceiling", c, servers.Names[want.impl])
					}
					ts = append(ts, target{goal, fmt.Sprintf("%s (%.0f vs %.0f req/s)", ratio(w.throughput, p.throughput), w.throughput, p.throughput),
						w.throughput/p.throughput >= want.min})
				}
			}
		}
		for _, peer := range []string{"gosdk", "mcpgo"} {
			if p, ok := find(ss, func(s summary) bool { return s.impl == peer }); ok {
				ts = append(ts, target{fmt.Sprintf("p99 at %d client%s below %s", c, plural(c), servers.Names[peer]),
					fmt.Sprintf("%s vs %s", us(w.p99), us(p.p99)), w.p99 < p.p99})
			}
		}
		if b, ok := find(ss, func(s summary) bool { return s.impl == "bare" }); ok && (c == 16 || c == 64) {
			ts = append(ts, target{fmt.Sprintf("p99 at %d clients within 1.2× the %s ceiling's", c, servers.Names["bare"]),
				fmt.Sprintf("%s (%s vs %s)", ratio(float64(w.p99), float64(b.p99)), us(w.p99), us(b.p99)), float64(w.p99) <= 1.2*float64(b.p99)})
		}
	}
	if w, ok := microNamed(r.server, base); ok {
		if g, ok := microNamed(r.server, "gosdk"); ok {
			ts = append(ts, target{"allocations per tools/call ≤ ½ of go-sdk's",
				fmt.Sprintf("%d vs %d (%s)", w.allocs, g.allocs, ratio(float64(w.allocs), float64(g.allocs))), 2*w.allocs <= g.allocs})
		}
	}
	if p, ok := microNamed(r.mrtr, "plain call"); ok {
		if rt, ok := microNamed(r.mrtr, "retry: open + verify + complete"); ok {
			pr := pairedRatio(rt, p)
			ts = append(ts, target{"multi-round retry < 1.3× a plain call, framework only (CPU per call in memory, retry on the instance that sealed the state, median of per-round ratios)",
				fmt.Sprintf("%.2f× (%s vs %s)", pr, fmtDur(rt.cpu), fmtDur(p.cpu)), pr < 1.3})
		}
	}
	for _, c := range mrtrLoopbackConc {
		if pl, rt, q, ok := r.mrtrHTTPSummary(c); ok {
			ts = append(ts, target{fmt.Sprintf("multi-round retry < 1.3× a plain call over loopback at %d client%s (server CPU per call, median of per-round ratios)", c, plural(c)),
				fmt.Sprintf("%.2f× (%s vs %s)", q, us(rt), us(pl)), q < 1.3})
		}
	}
	for _, l := range r.listen {
		ts = append(ts, target{fmt.Sprintf("≤ 16 KB per idle listen stream at %d streams (server process alone: live heap + goroutine stacks)", l.streams),
			fmt.Sprintf("%.1f KB (%.1f + %.1f)", l.memPerStream()/1000, l.heapPerStream/1000, l.stackPerStream/1000), l.memPerStream() <= 16000})
		ts = append(ts, target{fmt.Sprintf("one list_changed fanned out to %d streams in < 100 ms", l.streams),
			fmtDur(float64(l.fanout)), l.fanout < 100*time.Millisecond})
	}
	if so, ok := microNamed(r.seal, "seal+open 1 KiB"); ok {
		ts = append(ts, target{"seal + open of 1 KiB state < 10 µs (CPU; wall in the sealing table)", fmtDur(so.cpu), so.cpu < 10e3})
	}
	ts = append(ts, r.fairnessTargets()...)
	return append(ts, r.taskTargets()...)
}

// taskTargets are issue #18's goals for tasks on PostgreSQL: throughput and
// the comparison with River at each worker count measured, latency at light
// load.
func (r *report) taskTargets() []target {
	var ts []target
	weftPG := func(t taskRow) bool { return t.system == "Weft" && t.store == pgStoreName && t.note == "" }
	for _, h := range r.tasks {
		if !weftPG(h) || h.load != "heavy" {
			continue
		}
		ts = append(ts, target{fmt.Sprintf("PostgreSQL tasks ≥ 2,000/s at heavy load (%d clients, %d workers)", h.clients, h.workers),
			fmt.Sprintf("%.0f tasks/s", h.rate), h.rate >= 2000})
		var best taskRow
		for _, t := range r.tasks {
			if t.system == "River" && t.load == "heavy" && t.workers == h.workers && t.note == "" && t.rate > best.rate {
				best = t
			}
		}
		if best.rate > 0 {
			ts = append(ts, target{fmt.Sprintf("PostgreSQL task throughput at heavy load ≥ River's (%d workers each, River's better configuration, same database)", h.workers),
				fmt.Sprintf("%s (%.0f vs %.0f tasks/s, %s)", ratio(h.rate, best.rate), h.rate, best.rate, best.store), h.rate >= best.rate})
		}
	}
	if l, ok := find(r.tasks, func(t taskRow) bool { return weftPG(t) && t.load == "light" }); ok {
		ts = append(ts, target{"PostgreSQL task p50 create→complete < 20 ms at light load (1 client, one task at a time)",
			fmt.Sprintf("%s (p99 %s)", us(l.p50), us(l.p99)), l.p50 < 20*time.Millisecond})
	}
	return ts
}

func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m := r.machine
	p("# Benchmarks\n\n")
	p("Generated by `make bench` on %s in %s. Do not edit by hand: the next run rewrites this file.\n\n",
		r.start.UTC().Format("2006-01-02 15:04 MST"), r.elapsed.Round(time.Second))

	p("## Machine\n\n| | |\n|---|---|\n")
	p("| CPU | %s, %d logical CPUs (`nproc`) |\n", m.cpuModel, m.nproc)
	p("| memory | %s |\n| OS | %s |\n| Go | %s |\n", m.memory, m.kernel, m.goVersion)
	p("| load average (1, 5, 15 min) | %s at the start, %s at the end |\n\n", m.loadStart, m.loadEnd)
	p("Client and servers share the same %d CPUs, so absolute numbers are pessimistic; the ratios come from one run in which "+
		"the implementations were measured in alternation under the same conditions. The load average shows how busy the machine was "+
		"with other work during the run.\n\n", m.nproc)

	p("## Versions and configuration\n\n| implementation | version | served as |\n|---|---|---|\n")
	p("| Weft | %s | `weft.NewServer` defaults, typed `weft.AddTool`, `Server.ServeHTTP` |\n", r.versions["weft"])
	p("| go-sdk | `github.com/modelcontextprotocol/go-sdk` %s | `mcp.NewStreamableHTTPHandler` with `Stateless: true, JSONResponse: true`, typed `mcp.AddTool` |\n",
		r.versions["github.com/modelcontextprotocol/go-sdk"])
	p("| mcp-go | `github.com/mark3labs/mcp-go` %s | `server.NewStreamableHTTPServer` with `WithStateLess(true)` (its 2026-07-28 path is chosen per request from `_meta` and `MCP-Protocol-Version`), `mcp.NewStructuredToolHandler`; input-schema validation off, its default |\n",
		r.versions["github.com/mark3labs/mcp-go"])
	p("| bare net/http | %s | `encoding/json` decodes the envelope and arguments and encodes the same result: the ceiling |\n\n", m.goVersion)
	p("Every server is the same binary (`bench/cmd/benchserver -impl …`) behind `weft.NewHTTPServer`'s `http.Server` settings, " +
		"and serves the same tool `echo` with arguments `{text string, count int}`, answering `structuredContent` plus a text block " +
		"holding its JSON. Each answer is checked in full before measuring, and every measured answer must be HTTP 200 with `structuredContent`. " +
		"The request is what a 2026-07-28 client sends: headers `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, and `_meta` with " +
		"`protocolVersion`, `clientCapabilities` and `clientInfo`.\n\n")

	tags := ""
	if openPG != nil {
		tags = "-tags pgstore "
	}
	p("## Command\n\nThis file came from:\n\n```sh\ncd bench && go run -mod=mod %s./cmd/benchload %s\n```\n\n", tags, strings.Join(r.args, " "))
	p("`make bench` (from the repository root) runs `cd bench && go run -mod=mod -tags pgstore ./cmd/benchload -rounds 3 -out ../docs/benchmarks.md` " +
		"(`-tags pgstore` only when `task/pgstore` exists); " +
		"`go run ./cmd/benchload -h` lists the knobs; `-only fairness,tasks-fair -out ../docs/benchmarks.md` (any parts `-skip` names) runs those parts only " +
		"and merges their sections and targets into this file, each merged section saying when and how it was measured. The PostgreSQL row needs that tag and a reachable `$WEFT_TEST_POSTGRES` " +
		"(default `postgres://root@127.0.0.1:5432/test?sslmode=disable`; `make postgres` starts one); it is skipped with a note otherwise.\n\n")
	p("Loopback cells: %d measured requests after %d warm-up requests, per implementation, concurrency and round; %d rounds; "+
		"implementations alternate within each round (the starting one rotates), and the tables give the median of the rounds. "+
		"Each server is its own process; its CPU time (user + system, `/proc/<pid>/stat`) around the measured requests, divided by their number, "+
		"is \"server CPU/req\". In-memory rows use `testing.Benchmark` (%s per run, %d alternated runs, median); "+
		"their CPU/op is this process's user + system CPU time (all threads, garbage collection included) per operation, "+
		"which a busy shared machine disturbs less than wall time, and their ratios use it. "+
		"The multi-round rows use %s runs and %d rounds.\n\n",
		r.cfg.n, r.cfg.warm, r.cfg.rounds, r.cfg.benchtime, r.cfg.rounds, mrtrBenchtime, mrtrRoundsPer*r.cfg.rounds)

	if ts := r.targets(); len(ts) > 0 {
		p("## Targets (issue #7)\n\n| target | measured | met |\n|---|---|---|\n")
		for _, t := range ts {
			p("| %s | %s | %s |\n", t.goal, t.measured, yes(t.met))
		}
		p("\n")
	}

	if len(r.cells) > 0 {
		base := r.cfg.impls[0]
		p("## tools/call over loopback\n\n")
		p("\"Weft ÷ this\" columns: Weft's throughput divided by this row's (higher is better for Weft), and Weft's p99 and CPU per request divided by this row's (lower is better for Weft).\n\n")
		for _, c := range r.cfg.conc {
			ss := r.summaries(c)
			w, _ := find(ss, func(s summary) bool { return s.impl == base })
			p("### %d concurrent client%s\n\n", c, plural(c))
			p("| server | req/s | p50 | p99 | server CPU/req | Weft ÷ this: req/s | p99 | CPU/req |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
			for _, s := range ss {
				p("| %s | %.0f | %s | %s | %s | %s | %s | %s |\n", servers.Names[s.impl], s.throughput, us(s.p50), us(s.p99), us(s.cpuReq),
					ratio(w.throughput, s.throughput), ratio(float64(w.p99), float64(s.p99)), ratio(float64(w.cpuReq), float64(s.cpuReq)))
			}
			p("\n")
		}
		p("### Where the server's time goes over loopback\n\n")
		p("Counted inside each server process over the measured requests of each cell (medians over rounds): heap bytes and objects allocated per request, GC cycles per 1,000 requests and the GC's CPU per request (garbage collector and scavenger, the runtime's own estimate in runtime/metrics; included in the server CPU above), and read plus write system calls per request (`syscr` + `syscw` of /proc/<pid>/io). The whole request is counted: net/http's own work too.\n\n")
		p("| server | clients | B/req | allocs/req | GC cycles / 1k req | GC CPU/req | read+write syscalls/req |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range r.cfg.conc {
			for _, s := range r.summaries(c) {
				p("| %s | %d | %.0f | %.1f | %.2f | %s | %.2f |\n", servers.Names[s.impl], c, s.bytesReq, s.objsReq, s.gcPerK, us(s.gcCPUReq), s.sysReq)
			}
		}
		p("\n")
	}

	if len(r.server) > 0 {
		p("## Server-only cost of one tools/call (in memory)\n\n")
		p("`handler.ServeHTTP` into an `httptest.ResponseRecorder`, as in go-peers.md §7. The first row is the harness alone (it reads the body and writes a fixed reply); it is included in every other row.\n\n")
		w, _ := microNamed(r.server, r.cfg.impls[0])
		p("| handler | CPU/op | wall/op | B/op | allocs/op | Weft ÷ this: CPU | B | allocs |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, m := range r.server {
			if m.name == "harness" {
				p("| harness only | %s | %s | %d | %d | | | |\n", fmtDur(m.cpu), fmtDur(m.ns), m.bytes, m.allocs)
				continue
			}
			p("| %s | %s | %s | %d | %d | %s | %s | %s |\n", servers.Names[m.name], fmtDur(m.cpu), fmtDur(m.ns), m.bytes, m.allocs,
				ratio(w.cpu, m.cpu), ratio(float64(w.bytes), float64(m.bytes)), ratio(float64(w.allocs), float64(m.allocs)))
		}
		p("\n")
	}

	if len(r.ablation) > 0 {
		p("## Where Weft's time goes (ablations, in memory)\n\n")
		p("The same echo tool on Weft with one piece of per-call work removed at a time, through the public API only; the differences bound what a hot-path change to that piece can save. Allocation counts are exact; CPU differences are within this machine's noise when small.\n\n")
		full, _ := microNamed(r.ablation, "full")
		p("| variant | CPU/op | B/op | allocs/op | allocs saved | what is removed |\n|---|---:|---:|---:|---:|---|\n")
		for _, m := range r.ablation {
			p("| %s | %s | %d | %d | %d | %s |\n", m.name, fmtDur(m.cpu), m.bytes, m.allocs, full.allocs-m.allocs, servers.VariantNotes[m.name])
		}
		p("\n")
	}

	if len(r.mrtr) > 0 {
		p("## Multi-round call (Weft, in memory)\n\n")
		p("`echo_confirm` declares a CONDITIONAL form elicitation and `StateFramework`: round 1 answers `input_required` with sealed state; " +
			"the retry carries `inputResponses` and the `requestState`, which is opened, bound to endpoint, version, method and params, checked, " +
			"and the handler completes with the same result as `echo`. The plain call is `echo` with the same `_meta`. " +
			"The instance that sealed the state remembers the digest of the params it bound (a bounded cache keyed by their exact encoding), " +
			"so a retry reaching it, as every retry does on a single instance, skips canonicalizing and hashing them; " +
			"the last row is the same retry answered by a second instance holding the same key, which computes the digest, as another instance of a fleet would. " +
			"They run in rotating order each round; \"CPU ÷ plain call\" is the median over rounds of the ratio within a round " +
			"(runs close in time share the machine's state), so it can differ a little from the ratio of the median columns.\n\n")
		pl, _ := microNamed(r.mrtr, "plain call")
		p("| request | CPU/op | wall/op | B/op | allocs/op | CPU ÷ plain call |\n|---|---:|---:|---:|---:|---:|\n")
		for _, m := range r.mrtr {
			p("| %s | %s | %s | %d | %d | %.2f× |\n", m.name, fmtDur(m.cpu), fmtDur(m.ns), m.bytes, m.allocs, pairedRatio(m, pl))
		}
		r1, ok1 := microNamed(r.mrtr, "round 1: input_required + seal")
		rt, ok2 := microNamed(r.mrtr, "retry: open + verify + complete")
		if ok1 && ok2 {
			p("| both rounds together | %s | %s | %d | %d | %s |\n", fmtDur(r1.cpu+rt.cpu), fmtDur(r1.ns+rt.ns), r1.bytes+rt.bytes, r1.allocs+rt.allocs, ratio(r1.cpu+rt.cpu, pl.cpu))
		}
		p("\n")
	}

	if len(r.mrtrHTTP) > 0 {
		p("## Multi-round call (Weft, over loopback)\n\n")
		p("The plain call and the retry of the table above, against one Weft server process (`benchserver -impl weft-mrtr`) as in the main table: keep-alive clients, "+
			"server CPU (user + system) per call. Round 1 is answered once; every retry sends its `inputResponses` and that `requestState` "+
			"(a token may be retried until it expires) with a fresh request id, so each one is opened, bound and checked in full. "+
			"The plain call and the retry alternate (the first rotates), %d rounds of %d calls per concurrency; the ratio is the median of the per-round ratios. "+
			"Unlike the in-memory table, this includes what every call costs a deployed server: HTTP, the connection and the scheduler.\n\n",
			mrtrRoundsPer, r.cfg.n/2)
		p("| clients | plain call CPU/req | retry CPU/req | retry ÷ plain | plain p50 | retry p50 |\n|---:|---:|---:|---:|---:|---:|\n")
		for _, c := range mrtrLoopbackConc {
			pl, rt, q, ok := r.mrtrHTTPSummary(c)
			if !ok {
				continue
			}
			var p50p, p50r []time.Duration
			for _, x := range r.mrtrHTTP {
				if x.conc == c {
					p50p, p50r = append(p50p, x.plain.p50), append(p50r, x.retry.p50)
				}
			}
			p("| %d | %s | %s | %.2f× | %s | %s |\n", c, us(pl), us(rt), q, us(median(p50p)), us(median(p50r)))
		}
		p("\n")
	}

	if len(r.seal) > 0 {
		p("## Sealing request state (`seal.Manager`, AES-256-GCM)\n\n| operation | CPU/op | wall/op | MB/s (CPU) | B/op | allocs/op |\n|---|---:|---:|---:|---:|---:|\n")
		for _, m := range r.seal {
			p("| %s | %s | %s | %.0f | %d | %d |\n", m.name, fmtDur(m.cpu), fmtDur(m.ns), m.mbps(), m.bytes, m.allocs)
		}
		p("\n")
	}

	if len(r.json) > 0 {
		p("## JSON: exactjson against encoding/json\n\n")
		p("Parse: `exactjson.Parse` (strict: duplicate keys, UTF-8 and limits checked; numbers kept exact) against `json.Unmarshal` into `any`. " +
			"Encode: `exactjson.Canonical` (sorted keys, canonical numbers and strings) against `json.Marshal` of that `any` (maps sort their keys). " +
			"MB/s is input bytes per second.\n\n")
		p("| operation | CPU/op | wall/op | MB/s (CPU) | B/op | allocs/op | exactjson ÷ encoding/json (MB/s) |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for i, m := range r.json {
			rel := ""
			if i%2 == 0 && i+1 < len(r.json) {
				rel = ratio(m.mbps(), r.json[i+1].mbps())
			}
			p("| %s | %s | %s | %.0f | %d | %d | %s |\n", m.name, fmtDur(m.cpu), fmtDur(m.ns), m.mbps(), m.bytes, m.allocs, rel)
		}
		p("\n")
	}

	if len(r.listen) > 0 {
		p("## subscriptions/listen at scale\n\n")
		p("Load average (1, 5, 15 min) when this and the next two tables started: %s.\n\n", r.scaleLoad)
		p("Idle `subscriptions/listen` streams (tools list_changed) over loopback to a Weft server process of its own (`benchserver -impl weft-listen`, " +
			"`weft.NewServer` defaults behind `weft.NewHTTPServer`), one TCP connection and one authorization partition each, opened by benchload, " +
			"which holds the client ends in its own process. The server's memory is read from the server process before the first stream and after " +
			"the last one is acknowledged, each time after two garbage collections: live heap (`HeapInuse`), goroutine stacks (`StackInuse`), " +
			"goroutines and resident set (`VmRSS`, after returning free memory to the OS); the columns are the differences divided by the streams. " +
			"The target is judged on heap + stacks (socket buffers are the kernel's and counted nowhere here). " +
			"Each round (after a 200 ms pause, outside the clock, for what the previous round left to the kernel) adds or removes a tool through a " +
			"control endpoint of the server and waits until every stream has read its `notifications/tools/list_changed`; the fan-out is the median " +
			"round, from the control request to the last stream's read (client and server share the machine's CPUs). benchload reads all the " +
			"streams with one epoll loop (`fanread.go`): one read system call per ready stream, each stream's bytes searched for the notification " +
			"across reads, and a 200 µs nap when fewer than 64 streams are ready, rather than a goroutine per stream woken for each, which cost " +
			"the shared CPUs over twice as much client time (about 85 ms against 35 ms per round at 10,000 streams); its server CPU the median of the server process's user + system CPU time " +
			"(`/proc/<pid>/stat`, 10 ms ticks) over the same rounds, which other load on the machine disturbs less. The peers have no `subscriptions/listen` (a 2026-07-28 method).\n\n" +
			"Over HTTP/1.1 a listen stream is detached from net/http once acknowledged (docs/architecture.md, \"Detached listen streams\"): " +
			"the request completes (middleware, the Observer and the request log see it then), the connection is hijacked, and the stream is " +
			"a small struct registered with the event bus — its connection, filter, encoded tail, subscription, partition slot and keep-alive timer — " +
			"plus one reader goroutine (a 64-byte buffer, a 2 KiB stack) that notices the client leaving. net/http's per-connection read and write " +
			"buffers, the response's chunking buffer, the request and its two goroutines (the handler's 16 KiB stack under the dispatch chain, " +
			"the background reader) are gone with it; that was about 36 KB per stream on the request goroutine, which HTTP/2, TLS, stdio and wrapped " +
			"ResponseWriters still use. The fan-out encodes each event once; the bus applies each stream's filter as it delivers and queues the " +
			"stream for at most GOMAXPROCS writer goroutines, which write a stream's pending events as HTTP/1.1 chunks in one non-blocking write " +
			"(a socket that cannot take it is finished by a goroutine of its own, so a stalled client holds no writer). " +
			"On Linux that write is a raw system call (it cannot block, so the writer keeps its P and skips the scheduler's system-call hand-off, " +
			"which was about a fifth of the fan-out's server CPU on this VM). Per `perf` profiles of benchserver, the write system call is now about " +
			"three quarters of the fan-out's server CPU, about 7 µs per stream on loopback, where the kernel also delivers the bytes to the reading " +
			"client's socket; the fan-out's time is that CPU shared with the client reading all the streams on the same machine: \"its client CPU\" " +
			"is benchload's own CPU time (`getrusage`) over the same rounds, the reader's share of the two CPUs while the clock runs.\n\n")
		p("| streams | heap per stream | stacks per stream | heap + stacks | goroutines per stream | RSS per stream | fan-out of one list_changed | its server CPU | its client CPU | rounds |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, l := range r.listen {
			p("| %d | %.1f KB | %.1f KB | %.1f KB | %.2f | %.1f KB | %s | %s | %s | %d |\n", l.streams, l.heapPerStream/1000, l.stackPerStream/1000,
				l.memPerStream()/1000, l.goroutinesPerStream, l.rssPerStream/1000, fmtDur(float64(l.fanout)), fmtDur(float64(l.fanoutCPU)),
				fmtDur(float64(l.fanoutClientCPU)), l.rounds)
		}
		p("\n")
	}
	if len(r.getStrm) > 0 {
		p("## 2025-11-25 GET streams at scale\n\n")
		p("The 2025-11-25 way to hear list_changed, which every implementation has: %d sessions opened as in the session table below, then "+
			"one standalone SSE stream (GET with `Mcp-Session-Id`) per session, each on its own TCP connection from benchload, against a server "+
			"process per implementation (`weft-sessions`, `gosdk-sessions`, `mcpgo-sessions`; mcp-go with `WithToolCapabilities(true)`, so that it "+
			"sends tools list_changed). The memory columns are the server's before the first GET and after the last stream has received a first, "+
			"unmeasured list_changed (which proves every stream registered), divided by the streams: the GET stream's own cost, its session excluded. "+
			"Fan-out and its server CPU are measured as in the listen table (go-sdk delays each list_changed by its fixed 10 ms debounce).\n\n", getStreamCount)
		p("| server | heap per stream | stacks per stream | heap + stacks | goroutines per stream | fan-out of one list_changed | its server CPU | rounds |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, g := range r.getStrm {
			name := "Weft"
			if g.impl != "weft" {
				name = servers.Names[g.impl]
			}
			p("| %s | %.1f KB | %.1f KB | %.1f KB | %.2f | %s | %s | %d |\n", name, g.heapPerStream/1000, g.stackPerStream/1000, g.memPerStream()/1000,
				g.goroutinesPerStream, fmtDur(float64(g.fanout)), fmtDur(float64(g.fanoutCPU)), g.rounds)
		}
		p("\n")
	}
	r.gatewayMarkdown(p)
	r.catalogMarkdown(p)
	r.firstRunMarkdown(p)
	if len(r.sessions) > 0 {
		p("## 2025-11-25 sessions at scale\n\n")
		p("%d sessions opened one after the other (initialize, then notifications/initialized, over one keep-alive loopback connection) and kept open, "+
			"against a server process per implementation and store (`benchserver -impl weft-sessions`, `gosdk-sessions`, `mcpgo-sessions`, "+
			"`weft-sessions-pg`); one session is opened first, outside the measurement. The memory columns are read from the server process as in "+
			"the listen table (after two garbage collections, differences divided by the sessions). Initialize is the time of the two requests "+
			"together. Weft: `LegacyOptions` with the in-memory store or `sessionstore/pgstore` (whose sessions live in the database). "+
			"go-sdk: `mcp.NewStreamableHTTPHandler` stateful (its default; no idle timeout). mcp-go: `server.NewStreamableHTTPServer` with "+
			"`WithStateful(true)` (its default issues session ids it does not keep).\n\n", sessionCount)
		p("| server | store | heap per open session | stacks per session | goroutines per session | RSS per session | initialize p50 | initialize p99 | server CPU per initialize |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range r.sessions {
			name := "Weft"
			if s.impl != "weft" {
				name = servers.Names[s.impl]
			}
			p("| %s | %s | %.1f KB | %.1f KB | %.2f | %.1f KB | %s | %s | %s |\n", name, s.store, s.heapPerSess/1000, s.stackPerSess/1000,
				s.goroutinesPerSess, s.rssPerSess/1000, fmtDur(float64(s.initialize)), fmtDur(float64(s.initializeP99)), fmtDur(float64(s.cpuPerSess)))
		}
		p("\n")
	}
	if len(r.tasks) > 0 {
		r.tasksSection(p)
	}
	if len(r.taskFair) > 0 {
		r.taskFairSection(p) // tasks_fair.go
	}
	if len(r.fairness) > 0 {
		r.fairnessSection(p)
	}

	p("## Findings\n\n")
	for _, f := range r.findings() {
		p("- %s\n", f)
	}
	p("\n")

	if len(r.cells) > 0 {
		p("## Every round\n\nreq/s and p99 of each loopback cell, in the order measured within its concurrency.\n\n")
		p("| clients | server | rounds: req/s (p99) |\n|---:|---|---|\n")
		for _, c := range r.cfg.conc {
			for _, s := range r.summaries(c) {
				var parts []string
				for _, cl := range s.rounds {
					parts = append(parts, fmt.Sprintf("%.0f (%s)", cl.throughput, us(cl.p99)))
				}
				p("| %d | %s | %s |\n", c, servers.Names[s.impl], strings.Join(parts, ", "))
			}
		}
		p("\n")
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// findings are generated from the numbers of this run.
func (r *report) findings() []string {
	var fs []string
	ts := r.targets()
	met := 0
	var missed []string
	for _, t := range ts {
		if t.met {
			met++
		} else {
			missed = append(missed, t.goal+" ("+t.measured+")")
		}
	}
	if len(ts) > 0 {
		fs = append(fs, fmt.Sprintf("%d of %d targets met in this run.", met, len(ts)))
	}
	if len(missed) > 0 {
		fs = append(fs, "Missed: "+strings.Join(missed, "; ")+".")
	}
	if len(r.server) > 0 {
		w, ok1 := microNamed(r.server, "weft")
		bare, ok2 := microNamed(r.server, "bare")
		h, ok3 := microNamed(r.server, "harness")
		if ok1 && ok2 && ok3 {
			fs = append(fs, fmt.Sprintf("In memory, Weft's own CPU per tools/call (minus the harness) is %s against %s for the bare encoding/json handler (%s), "+
				"and %d allocations against %d: the price of one strict exact parse, input and output schema validation, header and `_meta` checks, the typed bind and the typed output.",
				fmtDur(w.cpu-h.cpu), fmtDur(bare.cpu-h.cpu), ratio(w.cpu-h.cpu, bare.cpu-h.cpu), w.allocs-h.allocs, bare.allocs-h.allocs))
		}
		if g, ok := microNamed(r.server, "gosdk"); ok && ok1 {
			fs = append(fs, fmt.Sprintf("go-sdk allocates %d bytes per call (Weft %d): its internal JSON decoder allocates a large buffer per Unmarshal and a request is decoded many times (go-peers.md §4.2).",
				g.bytes, w.bytes))
		}
	}
	if full, ok := microNamed(r.ablation, "full"); ok {
		if nv, ok := microNamed(r.ablation, "no-validation-no-typed-output"); ok {
			fs = append(fs, fmt.Sprintf("Schema validation of arguments and output plus the typed-output conversion cost %d of Weft's %d allocations per call "+
				"and %s of its %s CPU (ablations): the largest single item in Weft's own path.", full.allocs-nv.allocs, full.allocs, fmtDur(full.cpu-nv.cpu), fmtDur(full.cpu)))
		}
	}
	if len(r.cells) > 0 {
		for _, c := range r.cfg.conc {
			ss := r.summaries(c)
			w, ok := find(ss, func(s summary) bool { return s.impl == "weft" })
			b, ok2 := find(ss, func(s summary) bool { return s.impl == "bare" })
			if ok && ok2 && c == r.cfg.conc[len(r.cfg.conc)-1] {
				fs = append(fs, fmt.Sprintf("At %d clients the server CPU per request is %s for Weft and %s for the bare handler; with client and server on the same 2 CPUs, throughput follows the sum of client and server CPU, which is why the ceiling ratio is higher over loopback than in memory.",
					c, us(w.cpuReq), us(b.cpuReq)))
			}
			if ok && ok2 && w.sysReq > 0 {
				fs = append(fs, fmt.Sprintf("Over loopback at %d clients both servers make the same system calls per request (%.2f vs %.2f reads and writes): the cost Weft adds there is CPU, not I/O. "+
					"Its GC takes %s per request against %s (%.0f vs %.0f bytes allocated per request, %.2f vs %.2f cycles per 1,000 requests); "+
					"the rest, per CPU profiles of benchserver (`WEFT_BENCHSERVER_CPUPROFILE`), is the request deadline (a context deadline and an early-reply timer registered per call, and the connection's body read and write deadlines: timer updates an in-memory recorder never pays), the exact parse and the checks of the in-memory rows.",
					c, w.sysReq, b.sysReq, us(w.gcCPUReq), us(b.gcCPUReq), w.bytesReq, b.bytesReq, w.gcPerK, b.gcPerK))
			}
		}
	}
	fs = append(fs, r.taskFindings()...)
	fs = append(fs, r.taskFairFindings()...)
	fs = append(fs, "Profiles of the in-memory tools/call: `cd bench && go test -run '^$' -bench 'ServeHTTP/weft' -cpuprofile cpu.prof -memprofile mem.prof ./servers && go tool pprof -top servers.test cpu.prof`.")
	return fs
}
