package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/sessionstore"
	sessionpg "github.com/weftmcp/weft/sessionstore/pgstore"
)

var gatewayDoc = helpDoc{name: "gateway",
	synopsis: []string{
		"weft gateway --config FILE [--addr 127.0.0.1:8080] [--stdio] [--data ./weft-gateway] [--keyring FILE]",
		"             [--postgres URL [--schema NAME]]",
	},
	about: "Serves the upstream MCP servers named in a JSON or YAML config (stdio commands, Streamable HTTP URLs of\n" +
		"either era) as one MCP 2026-07-28 endpoint (2025-11-25 clients too) until SIGINT or SIGTERM. Calls of\n" +
		"2025-era upstreams that wait for a client's input are parked in process, or in PostgreSQL (--postgres)\n" +
		"so that any instance of a fleet sharing the keyring can serve the retry. See docs/gateway.md.",
}

func gatewayCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("gateway")
	config := fs.String("config", "", "configuration `FILE` (.json, .yaml or .yml)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port)")
	stdio := fs.Bool("stdio", false, "serve over stdin/stdout instead of HTTP")
	data := fs.String("data", "./weft-gateway", "data directory `DIR` (the development keyring; created on first start)")
	keyring := fs.String("keyring", "", "keyring `FILE` sealing request state (default: <data>/keyring.json); a fleet shares one")
	postgres := fs.String("postgres", "", "PostgreSQL `URL`: parked calls live there (tables weft_gateway_*) so a fleet shares them")
	schema := fs.String("schema", "", "PostgreSQL schema `NAME` (default: the search_path)")
	if pos, err := parseFlags(fs, gatewayDoc, args, stdout); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageError(gatewayDoc, fmt.Errorf("gateway takes no arguments, got %q", pos))
	}
	if *config == "" {
		return usageError(gatewayDoc, errors.New("--config is required"))
	}
	cfg, err := gateway.LoadConfig(*config)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	path := *keyring
	if path == "" {
		if err := os.MkdirAll(*data, 0o700); err != nil {
			return fmt.Errorf("create data directory: %w", err)
		}
		path = filepath.Join(*data, "keyring.json")
	}
	kr, created, err := loadOrCreateKeyring(path)
	if err != nil {
		return err
	}
	if created {
		logger.Warn("created a development keyring: a fleet must share one keyring", "path", path)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var store sessionstore.Store
	if *postgres != "" {
		in := cfg.Input
		pg, err := sessionpg.Open(ctx, *postgres, sessionpg.Options{Schema: *schema, Prefix: "weft_gateway_", Logger: logger,
			Limits: sessionstore.Limits{MaxSessions: in.MaxParked, MaxPerIdentity: orInt(in.MaxParkedPerPartition, gateway.DefaultMaxParkedPerPartition)}})
		if err != nil {
			return fmt.Errorf("open PostgreSQL store of parked calls: %w", err)
		}
		defer pg.Close()
		store = pg
	}
	legacy := &weft.LegacyOptions{}
	if *postgres != "" {
		pg, err := sessionpg.Open(ctx, *postgres, sessionpg.Options{Schema: *schema, Logger: logger})
		if err != nil {
			return fmt.Errorf("open PostgreSQL session store: %w", err)
		}
		defer pg.Close()
		legacy.Store = pg
	}
	srv := weft.NewServer(weft.Implementation{Name: "weft-gateway", Version: "0.1.0", Title: "Weft gateway"}, &weft.Options{
		Protector: seal.NewManager(kr, seal.WithMaxTokenBytes(weft.DefaultStateMaxEncodedBytes)),
		Logger:    logger,
		Legacy:    legacy,
	})
	if err := srv.Err(); err != nil {
		return err
	}
	gw, err := gateway.New(ctx, srv, cfg, gateway.Options{Store: store, Logger: logger})
	if err != nil {
		return err
	}
	defer gw.Close()
	if *stdio {
		logger.Info("weft gateway on stdio", "upstreams", len(cfg.Upstreams))
		return srv.ServeStdio(ctx, stdin, stdout)
	}
	hs := weft.NewHTTPServer(*addr, mcpMux(srv))
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	fmt.Fprintf(stdout, "weft gateway\n  url:       http://%s/mcp\n  upstreams: %d\n  keyring:   %s\n", *addr, len(cfg.Upstreams), kr.Fingerprint())
	select {
	case err := <-errc:
		return fmt.Errorf("gateway: %w", err)
	case <-ctx.Done():
	}
	return drainAndShutdown(logger, srv, hs, 0)
}

func orInt(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
