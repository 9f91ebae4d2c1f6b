// Command benchserver serves the echo tool through one implementation, for
// benchload to measure as a separate process.
//
//	go run ./cmd/benchserver -impl weft -addr 127.0.0.1:0
//
// It prints "listening <addr>" on stdout once it accepts connections and
// exits when stdin closes or on SIGTERM.
package main

import (
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
	"runtime/pprof"
	"syscall"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/bench/servers"
)

func main() {
	impl := flag.String("impl", "weft", "implementation: weft, gosdk, mcpgo, bare, weft-mrtr, weft-legacy, or gateway (in front of -upstream)")
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	upstream := flag.String("upstream", "", "gateway: the URL of the Weft server fronted")
	protocol := flag.String("protocol", "2026-07-28", "gateway: the revision spoken to the upstream (2026-07-28 or 2025-11-25)")
	flag.Parse()
	var h http.Handler
	var err error
	if *impl == "gateway" {
		h, _, err = servers.NewGateway(context.Background(), *upstream, *protocol)
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
	stop := func() {}
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
		stop = func() { pprof.StopCPUProfile(); f.Close() }
	}
	fmt.Printf("listening %s\n", ln.Addr())
	go func() {
		// benchload holds stdin open; its end ends the server.
		_, _ = io.Copy(io.Discard, os.Stdin)
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
