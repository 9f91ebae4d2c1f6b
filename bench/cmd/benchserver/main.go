// Command benchserver serves the echo tool through one implementation, for
// benchload to measure as a separate process.
//
//	go run ./cmd/benchserver -impl weft -addr 127.0.0.1:0
//
// The scale servers (servers.ScaleImpls) also answer the control endpoints
// of package servers (memory, and for weft-listen a catalog change).
//
// It prints "listening <addr>" on stdout once it accepts connections and
// exits when stdin closes or on SIGTERM.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/bench/servers"
)

// printStats prints "stats <GC cycles> <bytes allocated> <objects
// allocated> <GC CPU seconds> <scavenger CPU seconds>", all since the
// process started (runtime/metrics; the CPU figures are the runtime's
// estimates).
func printStats() {
	ms := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/scavenge/total:cpu-seconds"}}
	metrics.Read(ms)
	fmt.Printf("stats %d %d %d %g %g\n", ms[0].Value.Uint64(), ms[1].Value.Uint64(), ms[2].Value.Uint64(), ms[3].Value.Float64(), ms[4].Value.Float64())
}

func main() {
	impl := flag.String("impl", "weft", "implementation: weft, gosdk, mcpgo, bare, weft-mrtr, weft-legacy, gateway (in front of -upstream), or a scale server: "+strings.Join(servers.ScaleImpls, ", "))
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	upstream := flag.String("upstream", "", "gateway: the URL of the Weft server fronted")
	protocol := flag.String("protocol", "2026-07-28", "gateway: the revision spoken to the upstream (2026-07-28 or 2025-11-25)")
	jwks := flag.String("jwks", "", "gateway: authenticate callers with JWTs of the bench issuer, checked against this JWKS file")
	pgDSN := flag.String("pg-dsn", "", "PostgreSQL DSN of -impl weft-sessions-pg")
	pgSchema := flag.String("pg-schema", "", "PostgreSQL schema of -impl weft-sessions-pg")
	flag.Parse()
	var h http.Handler
	var err error
	release := func() {}
	if *impl == "gateway" {
		h, _, err = servers.NewGateway(context.Background(), *upstream, *protocol, *jwks)
	} else if slices.Contains(servers.ScaleImpls, *impl) {
		h, release, err = servers.NewScale(context.Background(), *impl, servers.ScaleOptions{PostgresDSN: *pgDSN, PostgresSchema: *pgSchema})
	} else {
		h, err = servers.New(*impl)
	}
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	// The same server settings for every implementation: Weft's defaults.
	hs := weft.NewHTTPServer(ln.Addr().String(), h)
	hs.ErrorLog = log.New(io.Discard, "", 0)
	// WEFT_BENCHSERVER_CPUPROFILE=<file> profiles the server until it exits
	// (to see where a server's CPU goes under the real load).
	stop := release
	if path := os.Getenv("WEFT_BENCHSERVER_CPUPROFILE"); path != "" {
		name := path + "." + *impl
		if *impl == "gateway" {
			name += "-" + *protocol
		}
		f, err := os.Create(name)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		stop = func() { pprof.StopCPUProfile(); f.Close(); release() }
	}
	// WEFT_BENCHSERVER_MEMPROFILE=<file> records every allocation and writes
	// the allocation profile when the server exits (to see what one request
	// allocates under the real transport, not an httptest recorder).
	if path := os.Getenv("WEFT_BENCHSERVER_MEMPROFILE"); path != "" {
		runtime.MemProfileRate = 1
		cpuStop := stop
		stop = func() {
			cpuStop()
			f, err := os.Create(path + "." + *impl)
			if err != nil {
				log.Print(err)
				return
			}
			defer f.Close()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				log.Print(err)
			}
		}
	}
	fmt.Printf("listening %s\n", ln.Addr())
	go func() {
		// benchload holds stdin open; its end ends the server. Each line
		// "stats" asks for the process's allocation and GC counters.
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "stats" {
				printStats()
			}
		}
		stop()
		os.Exit(0)
	}()
	go func() {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM, os.Interrupt)
		<-c
		stop()
		os.Exit(0)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
