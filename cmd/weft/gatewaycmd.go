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
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/internal/serving"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/sessionstore"
	sessionpg "github.com/weftmcp/weft/sessionstore/pgstore"
	sessionsqlite "github.com/weftmcp/weft/sessionstore/sqlitestore"
)

var gatewayDoc = helpDoc{name: "gateway",
	synopsis: []string{
		"weft gateway --config FILE [--addr 127.0.0.1:8080] [--stdio] [--data ./weft-gateway] [--keyring FILE]",
		"             [--postgres URL [--schema NAME]] [--allow-unauthenticated]",
	},
	about: "Serves the upstream MCP servers named in a JSON or YAML config (stdio commands, Streamable HTTP URLs of\n" +
		"either era) as one MCP 2026-07-28 endpoint (2025-11-25 clients too) until SIGINT or SIGTERM. Calls of\n" +
		"2025-era upstreams that wait for a client's input are parked, and the sessions of 2025-11-25 clients kept,\n" +
		"in SQLite (<data>/gateway.db), or in PostgreSQL (--postgres) so that any instance of a fleet sharing the\n" +
		"keyring can serve the retry. The gateway does not authenticate its callers: it listens on a loopback\n" +
		"--addr only, unless --allow-unauthenticated is given (behind an authenticating proxy). See docs/gateway.md.",
}

func gatewayCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("gateway")
	config := fs.String("config", "", "configuration `FILE` (.json, .yaml or .yml)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port)")
	stdio := fs.Bool("stdio", false, "serve over stdin/stdout instead of HTTP")
	data := fs.String("data", "./weft-gateway", "data directory `DIR` (gateway.db, the SQLite store, and the development keyring; created on first start)")
	keyring := fs.String("keyring", "", "keyring `FILE` sealing request state (default: <data>/keyring.json); a fleet shares one")
	postgres := fs.String("postgres", "", "PostgreSQL `URL`: parked calls (tables weft_gateway_*) and 2025 sessions live there instead of SQLite, so a fleet shares them")
	schema := fs.String("schema", "", "PostgreSQL schema `NAME` (default: the search_path)")
	allowUnauth := addAllowUnauthenticated(fs)
	if pos, err := parseFlags(fs, gatewayDoc, args, stdout); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageError(gatewayDoc, fmt.Errorf("gateway takes no arguments, got %q", pos))
	}
	if *config == "" {
		return usageError(gatewayDoc, errors.New("--config is required"))
	}
	if !*stdio {
		if err := serving.CheckExposure(*addr, false, *allowUnauth, ""); err != nil {
			return err
		}
	}
	cfg, err := gateway.LoadConfig(*config)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	path := *keyring
	if path == "" || *postgres == "" {
		if err := os.MkdirAll(*data, 0o700); err != nil {
			return fmt.Errorf("create data directory: %w", err)
		}
	}
	if path == "" {
		path = filepath.Join(*data, "keyring.json")
	}
	kr, created, err := serving.LoadOrCreateKeyring(path)
	if err != nil {
		return err
	}
	if created {
		logger.Warn("created a development keyring: a fleet must share one keyring", "path", path)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Parked calls (tables weft_gateway_*) and the sessions of 2025-11-25
	// clients (weft_*): SQLite in the data directory, or PostgreSQL.
	in := cfg.Input
	parkedLimits := sessionstore.Limits{MaxSessions: in.MaxParked, MaxPerIdentity: orInt(in.MaxParkedPerPartition, gateway.DefaultMaxParkedPerPartition)}
	var store sessionstore.Store
	var legacy weft.LegacyOptions // sessions in the store below
	if *postgres != "" {
		pg, err := sessionpg.Open(ctx, *postgres, &sessionpg.Options{Schema: *schema, Prefix: "weft_gateway_", Logger: logger, Limits: parkedLimits})
		if err != nil {
			return fmt.Errorf("open PostgreSQL store of parked calls: %w", err)
		}
		defer pg.Close()
		store = pg
		sessions, err := sessionpg.Open(ctx, *postgres, &sessionpg.Options{Schema: *schema, Logger: logger, Limits: sessionstore.Limits{EvictWhenFull: true}})
		if err != nil {
			return fmt.Errorf("open PostgreSQL session store: %w", err)
		}
		defer sessions.Close()
		legacy.Store = sessions
	} else {
		db := filepath.Join(*data, "gateway.db")
		parked, err := sessionsqlite.Open(ctx, db, &sessionsqlite.Options{Prefix: "weft_gateway_", Limits: parkedLimits})
		if err != nil {
			return fmt.Errorf("open the SQLite store of parked calls: %w", err)
		}
		defer parked.Close()
		store = parked
		sessions, err := sessionsqlite.Open(ctx, db, nil)
		if err != nil {
			return fmt.Errorf("open the SQLite session store: %w", err)
		}
		defer sessions.Close()
		legacy.Store = sessions
	}
	srv, err := weft.NewServer(weft.Implementation{Name: "weft-gateway", Version: "0.1.0", Title: "Weft gateway"}, &weft.Options{
		Protector:  seal.NewManager(kr, nil),
		Logger:     logger,
		Legacy:     legacy,
		ToolSearch: cfg.ToolSearch,
	})
	if err != nil {
		return err
	}
	// URL elicitations: each upstream's urlElicitation, else its own https
	// origin; nothing else (docs/gateway.md).
	gw, err := gateway.New(ctx, srv, cfg, &gateway.Options{Store: store, Logger: logger, URLElicitation: &elicit.URLPolicy{}})
	if err != nil {
		return err
	}
	defer gw.Close()
	if *stdio {
		logger.Info("weft gateway on stdio", "upstreams", len(cfg.Upstreams))
		return srv.ServeStdio(ctx, stdin, stdout)
	}
	hs := weft.NewHTTPServer(*addr, serving.Mux(srv))
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	fmt.Fprintf(stdout, "weft gateway\n  url:       http://%s/mcp\n  upstreams: %d\n  keyring:   %s\n", *addr, len(cfg.Upstreams), kr.Fingerprint())
	select {
	case err := <-errc:
		return fmt.Errorf("gateway: %w", err)
	case <-ctx.Done():
	}
	return serving.Shutdown(logger, srv, hs, 0)
}

func orInt(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
