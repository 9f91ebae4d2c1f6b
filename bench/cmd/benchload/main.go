// Command benchload measures Weft against the official Go SDK, mcp-go and
// a bare net/http handler, and writes docs/benchmarks.md.
//
//	cd bench && go run -mod=mod -tags pgstore ./cmd/benchload -rounds 3 -out ../docs/benchmarks.md
//
// (or `make bench` from the repository root). -only runs some parts
// (fairness, tasks-fair, ...: the names -skip takes) and, with -out, merges
// their sections and targets into the report of a whole run, which keeps
// its other sections (merge.go):
//
//	cd bench && go run -mod=mod -tags pgstore ./cmd/benchload -rounds 3 -only fairness,tasks-fair -out ../docs/benchmarks.md
//
// It must run from the bench
// directory: it builds ./cmd/benchserver and starts one server process per
// implementation on loopback, then drives them with a keep-alive load
// generator in alternation (A B C D, A B C D, ...), so that each
// implementation sees the same machine conditions. Server CPU per request
// comes from each server process's /proc/<pid>/stat. The in-memory parts
// (allocations per call, the multi-round call, sealing, JSON, tasks) run in
// this process with testing.Benchmark, also alternated and repeated.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weftmcp/weft/bench/servers"
)

// The multi-round rows run mrtrRoundsPer times as many rounds as the
// others, each of mrtrBenchtime.
const (
	mrtrBenchtime = "300ms"
	mrtrRoundsPer = 5
)

type config struct {
	rounds      int
	n           int
	warm        int
	conc        []int
	impls       []string
	out         string
	benchtime   string
	tasks       int
	taskClients int
	taskLight   int
	taskWorkers []int
	taskSystems map[string]bool
	dsn         string
	skip        map[string]bool
	serverBin   string
}

var started = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	testing.Init()
	var cfg config
	var conc, impls, skip string
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds of alternation (A B C D per round); medians are reported")
	flag.IntVar(&cfg.n, "n", 20000, "measured requests per cell (one server, one concurrency, one round)")
	flag.IntVar(&cfg.warm, "warm", 1000, "warm-up requests before each cell")
	flag.StringVar(&conc, "conc", "1,16,64", "concurrent clients (keep-alive connections), comma-separated")
	flag.StringVar(&impls, "impls", strings.Join(servers.Impls, ","), "implementations; the first is compared with the others")
	flag.StringVar(&cfg.out, "out", "", "write the Markdown report to this file (default: stdout)")
	flag.StringVar(&cfg.benchtime, "benchtime", "1s", "time per in-memory benchmark run (testing's -benchtime)")
	flag.IntVar(&cfg.tasks, "tasks", 5000, "tasks per heavy-load task row (created by -task-clients clients as fast as they can)")
	flag.IntVar(&cfg.taskClients, "task-clients", 50, "concurrent task creators at heavy load")
	flag.IntVar(&cfg.taskLight, "task-light", 100, "tasks per light-load task row (one client, one task at a time)")
	var taskWorkers string
	flag.StringVar(&taskWorkers, "task-workers", "16,64", "task workers, the same for Weft (TaskOptions.Workers) and River (MaxWorkers): heavy rows for each, light rows with the first")
	def := os.Getenv("WEFT_TEST_POSTGRES")
	if def == "" {
		def = "postgres://root@127.0.0.1:5432/test?sslmode=disable"
	}
	var taskSystems, cpuProfile string
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.StringVar(&taskSystems, "task-systems", "sqlite,pg,river", "task rows to measure: sqlite, pg (task/pgstore), river (both configurations), river-fast (only FetchCooldown 1 ms)")
	flag.StringVar(&cfg.dsn, "pg", def, "PostgreSQL DSN for the pgstore row (default $WEFT_TEST_POSTGRES)")
	var only string
	flag.StringVar(&skip, "skip", "", "parts to skip: "+partNames())
	flag.StringVar(&only, "only", "", "run only these parts (comma-separated, as -skip names them); with -out, merge their sections into that file, "+
		"the report of a whole run, keeping its other sections (the targets of these parts are updated too)")
	flag.StringVar(&cfg.serverBin, "server-bin", "", "a prebuilt benchserver for the listen and session rows (to compare two builds of Weft); default: build ./cmd/benchserver")
	flag.Parse()
	var err error
	if cfg.conc, err = parseInts(conc); err != nil {
		fatal(err)
	}
	cfg.impls = strings.Split(impls, ",")
	for _, i := range cfg.impls {
		if !slices.Contains(servers.Impls, i) {
			fatal(fmt.Errorf("unknown implementation %q", i))
		}
	}
	if cfg.taskWorkers, err = parseInts(taskWorkers); err != nil {
		fatal(err)
	}
	cfg.taskSystems = map[string]bool{}
	for _, s := range strings.Split(taskSystems, ",") {
		cfg.taskSystems[strings.TrimSpace(s)] = true
	}
	if cfg.skip, err = parseParts("skip", skip); err != nil {
		fatal(err)
	}
	onlySet, err := parseParts("only", only)
	if err != nil {
		fatal(err)
	}
	var old []byte
	if len(onlySet) > 0 {
		if skip != "" {
			fatal(errors.New("-only and -skip exclude each other"))
		}
		cfg.skip = skipAllBut(onlySet)
		if cfg.out != "" {
			// Read first: a missing or foreign file fails before the run.
			if old, err = os.ReadFile(cfg.out); err != nil {
				fatal(fmt.Errorf("-only with -out merges into the report of a whole run: %w (drop -out to print the parts' report)", err))
			}
			if err := checkReport(string(old)); err != nil {
				fatal(fmt.Errorf("-only with -out: %s: %w", cfg.out, err))
			}
		}
	}
	if cfg.rounds < 1 || cfg.n < 100 {
		fatal(fmt.Errorf("need -rounds >= 1 and -n >= 100"))
	}
	if err := flag.Set("test.benchtime", cfg.benchtime); err != nil {
		fatal(err)
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, cfg)
	if err != nil {
		fatal(err)
	}
	md := rep.markdown()
	if cfg.out == "" {
		fmt.Print(md)
		return
	}
	if old != nil {
		note := fmt.Sprintf("Measured on %s in %s by `benchload %s` (load average %s at the start, %s at the end) "+
			"and merged into the report of the run above; the rest of the file is that run's.",
			rep.start.UTC().Format("2006-01-02 15:04 MST"), rep.elapsed.Round(time.Second), strings.Join(rep.args, " "),
			rep.machine.loadStart, rep.machine.loadEnd)
		if md, err = mergeReport(string(old), md, onlySet, note); err != nil {
			fatal(fmt.Errorf("merge into %s: %w", cfg.out, err))
		}
	}
	if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
		fatal(err)
	}
	logf("wrote %s", cfg.out)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "benchload:", err)
	os.Exit(1)
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad concurrency %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// report is everything measured in one run.
type report struct {
	cfg      config
	args     []string
	machine  machine
	versions map[string]string
	start    time.Time
	elapsed  time.Duration

	cells    []cell  // every loopback cell of every round
	server   []micro // in-memory tools/call per implementation (harness first)
	ablation []micro // Weft variants (servers.Variants)
	mrtr     []micro
	mrtrHTTP []mrtrCell // the multi-round call over loopback
	seal     []micro
	json     []micro
	tasks    []taskRow
	tasksErr string
	taskFair []taskFairRow // tasks_fair.go
	listen   []listenRow
	sessions []sessionRow
	gateway  []cell        // gateway.go
	catalog  []micro       // catalog.go
	firstRun []firstRunRow // firstrun.go
	getStrm  []getStreamRow
	fairness []fairRow // fairness.go
	// scaleLoad is the load average when the scale rows (listen, GET
	// streams, sessions) started.
	scaleLoad string
}

func run(ctx context.Context, cfg config) (*report, error) {
	rep := &report{cfg: cfg, args: os.Args[1:], machine: describeMachine(), versions: versions(), start: time.Now()}
	logf("machine: %s, %d CPUs, load %s", rep.machine.cpuModel, rep.machine.nproc, rep.machine.loadStart)

	if !cfg.skip["loopback"] {
		if err := loopback(ctx, cfg, rep); err != nil {
			return nil, err
		}
	}
	var err error
	if !cfg.skip["server"] {
		logf("server-only tools/call in memory (allocations)")
		if rep.server, err = serverOnly(cfg.rounds); err != nil {
			return nil, err
		}
	}
	if !cfg.skip["ablation"] {
		logf("where Weft's time goes: ablations")
		if rep.ablation, err = ablations(cfg.rounds); err != nil {
			return nil, err
		}
	}
	if !cfg.skip["mrtr"] {
		logf("multi-round call vs plain call")
		// The target is a ratio of two close numbers on a machine whose
		// speed drifts from second to second: many short runs, paired
		// within each round (see pairedRatio).
		if err := flag.Set("test.benchtime", mrtrBenchtime); err != nil {
			return nil, err
		}
		rep.mrtr, err = multiRound(mrtrRoundsPer * cfg.rounds)
		if err2 := flag.Set("test.benchtime", cfg.benchtime); err == nil {
			err = err2
		}
		if err != nil {
			return nil, err
		}
	}
	if !cfg.skip["mrtr-loopback"] {
		logf("multi-round call vs plain call over loopback")
		if err := mrtrLoopback(ctx, cfg, rep); err != nil {
			return nil, err
		}
	}
	if !cfg.skip["seal"] {
		logf("seal and open")
		if rep.seal, err = sealOpen(cfg.rounds); err != nil {
			return nil, err
		}
	}
	if !cfg.skip["json"] {
		logf("JSON parse and canonicalize")
		if rep.json, err = jsonThroughput(cfg.rounds); err != nil {
			return nil, err
		}
	}
	if !cfg.skip["tasks"] {
		logf("task create-to-complete (light: %d tasks one at a time; heavy: %d tasks from %d clients)", cfg.taskLight, cfg.tasks, cfg.taskClients)
		if rep.tasks, err = taskRates(ctx, cfg); err != nil {
			return nil, err
		}
		for _, r := range rep.tasks {
			if r.note != "" {
				logf("  %s: %s", r.store, r.note)
			}
		}
	}
	if !cfg.skip["tasks-fair"] {
		logf("tasks: tenant B's task start alone and behind tenant A's backlog of %d", fairFlood)
		if rep.taskFair, err = taskFairness(ctx, cfg); err != nil {
			return nil, err
		}
	}
	if !cfg.skip["listen"] || !cfg.skip["sessions"] || !cfg.skip["getstreams"] {
		if err := scaleRows(ctx, cfg, rep); err != nil {
			return nil, err
		}
	}
	if !cfg.skip["gateway"] {
		logf("gateway overhead per tools/call")
		if err := gatewayOverhead(ctx, cfg, rep); err != nil {
			return nil, err
		}
	}
	if !cfg.skip["catalog"] {
		logf("large catalogs: list, lookup and call at %v tools", catalogSizes)
		if rep.catalog, err = catalogRows(ctx, cfg.rounds); err != nil {
			return nil, err
		}
	}
	if !cfg.skip["first-run"] {
		logf("first run: go run ./cmd/weft-demo from a fresh clone, cold and warm")
		if rep.firstRun, err = firstRun(ctx); err != nil {
			return nil, err
		}
	}
	if !cfg.skip["fairness"] {
		logf("noisy neighbour: tenant B's tools/call during tenant A's flood")
		if rep.fairness, err = fairnessRows(ctx, cfg.rounds, cfg.n/10); err != nil {
			return nil, err
		}
	}
	rep.machine.loadEnd = loadAvg()
	rep.elapsed = time.Since(rep.start)
	return rep, nil
}

// scaleRows measures the listen and session rows, each against a server
// process of its own (servers.ScaleImpls).
func scaleRows(ctx context.Context, cfg config, rep *report) error {
	rep.scaleLoad = loadAvg()
	dir, err := os.MkdirTemp("", "weft-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := cfg.serverBin
	if bin == "" {
		if bin, err = buildServer(ctx, dir); err != nil {
			return err
		}
	}
	if !cfg.skip["listen"] {
		for _, n := range listenSizes {
			logf("subscriptions/listen: %d idle streams, list_changed fan-out", n)
			row, err := listenScale(ctx, bin, n, max(5, cfg.rounds))
			if err != nil {
				return err
			}
			logf("  server: %.0f B heap + %.0f B stack per stream (%.2f goroutines, %.0f B RSS), fan-out %s (server CPU %s, client CPU %s)",
				row.heapPerStream, row.stackPerStream, row.goroutinesPerStream, row.rssPerStream, row.fanout, row.fanoutCPU, row.fanoutClientCPU)
			rep.listen = append(rep.listen, row)
		}
	}
	if !cfg.skip["getstreams"] {
		logf("2025-11-25 GET streams: %d sessions with one each, list_changed fan-out", getStreamCount)
		if rep.getStrm, err = getStreamRows(ctx, bin, max(5, cfg.rounds)); err != nil {
			return err
		}
		for _, r := range rep.getStrm {
			logf("  %s: %.0f B heap + %.0f B stack per stream (%.2f goroutines), fan-out %s (server CPU %s)", r.impl, r.heapPerStream, r.stackPerStream,
				r.goroutinesPerStream, r.fanout, r.fanoutCPU)
		}
	}
	if !cfg.skip["sessions"] {
		logf("2025-11-25 sessions: %d opened per server", sessionCount)
		if rep.sessions, err = sessionRows(ctx, bin, cfg.dsn); err != nil {
			return err
		}
		for _, r := range rep.sessions {
			logf("  %s: %.0f B heap + %.0f B stack per session, initialize %s (p99 %s), server CPU %s", r.name(), r.heapPerSess, r.stackPerSess, r.initialize, r.initializeP99, r.cpuPerSess)
		}
	}
	return nil
}

// loopback starts one server process per implementation and measures every
// (concurrency, round, implementation) cell, alternating implementations.
func loopback(ctx context.Context, cfg config, rep *report) error {
	dir, err := os.MkdirTemp("", "weft-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	logf("building cmd/benchserver")
	bin, err := buildServer(ctx, dir)
	if err != nil {
		return err
	}
	srvs := make([]*server, 0, len(cfg.impls))
	defer func() {
		for _, s := range srvs {
			s.stop()
		}
	}()
	for _, impl := range cfg.impls {
		s, err := startServer(bin, impl)
		if err != nil {
			return err
		}
		srvs = append(srvs, s)
		if err := verify(ctx, s.addr); err != nil {
			return fmt.Errorf("%s does not answer the echo call correctly: %w", impl, err)
		}
		logf("%s listening on %s (pid %d), answers verified", impl, s.addr, s.cmd.Process.Pid)
	}
	ids := int64(100)
	for _, c := range cfg.conc {
		for r := range cfg.rounds {
			// Rotate the starting implementation each round so that no one
			// always runs first (A B C D, B C D A, ...).
			for k := range srvs {
				s := srvs[(k+r)%len(srvs)]
				cl, err := measure(ctx, s, servers.EchoCall(), c, cfg.n, cfg.warm, r+1, &ids)
				if err != nil {
					return err
				}
				rep.cells = append(rep.cells, cl)
				logf("c=%-3d round %d %-6s %8.0f req/s  p50 %8s  p99 %8s  cpu %6.1f µs/req", c, r+1, s.impl,
					cl.throughput, fmtDur(float64(cl.p50)), fmtDur(float64(cl.p99)), float64(cl.cpuPerReq)/1e3)
			}
		}
	}
	return nil
}
