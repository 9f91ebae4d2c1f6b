package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/weftmcp/weft/admin"
	"github.com/weftmcp/weft/seal"
)

// startAdmin builds the admin listener (loopback only, token-protected).
// extra handlers (GET /metrics) are mounted behind the same checks.
func startAdmin(addr, tokenFile string, mgr *seal.Manager, keyringPath string, logger *slog.Logger, extra map[string]http.Handler) (*http.Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--admin %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--admin %q: the admin listener binds to loopback addresses only", addr)
	}
	if tokenFile == "" {
		return nil, errors.New("--admin needs --admin-token-file")
	}
	token, err := loadOrCreateToken(tokenFile)
	if err != nil {
		return nil, err
	}
	h, err := admin.Handler(admin.Config{Manager: mgr, KeyringPath: keyringPath, Token: token, Logger: logger, Extra: extra})
	if err != nil {
		return nil, err
	}
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10}, nil
}

func loadOrCreateToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if t := strings.TrimSpace(string(b)); len(t) >= admin.MinTokenLength {
			return t, nil
		}
		return "", fmt.Errorf("admin token file %s holds fewer than %d characters", path, admin.MinTokenLength)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read admin token: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	t := base64.RawURLEncoding.EncodeToString(raw[:])
	if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write admin token: %w", err)
	}
	return t, nil
}

// adminCmd: weft admin keys status|stage|activate|rotate|remove.
func adminCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) < 2 || args[0] != "keys" {
		return errors.New(usage)
	}
	op := args[1]
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("admin", "", "admin listener URL, e.g. http://127.0.0.1:8081")
	tokenFile := fs.String("token-file", "", "file holding the admin token")
	id := fs.String("id", "", "key id")
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	if *url == "" || *tokenFile == "" {
		return errors.New("--admin and --token-file are required")
	}
	tb, err := os.ReadFile(*tokenFile)
	if err != nil {
		return fmt.Errorf("read admin token: %w", err)
	}
	c := &admin.Client{URL: *url, Token: strings.TrimSpace(string(tb))}
	var st admin.Status
	switch op {
	case "status":
		st, err = c.Status(ctx)
	case "stage", "activate", "rotate", "remove":
		if *id == "" {
			return fmt.Errorf("%s needs --id", op)
		}
		switch op {
		case "stage":
			st, err = c.Stage(ctx, *id)
		case "activate":
			st, err = c.Activate(ctx, *id)
		case "rotate":
			st, err = c.Rotate(ctx, *id)
		case "remove":
			st, err = c.Remove(ctx, *id)
		}
	default:
		return fmt.Errorf("unknown admin keys command %q", op)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "active       %s\nverification %s\nfingerprint  %s\n", st.ActiveID, strings.Join(st.VerificationIDs, ","), st.Fingerprint)
	if st.Removed != nil {
		fmt.Fprintf(stdout, "removed      %t\n", *st.Removed)
	}
	return nil
}
