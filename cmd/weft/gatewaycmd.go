package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/gateway/usertoken"
	"github.com/weftmcp/weft/internal/serving"
	"github.com/weftmcp/weft/metrics"
	"github.com/weftmcp/weft/quota"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/sessionstore"
	sessionpg "github.com/weftmcp/weft/sessionstore/pgstore"
	sessionsqlite "github.com/weftmcp/weft/sessionstore/sqlitestore"
)

var gatewayDoc = helpDoc{name: "gateway",
	synopsis: []string{
		"weft gateway --config FILE [--addr 127.0.0.1:8080] [--stdio] [--data ./weft-gateway] [--keyring FILE]",
		"             [--postgres URL [--schema NAME]] [--tokens FILE [--authorization-server URL]]",
		"             [--auth-upstream URL --auth-client-id ID [--auth-client-secret-file FILE] [--auth-issuer URL]",
		"              [--auth-scopes mcp] [--auth-no-dynamic-registration] [--auth-dev]]",
		"             [--admin ADDRESS --admin-token-file FILE] [--otlp-endpoint URL]",
		"             [--allowed-hosts HOSTS] [--allowed-origins ORIGINS] [--drain-delay 0s] [--allow-unauthenticated]",
	},
	about: "Serves the upstream MCP servers named in a JSON or YAML config (stdio commands, Streamable HTTP URLs of\n" +
		"either era) as one MCP 2026-07-28 endpoint (2025-11-25 clients too) until SIGINT or SIGTERM. Callers are\n" +
		"authenticated as the config's auth section (or the flags --tokens, --auth-upstream) says: a tokens file,\n" +
		"JWTs, token introspection, or Weft's own authorization server in front of the company's identity\n" +
		"provider; its policy, limits and audit sections govern who sees and calls what, how often, and record\n" +
		"every call. Without authentication it listens on a loopback --addr only, unless --allow-unauthenticated\n" +
		"is given (behind an authenticating proxy). Parked calls, 2025 sessions, quotas and users' upstream tokens\n" +
		"live in SQLite (<data>), or in PostgreSQL (--postgres) so that a fleet sharing the keyring shares them.\n" +
		"See docs/guides/gateway-deployment.md.",
}

func gatewayCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("gateway")
	config := fs.String("config", "", "configuration `FILE` (.json, .yaml or .yml)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port)")
	stdio := fs.Bool("stdio", false, "serve over stdin/stdout instead of HTTP")
	data := fs.String("data", "./weft-gateway", "data directory `DIR` (gateway.db, the SQLite store, and the development keyring; created on first start)")
	keyring := fs.String("keyring", "", "keyring `FILE` sealing request state (default: <data>/keyring.json); a fleet shares one")
	postgres := fs.String("postgres", "", "PostgreSQL `URL`: parked calls (tables weft_gateway_*), 2025 sessions, quotas, users' upstream tokens and the authorization server's state live there instead of SQLite, so a fleet shares them")
	schema := fs.String("schema", "", "PostgreSQL schema `NAME` (default: the search_path)")
	tokens := fs.String("tokens", "", "static bearer tokens `FILE` (JSON; mode 0600) authenticating callers (instead of the config's auth section)")
	authServer := fs.String("authorization-server", "", "authorization server `URL` advertised in the protected resource metadata (with --tokens)")
	var af authFlags
	af.register(fs, "the gateway", "the origin of the gateway's URL")
	adminAddr := fs.String("admin", "", "admin listener `ADDRESS` (loopback only; keys, /metrics; off when empty)")
	adminTokenFile := fs.String("admin-token-file", "", "`FILE` holding the admin bearer token (created with a random token when missing)")
	otlp := fs.String("otlp-endpoint", "", "OTLP/HTTP traces `URL` (e.g. http://127.0.0.1:4318/v1/traces): every request is traced, with its upstream")
	allowedHosts := fs.String("allowed-hosts", "", "comma-separated `HOSTS` (host or host:port) accepted in the Host header besides loopback and the host of auth.resource")
	allowedOrigins := fs.String("allowed-origins", "", "comma-separated `ORIGINS` (scheme://host[:port]) accepted in the Origin header besides loopback")
	drainDelay := fs.Duration("drain-delay", 0, "on SIGTERM, report not ready at /readyz for this `DURATION` while still serving, before shutting down")
	allowUnauth := addAllowUnauthenticated(fs)
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
	flagAuth, err := gatewayAuthFromFlags(*tokens, *authServer, af)
	if err != nil {
		return usageError(gatewayDoc, err)
	}
	switch {
	case flagAuth != nil && cfg.Auth != nil:
		return usageError(gatewayDoc, errors.New("the config has an auth section: --tokens and --auth-upstream would replace it; use one"))
	case flagAuth != nil:
		cfg.Auth = flagAuth
	}
	if !*stdio {
		if err := serving.CheckExposure(*addr, cfg.Auth != nil, *allowUnauth, "an auth section in the config, --tokens FILE or --auth-upstream URL"); err != nil {
			return err
		}
	}
	if cfg.Auth == nil && len(cfg.Policy) > 0 {
		return errors.New("gateway: the config has policy rules but no auth section: every caller would be anonymous")
	}
	perUser := false
	for _, u := range cfg.Upstreams {
		if u.OAuth != nil && u.OAuth.PerUser != nil {
			perUser = true
		}
	}
	if perUser && (*stdio || cfg.Auth == nil || cfg.Auth.AuthorizationServer == nil && cfg.Auth.SignIn == nil) {
		return errors.New("gateway: upstreams with oauth.perUser need callers signed in over HTTP: an auth section with authorizationServer, or jwt/introspection with signIn")
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	kr, keyringPath, err := serving.DataKeyring(*data, *keyring, logger)
	if err != nil {
		return err
	}
	mgr := seal.NewManager(kr, nil)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGHUP does not reload the configuration (a rolling restart applies a
	// new one: docs/guides/gateway-deployment.md); it is logged, never a
	// reason to die mid-request.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				logger.Warn("SIGHUP: weft gateway does not reload its configuration; to apply a change, restart the instances one at a time (each drains first)")
			case <-ctx.Done():
				return
			}
		}
	}()

	st, err := openGatewayStores(ctx, cfg, *data, *postgres, *schema, perUser, logger)
	if err != nil {
		return err
	}
	defer st.close()

	var ca *callerAuth
	if cfg.Auth != nil && !*stdio {
		if ca, err = gatewayCallerAuth(ctx, cfg.Auth, *addr, *data, *postgres, *schema, logger); err != nil {
			return err
		}
		defer ca.close()
	}
	opts := &weft.Options{
		Protector:      mgr,
		Logger:         logger,
		Legacy:         weft.LegacyOptions{Store: st.sessions},
		ToolSearch:     cfg.ToolSearch,
		AllowedHosts:   splitList(*allowedHosts),
		AllowedOrigins: splitList(*allowedOrigins),
	}
	var metricsHandler http.Handler
	if *adminAddr != "" && !*stdio {
		mp, h, err := metrics.NewPrometheus(nil)
		if err != nil {
			return err
		}
		opts.MeterProvider, metricsHandler = mp, h
	}
	if *otlp != "" {
		tp, shutdown, err := otlpTracer(ctx, *otlp, "weft-gateway")
		if err != nil {
			return err
		}
		defer shutdown()
		opts.TracerProvider = tp
	}
	// Operations on the gateway's items refused at admission (401, 403
	// insufficient_scope) are audited too, once the gateway exists.
	var gwRef atomic.Pointer[gateway.Gateway]
	if ca != nil {
		adm := ca.admission
		opts.Admission = func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
			id, err := adm(ctx, r)
			if err != nil {
				if g := gwRef.Load(); g != nil {
					g.RecordRefusal(ctx, r, err)
				}
			}
			return id, err
		}
		if u, err := url.Parse(ca.resource); err == nil && !slices.Contains(opts.AllowedHosts, u.Host) {
			opts.AllowedHosts = append(opts.AllowedHosts, u.Host)
		}
	}
	srv, err := weft.NewServer(weft.Implementation{Name: "weft-gateway", Version: "0.1.0", Title: "Weft gateway"}, opts)
	if err != nil {
		return err
	}
	gopts := &gateway.Options{Store: st.parked, Logger: logger, URLElicitation: &elicit.URLPolicy{}, Quotas: st.quotas, MeterProvider: opts.MeterProvider}
	if cfg.Audit != nil {
		w, closeAudit, err := gateway.OpenAudit(cfg.Audit, stderr)
		if err != nil {
			return err
		}
		defer closeAudit()
		gopts.Audit = w
	}
	if perUser {
		ru, _ := url.Parse(ca.resource)
		gopts.UserAuthorization = &gateway.UserAuthorization{BaseURL: ru.Scheme + "://" + ru.Host + "/oauth", Protector: mgr, Store: st.userTokens, SignIn: ca.signIn}
	}
	// URL elicitations: each upstream's urlElicitation, else its own https
	// origin; nothing else (docs/gateway.md).
	gw, err := gateway.New(ctx, srv, cfg, gopts)
	if err != nil {
		return err
	}
	defer gw.Close()
	gwRef.Store(gw)
	if *stdio {
		logger.Info("weft gateway on stdio", "upstreams", len(cfg.Upstreams))
		return srv.ServeStdio(ctx, stdin, stdout)
	}
	mux := serving.Mux(srv)
	if ca != nil {
		if err := mountAuthorization(mux, ca.meta, ca.handler); err != nil {
			return err
		}
	}
	if perUser {
		mux.Handle("/oauth/", gw.AuthorizationHandler())
	}
	hs := weft.NewHTTPServer(*addr, mux)
	errc := make(chan error, 2)
	if *adminAddr != "" {
		status := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"upstreams": gw.Status(), "parkedCalls": gw.Parked(), "keyring": mgr.Keyring().Fingerprint().String()})
		})
		closeAdmin, err := serveAdmin(*adminAddr, *adminTokenFile, mgr, keyringPath, logger, map[string]http.Handler{"GET /metrics": metricsHandler, "GET /admin/status": status}, errc, stdout)
		if err != nil {
			return err
		}
		defer closeAdmin()
	}
	go func() { errc <- hs.ListenAndServe() }()
	authDesc := "none"
	if ca != nil {
		authDesc = ca.resource
	}
	fmt.Fprintf(stdout, "weft gateway\n  url:       http://%s/mcp\n  upstreams: %d\n  auth:      %s\n  keyring:   %s\n", *addr, len(cfg.Upstreams), authDesc, kr.Fingerprint())
	select {
	case err := <-errc:
		return fmt.Errorf("gateway: %w", err)
	case <-ctx.Done():
	}
	return serving.Shutdown(logger, srv, hs, *drainDelay)
}

// gatewayStores are the stores of `weft gateway`: SQLite in the data
// directory, or PostgreSQL shared by a fleet.
type gatewayStores struct {
	parked     sessionstore.Store
	sessions   sessionstore.Store
	quotas     quota.Store
	userTokens usertoken.Store
	closers    []func() error
}

func (s *gatewayStores) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		_ = s.closers[i]()
	}
}

// openGatewayStores opens the parked calls (tables weft_gateway_*), the
// sessions of 2025-11-25 clients (weft_*), the quotas and the users'
// upstream tokens.
func openGatewayStores(ctx context.Context, cfg *gateway.Config, data, postgres, schema string, perUser bool, logger *slog.Logger) (st *gatewayStores, err error) {
	st = &gatewayStores{}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	in := cfg.Input // the data directory exists (serving.DataKeyring made it)
	parkedLimits := sessionstore.Limits{MaxSessions: in.MaxParked, MaxPerIdentity: orInt(in.MaxParkedPerPartition, gateway.DefaultMaxParkedPerPartition)}
	if postgres != "" {
		pg, err := sessionpg.Open(ctx, postgres, &sessionpg.Options{Schema: schema, Prefix: "weft_gateway_", Logger: logger, Limits: parkedLimits})
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL store of parked calls: %w", err)
		}
		st.parked, st.closers = pg, append(st.closers, pg.Close)
		sessions, err := sessionpg.Open(ctx, postgres, &sessionpg.Options{Schema: schema, Logger: logger, Limits: sessionstore.Limits{EvictWhenFull: true}})
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL session store: %w", err)
		}
		st.sessions, st.closers = sessions, append(st.closers, sessions.Close)
		db, err := openHandleDB(ctx, postgres, schema)
		if err != nil {
			return nil, err
		}
		st.closers = append(st.closers, db.Close)
		if len(cfg.Limits) > 0 {
			if st.quotas, err = quota.OpenPostgres(ctx, db, &quota.PostgresOptions{Table: "weft_gateway_quota"}); err != nil {
				return nil, err
			}
		}
		if perUser {
			ut, err := usertoken.OpenPostgres(ctx, db, "")
			if err != nil {
				return nil, err
			}
			st.userTokens, st.closers = ut, append(st.closers, ut.Close)
		}
		return st, nil
	}
	db := filepath.Join(data, "gateway.db")
	parked, err := sessionsqlite.Open(ctx, db, &sessionsqlite.Options{Prefix: "weft_gateway_", Limits: parkedLimits})
	if err != nil {
		return nil, fmt.Errorf("open the SQLite store of parked calls: %w", err)
	}
	st.parked, st.closers = parked, append(st.closers, parked.Close)
	sessions, err := sessionsqlite.Open(ctx, db, nil)
	if err != nil {
		return nil, fmt.Errorf("open the SQLite session store: %w", err)
	}
	st.sessions, st.closers = sessions, append(st.closers, sessions.Close)
	if perUser {
		ut, err := usertoken.OpenSQLite(ctx, filepath.Join(data, "usertokens.db"))
		if err != nil {
			return nil, err
		}
		st.userTokens, st.closers = ut, append(st.closers, ut.Close)
	}
	// Quotas of one instance live in memory (gateway.New's default).
	return st, nil
}

func orInt(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
