// Package serving holds what the commands that serve MCP over HTTP share:
// the keyring of a data directory, the mux with the health probes, the
// draining shutdown and the refusal of an unauthenticated non-loopback
// address. cmd/weft and cmd/weft-demo use it.
package serving

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/seal"
)

// Shutdown stops a server without losing a request behind a load
// balancer: it reports not ready for delay while still serving (the
// balancer takes the instance out of rotation), then closes the listener,
// ends listen streams with their closing result, stops the task runner
// (cut-off steps' leases are released for the other instances) and waits
// for in-flight requests.
func Shutdown(logger *slog.Logger, srv *weft.Server, hs *http.Server, delay time.Duration) error {
	srv.Drain()
	if delay > 0 {
		logger.Info("draining: /readyz reports 503 while requests are still served", "for", delay)
		time.Sleep(delay)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	hs.RegisterOnShutdown(func() { stopped <- srv.Shutdown(sctx) })
	err := hs.Shutdown(sctx)
	if serr := <-stopped; serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("shut down")
	return nil
}

// Mux serves srv at /mcp with the liveness and readiness probes at
// /healthz and /readyz.
func Mux(srv *weft.Server) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	// Probes for load balancers and orchestrators (no Host check: probes
	// often send none).
	mux.Handle("/healthz", srv.LivenessHandler())
	mux.Handle("/readyz", srv.ReadinessHandler())
	return mux
}

// DataKeyring creates the data directory and loads the keyring (default
// <data>/keyring.json), creating a development keyring on first start. It
// returns the keyring and its path.
func DataKeyring(data, keyring string, logger *slog.Logger) (*seal.Keyring, string, error) {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, "", fmt.Errorf("create data directory: %w", err)
	}
	path := keyring
	if path == "" {
		path = filepath.Join(data, "keyring.json")
	}
	kr, created, err := LoadOrCreateKeyring(path)
	if err != nil {
		return nil, "", err
	}
	if created {
		logger.Warn("created a development keyring: keep it secret, and use a managed keyring shared by every instance in production", "path", path)
	}
	return kr, path, nil
}

// LoadOrCreateKeyring loads the keyring file, creating a fresh one (mode
// 0600) when it does not exist.
func LoadOrCreateKeyring(path string) (*seal.Keyring, bool, error) {
	kr, err := seal.LoadKeyringFile(path)
	if err == nil {
		return kr, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("load keyring: %w", err)
	}
	k, err := seal.GenerateKey("dev-" + time.Now().UTC().Format("20060102"))
	if err != nil {
		return nil, false, err
	}
	if kr, err = seal.NewKeyring(k); err != nil {
		return nil, false, err
	}
	if err := seal.WriteKeyringFile(path, kr); err != nil {
		return nil, false, fmt.Errorf("write keyring: %w", err)
	}
	return kr, true, nil
}

// AllowUnauthenticatedFlag names the flag that lets serve, gateway and
// openapi listen on a non-loopback address without authentication.
const AllowUnauthenticatedFlag = "allow-unauthenticated"

// CheckExposure refuses to listen on a non-loopback address without
// authentication (issue 25): anonymous callers on a network share what a
// proxy or NAT makes one address, and anyone who reaches the port may call
// every tool. authenticated says requests need credentials (how is named
// in howAuth, e.g. "--tokens FILE"; "" when the command has none);
// allowed is --allow-unauthenticated. A host that is not a loopback IP
// address or "localhost" ("", 0.0.0.0, ::, a name) is not loopback.
func CheckExposure(addr string, authenticated, allowed bool, howAuth string) error {
	if authenticated || allowed {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	how := "put it behind an authenticating proxy"
	if howAuth != "" {
		how = "configure authentication (" + howAuth + ")"
	}
	return fmt.Errorf("--addr %q is not a loopback address and requests are not authenticated: anyone who reaches it may call every tool, as one anonymous caller per address; %s, or pass --%s to serve it anyway",
		addr, how, AllowUnauthenticatedFlag)
}
