// Command weft runs the Weft demo server and the operator tools.
//
//	weft serve [--addr 127.0.0.1:8080] [--data ./weft-data] [--keyring FILE] [--stdio]
//	weft keys generate --id ID --keyring FILE
//	weft keys fingerprint --keyring FILE
//	weft admin keys status|stage|activate|rotate|remove [--id ID] --admin URL --token-file FILE
//	weft tools URL [--login]
//	weft call URL TOOL [--args JSON] [--login]
//	weft logout URL | --all
//	weft gateway --config FILE [--addr 127.0.0.1:8080] [--stdio] [--postgres URL]
//
// Every command answers -h or --help with its flags (weft help COMMAND
// does the same).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/auth"
	"github.com/weftmcp/weft/internal/demo"
	"github.com/weftmcp/weft/internal/serving"
	"github.com/weftmcp/weft/metrics"
	"github.com/weftmcp/weft/seal"
	"go.opentelemetry.io/otel/metric"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "weft:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  weft serve [--addr 127.0.0.1:8080] [--data ./weft-data] [--keyring FILE] [--stdio]
             [--tokens FILE [--authorization-server URL]]
             [--postgres URL [--schema NAME]] [--task-lease 30s]
             [--admin 127.0.0.1:8081 --admin-token-file FILE] [--allow-unauthenticated]
  weft serve --openapi FILE [--upstream URL]   (or weft openapi --spec FILE; see weft openapi -h)
  weft keys generate --id ID --keyring FILE
  weft keys fingerprint --keyring FILE
  weft admin keys status|stage|activate|rotate|remove [--id ID] --admin URL --token-file FILE
  weft discover|tools|prompts|resources|templates TARGET [--json]
  weft call TARGET TOOL [NAME=VALUE]... [--args JSON] [--json]
  weft prompt TARGET NAME [--arg NAME=VALUE]...
  weft read TARGET URI
  weft complete TARGET (--prompt NAME | --resource URI-TEMPLATE) ARGUMENT VALUE
  weft listen TARGET [--tools] [--prompts] [--resources] [--uri URI]... [--task ID]...
  weft task get|follow|cancel TARGET ID
  weft logout URL | --all
  weft gateway --config FILE [--addr 127.0.0.1:8080] [--stdio] [--postgres URL]
  weft version | weft completion bash|zsh|fish

TARGET is a server URL (http://127.0.0.1:8080/mcp), a server named in an mcp.json (--config FILE,
default ./.mcp.json or ./mcp.json), or left out with --command "CMD ARGS" to start a stdio server;
--header, --bearer-file, --login, --json, --trace and --timeout work with every client command.
Without authentication, serve, gateway and openapi listen on a loopback --addr
only; --allow-unauthenticated lets them listen on any.
Run weft COMMAND --help for the flags of a command.`

// run runs the command line args. A command that printed its help
// succeeds.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, stdin, stdout, stderr)
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

// clientCommands are the commands that talk to a server as its client.
var clientCommands = []string{"discover", "tools", "prompts", "resources", "templates", "prompt", "read", "complete", "listen", "task", "call"}

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	if slices.Contains(clientCommands, args[0]) {
		// Ctrl-C (or SIGTERM) ends the command's context, so that the
		// client tells the server: notifications/cancelled for the
		// request in flight, tasks/cancel for a followed task. A second
		// one stops at once.
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		go func() { <-ctx.Done(); stop() }()
	}
	switch args[0] {
	case "serve":
		if openapiServeRequested(args[1:]) {
			return openapiCmd(ctx, args[1:], stdin, stdout, stderr)
		}
		return serve(ctx, args[1:], stdin, stdout, stderr)
	case "openapi":
		return openapiCmd(ctx, args[1:], stdin, stdout, stderr)
	case "keys":
		return keys(args[1:], stdout)
	case "admin":
		return adminCmd(ctx, args[1:], stdout)
	case "discover":
		return discoverCmd(ctx, args[1:], stdin, stdout, stderr)
	case "tools":
		return toolsCmd(ctx, args[1:], stdin, stdout, stderr)
	case "prompts":
		return promptsCmd(ctx, args[1:], stdin, stdout, stderr)
	case "resources":
		return resourcesCmd(ctx, args[1:], stdin, stdout, stderr)
	case "templates":
		return templatesCmd(ctx, args[1:], stdin, stdout, stderr)
	case "prompt":
		return promptCmd(ctx, args[1:], stdin, stdout, stderr)
	case "read":
		return readCmd(ctx, args[1:], stdin, stdout, stderr)
	case "complete":
		return completeCmd(ctx, args[1:], stdin, stdout, stderr)
	case "listen":
		return listenCmd(ctx, args[1:], stdin, stdout, stderr)
	case "task":
		return taskCmd(ctx, args[1:], stdin, stdout, stderr)
	case "logout":
		return logoutCmd(ctx, args[1:], stdout)
	case "call":
		return callCmd(ctx, args[1:], stdin, stdout, stderr)
	case "gateway":
		return gatewayCmd(ctx, args[1:], stdin, stdout, stderr)
	case "version", "--version", "-version":
		return versionCmd(stdout)
	case "completion":
		return completionCmd(args[1:], stdout)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			// weft help COMMAND...: the help of that command.
			return dispatch(ctx, append(args[1:len(args):len(args)], "--help"), stdin, stdout, stderr)
		}
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

var serveDoc = helpDoc{name: "serve",
	synopsis: []string{
		"weft serve [--addr 127.0.0.1:8080] [--data ./weft-data] [--keyring FILE] [--stdio]",
		"           [--tokens FILE [--authorization-server URL]]",
		"           [--auth-upstream URL --auth-client-id ID --auth-client-secret-file FILE",
		"            [--auth-issuer URL] [--auth-scopes mcp] [--auth-no-dynamic-registration] [--auth-dev]]",
		"           [--postgres URL [--schema NAME]] [--task-lease 30s]",
		"           [--admin 127.0.0.1:8081 --admin-token-file FILE]",
		"           [--allowed-hosts HOSTS] [--allowed-origins ORIGINS] [--drain-delay 0s]",
		"           [--allow-unauthenticated]",
	},
	about: "Runs the Weft demo server over HTTP (or stdio) until SIGINT or SIGTERM. Without --tokens it listens on\n" +
		"a loopback --addr only, unless --allow-unauthenticated is given.",
}

func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("serve")
	addr := fs.String("addr", "127.0.0.1:8080", "listen `ADDRESS` (host:port)")
	data := fs.String("data", "./weft-data", "data directory `DIR` (created on first start)")
	keyring := fs.String("keyring", "", "keyring `FILE` (default: <data>/keyring.json, created on first start)")
	stdio := fs.Bool("stdio", false, "serve the demo over stdin/stdout instead of HTTP")
	postgres := fs.String("postgres", "", "PostgreSQL `URL`: tasks, handles and fleet events live there instead of SQLite")
	schema := fs.String("schema", "", "PostgreSQL schema `NAME` for the demo's tables (default: the search_path)")
	taskLease := fs.Duration("task-lease", 0, "lease (a `DURATION`) of a running task step (default 30s); a crashed worker's task is taken over after it")
	tokens := fs.String("tokens", "", "static bearer tokens `FILE` (JSON; mode 0600): requests without a valid token get 401")
	authServer := fs.String("authorization-server", "", "authorization server `URL` advertised in the protected resource metadata (with --tokens)")
	adminAddr := fs.String("admin", "", "admin listener `ADDRESS` (loopback only; off when empty)")
	adminTokenFile := fs.String("admin-token-file", "", "`FILE` holding the admin bearer token (created with a random token when missing)")
	allowedHosts := fs.String("allowed-hosts", "", "comma-separated `HOSTS` (host or host:port) accepted in the Host header besides loopback, e.g. the name a proxy forwards")
	allowedOrigins := fs.String("allowed-origins", "", "comma-separated `ORIGINS` (scheme://host[:port]) accepted in the Origin header besides loopback")
	allowUnauth := addAllowUnauthenticated(fs)
	var af authFlags
	af.register(fs, "the demo", "http://<addr>")
	eras := fs.String("eras", "both", "protocol `ERAS` served: both (2026-07-28, and 2025-11-25/2025-06-18 with sessions), 2026 (2026-07-28 alone) or 2025 (the 2025 revisions alone)")
	drainDelay := fs.Duration("drain-delay", 0, "on SIGTERM, report not ready at /readyz for this `DURATION` while still serving, before shutting down (behind a load balancer: its check interval times its fall count, plus a margin)")
	if pos, err := parseFlags(fs, serveDoc, args, stdout); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageError(serveDoc, fmt.Errorf("serve takes no arguments, got %q", pos))
	}
	versions, err := demoEras(*eras)
	if err != nil {
		return usageError(serveDoc, err)
	}
	if !*stdio {
		if err := serving.CheckExposure(*addr, *tokens != "" || af.enabled(), *allowUnauth, "--tokens FILE or --auth-upstream URL"); err != nil {
			return err
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	kr, path, err := serving.DataKeyring(*data, *keyring, logger)
	if err != nil {
		return err
	}
	mgr := seal.NewManager(kr, nil)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// With an admin listener, metrics are recorded and served there at
	// /metrics (docs/operations.md).
	var meter metric.MeterProvider
	var metricsHandler http.Handler
	if *adminAddr != "" && !*stdio {
		mp, h, err := metrics.NewPrometheus(nil)
		if err != nil {
			return err
		}
		meter, metricsHandler = mp, h
	}
	var admission weft.Admission
	var prm *auth.ResourceMetadata
	var asHandler http.Handler
	if af.enabled() {
		if *tokens != "" {
			return errors.New("--tokens and --auth-upstream exclude each other")
		}
		as, err := serveAuthServer(ctx, af, *addr, *data, *postgres, *schema, "http://"+*addr+"/mcp", logger)
		if err != nil {
			return err
		}
		defer as.close()
		admission, prm, asHandler = as.admission, as.meta, as.handler
	}
	if *tokens != "" {
		if admission, prm, err = tokenAdmission(*tokens, "http://"+*addr+"/mcp", *authServer, logger); err != nil {
			return err
		}
	}
	cfg := demo.Config{DataDir: *data, BaseURL: "http://" + *addr, TaskLease: *taskLease, Meter: meter,
		Admission: admission, AllowedHosts: splitList(*allowedHosts), AllowedOrigins: splitList(*allowedOrigins), Eras: *eras}
	if *postgres != "" {
		if cfg.Fleet, err = openFleet(ctx, *postgres, *schema, logger); err != nil {
			return err
		}
	}
	d, err := demo.New(ctx, logger, mgr, cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	srv := d.Server()
	if *stdio {
		logger.Info("weft demo on stdio", "versions", versions, "keyring", kr.Fingerprint().String())
		return srv.ServeStdio(ctx, stdin, stdout)
	}
	mux := d.Handler()
	if err := mountAuthorization(mux, prm, asHandler); err != nil {
		return err
	}
	hs := weft.NewHTTPServer(*addr, mux)
	errc := make(chan error, 2)
	if *adminAddr != "" {
		closeAdmin, err := serveAdmin(*adminAddr, *adminTokenFile, mgr, path, logger, map[string]http.Handler{"GET /metrics": metricsHandler}, errc, stdout)
		if err != nil {
			return err
		}
		defer closeAdmin()
	}
	go func() { errc <- hs.ListenAndServe() }()
	fmt.Fprintf(stdout, "weft demo server\n  url:       http://%s/mcp\n  protocol:  %s\n  data:      %s\n  keyring:   %s\n", *addr, versions, *data, kr.Fingerprint())
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	return serving.Shutdown(logger, srv, hs, *drainDelay)
}

// mountAuthorization serves the protected resource metadata meta (when
// set) at its well-known paths and an authorization server's endpoints
// (when set) at the root of mux.
func mountAuthorization(mux *http.ServeMux, meta *auth.ResourceMetadata, as http.Handler) error {
	if meta != nil {
		h, err := meta.Handler()
		if err != nil {
			return err
		}
		for _, p := range meta.WellKnownPaths() {
			mux.Handle(p, h)
		}
	}
	if as != nil {
		mux.Handle("/", as)
	}
	return nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

var (
	keysGenerateDoc = helpDoc{name: "keys generate", synopsis: []string{"weft keys generate --id ID --keyring FILE"},
		about: "Adds a fresh key to the keyring file as a verification key (creating the file, with the key active, when missing)."}
	keysFingerprintDoc = helpDoc{name: "keys fingerprint", synopsis: []string{"weft keys fingerprint --keyring FILE"},
		about: "Prints the fingerprint of the keyring file (compare it across instances)."}
)

func keys(args []string, stdout io.Writer) error {
	subs := []helpDoc{keysGenerateDoc, keysFingerprintDoc}
	if len(args) == 0 || isHelp(args[0]) {
		if len(args) == 0 {
			return fmt.Errorf("keys needs a command\nusage: %s\n       %s", keysGenerateDoc.synopsis[0], keysFingerprintDoc.synopsis[0])
		}
		writeGroupHelp(stdout, "keys", subs)
		return errHelp
	}
	fs := newFlags("keys " + args[0])
	path := fs.String("keyring", "", "keyring `FILE`")
	var doc helpDoc
	var id *string
	switch args[0] {
	case "generate":
		doc = keysGenerateDoc
		id = fs.String("id", "", "key `ID` (1-64 HTTP token characters)")
	case "fingerprint":
		doc = keysFingerprintDoc
	default:
		return fmt.Errorf("unknown keys command %q\nusage: %s\n       %s", args[0], keysGenerateDoc.synopsis[0], keysFingerprintDoc.synopsis[0])
	}
	if pos, err := parseFlags(fs, doc, args[1:], stdout); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageError(doc, fmt.Errorf("unexpected arguments %q", pos))
	}
	if *path == "" {
		return usageError(doc, errors.New("--keyring is required"))
	}
	switch args[0] {
	case "generate":
		if *id == "" {
			return usageError(doc, errors.New("--id is required"))
		}
		k, err := seal.GenerateKey(*id)
		if err != nil {
			return err
		}
		kr, err := seal.LoadKeyringFile(*path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			kr, err = seal.NewKeyring(k)
		case err == nil:
			// The new key joins as a verification key; activate it on the
			// running servers (see docs/key-rotation.md).
			kr, err = seal.NewKeyring(kr.Active(), append(kr.Verification(), k)...)
		}
		if err != nil {
			return err
		}
		if err := seal.WriteKeyringFile(*path, kr); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "key %s written to %s\nfingerprint %s\n", k.ID(), *path, kr.Fingerprint())
		return nil
	default: // fingerprint
		kr, err := seal.LoadKeyringFile(*path)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, kr.Fingerprint())
		return nil
	}
}

// tokenAdmission builds static-token admission and the protected resource
// metadata that its 401 challenges point to.
func tokenAdmission(path, resource, authServer string, logger *slog.Logger) (weft.Admission, *auth.ResourceMetadata, error) {
	st, err := auth.LoadStaticTokens(path)
	if err != nil {
		return nil, nil, err
	}
	if authServer == "" {
		authServer = "https://auth.example.com"
		logger.Warn("no --authorization-server given: the protected resource metadata names a placeholder", "authorization_server", authServer)
	}
	meta := &auth.ResourceMetadata{Resource: resource, AuthorizationServers: []string{authServer}, ResourceName: "Weft demo"}
	if err := meta.Validate(); err != nil {
		return nil, nil, fmt.Errorf("protected resource metadata: %w", err)
	}
	return st.Admission(meta), meta, nil
}

// demoEras checks serve --eras and returns the versions it serves, for
// the start-up message.
func demoEras(eras string) (string, error) {
	switch eras {
	case "both", "":
		return weft.ProtocolVersion + ", " + weft.LegacyVersion20251125 + ", " + weft.LegacyVersion20250618, nil
	case "2026":
		return weft.ProtocolVersion, nil
	case "2025":
		return weft.LegacyVersion20251125 + ", " + weft.LegacyVersion20250618, nil
	}
	return "", fmt.Errorf("--eras is both, 2026 or 2025, got %q", eras)
}
