package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftmcp/weft/client/oauth"
)

var logoutDoc = helpDoc{name: "logout", synopsis: []string{"weft logout URL", "weft logout --all"},
	about: "Forgets the tokens `weft call --login` cached for the MCP server at URL (or for\n" +
		"every server with --all). The cache is tokens.json in weft's directory of the\n" +
		"user's configuration directory (e.g. ~/.config/weft on Linux)."}

// loginTimeout bounds the wait for the user to authorize in the browser.
const loginTimeout = 5 * time.Minute

// tokenFile is the CLI's token cache: tokens.json, mode 0600, in weft's
// directory of the user's configuration directory.
func tokenFile() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the configuration directory for the token cache: %w", err)
	}
	return filepath.Join(dir, "weft", "tokens.json"), nil
}

// loginFlags are the client identity --login uses at an authorization
// server: by default whatever it offers (a stored or dynamic
// registration), or a pre-registered client, or a client ID metadata
// document (CIMD) the user hosts.
type loginFlags struct {
	clientID     string
	clientSecret string // a file
	metadataURL  string
}

// authorizedHTTP returns the HTTP client of the CLI's MCP requests to
// serverURL. With login it authorizes in the user's browser when the
// server asks (an RFC 8252 loopback redirect; the URL is printed, and
// opened with xdg-open or open when one is installed). Without it, the
// tokens an earlier --login cached for the server are presented (and
// refreshed); when there are none, requests go out plain, so a 401 or 403
// is reported as what it is and no authorization server is contacted. The
// returned func releases the loopback listener.
func authorizedHTTP(ctx context.Context, serverURL string, login bool, lf loginFlags, stderr io.Writer) (*http.Client, func(), error) {
	path, err := tokenFile()
	if err != nil {
		return nil, nil, err
	}
	store := oauth.NewFileStore(path)
	cfg := oauth.Config{
		ClientName:        "weft CLI",
		OfflineAccess:     true,
		Store:             store,
		ClientID:          lf.clientID,
		ClientMetadataURL: lf.metadataURL,
	}
	if lf.clientSecret != "" {
		b, err := os.ReadFile(lf.clientSecret)
		if err != nil {
			return nil, nil, fmt.Errorf("reading --client-secret-file: %w", err)
		}
		cfg.ClientSecret = strings.TrimSpace(string(b))
	}
	release := func() {}
	if !login {
		tok, err := store.Token(ctx, oauth.NewAuthorizer(serverURL, cfg).Server())
		if err != nil {
			return nil, nil, fmt.Errorf("reading the token cache: %w", err)
		}
		if tok == nil {
			return http.DefaultClient, release, nil
		}
	} else {
		lb, err := oauth.NewLoopback()
		if err != nil {
			return nil, nil, err
		}
		release = func() { _ = lb.Close() }
		cfg.RedirectURL = lb.RedirectURL()
		authorize := lb.Authorize(func(ctx context.Context, authURL string) error { return openBrowser(ctx, authURL, stderr) })
		cfg.Authorize = func(ctx context.Context, authURL string) (url.Values, error) {
			ctx, cancel := context.WithTimeout(ctx, loginTimeout)
			defer cancel()
			v, err := authorize(ctx, authURL)
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("no authorization arrived within %s", loginTimeout)
			}
			return v, err
		}
	}
	return &http.Client{Transport: oauth.NewTransport(nil, cfg)}, release, nil
}

// openBrowser prints the authorization URL and opens it in the system
// browser when there is one to open it with.
func openBrowser(ctx context.Context, authURL string, stderr io.Writer) error {
	fmt.Fprintf(stderr, "Authorize weft in your browser:\n  %s\n", authURL)
	for _, opener := range []string{"xdg-open", "open"} {
		p, err := exec.LookPath(opener)
		if err != nil {
			continue
		}
		cmd := exec.Command(p, authURL)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err == nil {
			go func() { _ = cmd.Wait() }()
			return nil
		}
	}
	fmt.Fprintln(stderr, "(no browser opener found: open the URL yourself; weft waits for the redirect)")
	return nil
}

// logoutCmd: weft logout URL | --all.
func logoutCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("logout")
	all := fs.Bool("all", false, "forget the tokens of every server")
	pos, err := parseFlags(fs, logoutDoc, args, stdout)
	if err != nil {
		return err
	}
	path, err := tokenFile()
	if err != nil {
		return err
	}
	switch {
	case *all && len(pos) == 0:
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		fmt.Fprintln(stdout, "Forgot the tokens of every server.")
		return nil
	case !*all && len(pos) == 1:
		store := oauth.NewFileStore(path)
		a := oauth.NewAuthorizer(pos[0], oauth.Config{Store: store})
		if err := a.Forget(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Forgot the tokens of %s.\n", a.Server())
		return nil
	}
	return usageError(logoutDoc, errors.New("logout needs the server URL, or --all"))
}
