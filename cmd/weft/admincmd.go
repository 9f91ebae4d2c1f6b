package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/weftmcp/weft/admin"
	"github.com/weftmcp/weft/seal"
)

// serveAdmin starts the admin listener of `weft serve` and `weft gateway`
// with the extra handlers (GET /metrics, the gateway's GET /admin/status),
// reporting its end on errc, and prints where it listens; the returned
// function closes it.
func serveAdmin(addr, tokenFile string, mgr *seal.Manager, keyringPath string, logger *slog.Logger, extra map[string]http.Handler, errc chan<- error, stdout io.Writer) (func() error, error) {
	as, err := startAdmin(addr, tokenFile, mgr, keyringPath, logger, extra)
	if err != nil {
		return nil, err
	}
	go func() { errc <- as.ListenAndServe() }()
	fmt.Fprintf(stdout, "  admin:     http://%s/admin/keys\n  metrics:   http://%s/metrics\n", addr, addr)
	return as.Close, nil
}

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

var adminKeysDocs = []helpDoc{
	{name: "admin keys status", synopsis: []string{"weft admin keys status --admin URL --token-file FILE"},
		about: "Prints the running server's active key, verification keys and keyring fingerprint."},
	{name: "admin keys stage", synopsis: []string{"weft admin keys stage --id ID --admin URL --token-file FILE"},
		about: "Stages key ID, read from the server's own keyring file, as a verification key."},
	{name: "admin keys activate", synopsis: []string{"weft admin keys activate --id ID --admin URL --token-file FILE"},
		about: "Makes staged key ID the active key; the previous one stays for verification."},
	{name: "admin keys rotate", synopsis: []string{"weft admin keys rotate --id ID --admin URL --token-file FILE"},
		about: "Stages and activates key ID in one step (retry-safe; on a fleet, stage everywhere first)."},
	{name: "admin keys remove", synopsis: []string{"weft admin keys remove --id ID --admin URL --token-file FILE"},
		about: "Removes verification key ID (refused while a seal holds it, and for the active key)."},
}

// adminCmd: weft admin keys status|stage|activate|rotate|remove.
func adminCmd(ctx context.Context, args []string, stdout io.Writer) error {
	switch {
	case len(args) > 0 && isHelp(args[0]), len(args) > 1 && args[0] == "keys" && isHelp(args[1]):
		writeGroupHelp(stdout, "admin keys", adminKeysDocs)
		return errHelp
	case len(args) < 2 || args[0] != "keys":
		return errors.New(usage)
	}
	op := args[1]
	i := slices.IndexFunc(adminKeysDocs, func(d helpDoc) bool { return d.name == "admin keys "+op })
	if i < 0 {
		return fmt.Errorf("unknown admin keys command %q\n%s", op, usage)
	}
	doc := adminKeysDocs[i]
	fs := newFlags(doc.name)
	url := fs.String("admin", "", "admin listener `URL`, e.g. http://127.0.0.1:8081")
	tokenFile := fs.String("token-file", "", "`FILE` holding the admin token")
	id := new(string)
	if op != "status" {
		id = fs.String("id", "", "key `ID`")
	}
	if pos, err := parseFlags(fs, doc, args[2:], stdout); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageError(doc, fmt.Errorf("unexpected arguments %q", pos))
	}
	if *url == "" || *tokenFile == "" {
		return usageError(doc, errors.New("--admin and --token-file are required"))
	}
	if op != "status" && *id == "" {
		return usageError(doc, fmt.Errorf("%s needs --id", op))
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
	case "stage":
		st, err = c.Stage(ctx, *id)
	case "activate":
		st, err = c.Activate(ctx, *id)
	case "rotate":
		st, err = c.Rotate(ctx, *id)
	case "remove":
		st, err = c.Remove(ctx, *id)
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
