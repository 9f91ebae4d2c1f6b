// Command weft-demo runs the Weft demo server on its embedded defaults:
// SQLite files and a development keyring in a data directory, created on
// first start. It links only what the demo uses, so a fresh clone builds it
// quickly; the `weft` tool (cmd/weft) runs the same demo with the
// operator's options (`weft serve`: PostgreSQL, authorization, metrics)
// and has the client, gateway and OpenAPI commands.
//
//	weft-demo [--addr 127.0.0.1:8080] [--data ./weft-data] [--stdio]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/internal/demo"
	"github.com/weftmcp/weft/internal/serving"
	"github.com/weftmcp/weft/seal"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "weft-demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("weft-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port)")
	data := fs.String("data", "./weft-data", "data directory `DIR` (created on first start)")
	stdio := fs.Bool("stdio", false, "serve the demo over stdin/stdout instead of HTTP")
	allowUnauth := fs.Bool(serving.AllowUnauthenticatedFlag, false, "listen on a non-loopback --addr without authentication")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: weft-demo [--addr 127.0.0.1:8080] [--data ./weft-data] [--stdio]\n\n"+
			"Runs the Weft demo server until SIGINT or SIGTERM. For PostgreSQL, authorization or metrics,\n"+
			"run the same demo with `weft serve` (go run ./cmd/weft serve -h).\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("weft-demo takes no arguments, got %q (see weft-demo -h)", fs.Args())
	}
	if !*stdio {
		if err := serving.CheckExposure(*addr, false, *allowUnauth, "run `weft serve --tokens FILE`"); err != nil {
			return err
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	kr, _, err := serving.DataKeyring(*data, "", logger)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	d, err := demo.New(ctx, logger, seal.NewManager(kr, nil),
		demo.Config{DataDir: *data, BaseURL: "http://" + *addr})
	if err != nil {
		return err
	}
	defer d.Close()
	if *stdio {
		return d.Server().ServeStdio(ctx, stdin, stdout)
	}
	hs := weft.NewHTTPServer(*addr, d.Handler())
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	fmt.Fprintf(stdout, "weft demo server\n  url:       http://%s/mcp\n  protocol:  %s\n  data:      %s\n  keyring:   %s\n", *addr, weft.ProtocolVersion, *data, kr.Fingerprint())
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	return serving.Shutdown(logger, d.Server(), hs, 0)
}
