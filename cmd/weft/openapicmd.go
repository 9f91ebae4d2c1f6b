package main

import (
	"context"
	"errors"
	"flag"
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
	"github.com/weftmcp/weft/internal/serving"
	"github.com/weftmcp/weft/openapi"
	"github.com/weftmcp/weft/seal"
)

const openapiUsage = `usage: weft openapi --spec FILE [--upstream URL] [--addr 127.0.0.1:8080] [--data ./weft-data] [--keyring FILE]
                    [--include-tags a,b] [--exclude-tags a,b] [--include-operations x,y] [--exclude-operations x,y]
                    [--tool-search] [--listed-tags a,b] [--timeout 30s] [--max-response-bytes N]
                    [--upstream-token-file FILE] [--strict] [--stdio] [--allow-unauthenticated]
       weft serve --openapi FILE [--upstream URL] ...   (the same)`

// openapiServeRequested reports whether `weft serve` was asked to serve an
// OpenAPI document (--openapi FILE) instead of the demo.
func openapiServeRequested(args []string) bool {
	for _, a := range args {
		if a == "--openapi" || a == "-openapi" || strings.HasPrefix(a, "--openapi=") || strings.HasPrefix(a, "-openapi=") {
			return true
		}
	}
	return false
}

// openapiCmd: weft openapi --spec FILE --upstream URL (also reached as
// weft serve --openapi FILE). It serves the document's operations as tools
// on /mcp, with a keyring for the confirmation rounds of DELETE operations.
func openapiCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("openapi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, openapiUsage) }
	spec := fs.String("spec", "", "OpenAPI 3.0 or 3.1 document (JSON or YAML)")
	fs.StringVar(spec, "openapi", "", "the same as --spec")
	upstream := fs.String("upstream", "", "base URL of the API (default: the document's first server)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	data := fs.String("data", "./weft-data", "data directory (holds the development keyring)")
	keyring := fs.String("keyring", "", "keyring file (default: <data>/keyring.json, created on first start)")
	stdio := fs.Bool("stdio", false, "serve over stdin/stdout instead of HTTP")
	includeTags := fs.String("include-tags", "", "comma-separated tags: serve only operations with one of them")
	excludeTags := fs.String("exclude-tags", "", "comma-separated tags: operations with one of them are not served")
	includeOps := fs.String("include-operations", "", "comma-separated operationIds: serve only these (with --include-tags: either)")
	excludeOps := fs.String("exclude-operations", "", "comma-separated operationIds not to serve")
	toolSearch := fs.Bool("tool-search", false, "list only a search_tools tool (and --listed-tags' tools); the others are found by search and called by name")
	listedTags := fs.String("listed-tags", "", "with --tool-search: comma-separated tags whose tools stay listed")
	timeout := fs.Duration("timeout", openapi.DefaultTimeout, "bound on one upstream request")
	maxResp := fs.Int64("max-response-bytes", openapi.DefaultMaxResponseBytes, "bound on an upstream response body")
	tokenFile := fs.String("upstream-token-file", "", "file holding a bearer token sent to the upstream on every request")
	allowUnauth := addAllowUnauthenticated(fs)
	strict := fs.Bool("strict", false, "refuse the document when one operation cannot be served (default: leave it out with a warning)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // the usage is printed
		}
		return err
	}
	if *spec == "" || fs.NArg() > 0 {
		return errors.New(openapiUsage)
	}
	if *listedTags != "" && !*toolSearch {
		return errors.New("weft openapi: --listed-tags needs --tool-search")
	}
	if !*stdio {
		// The OpenAPI server does not authenticate its callers.
		if err := serving.CheckExposure(*addr, false, *allowUnauth, ""); err != nil {
			return err
		}
	}
	doc, err := os.ReadFile(*spec)
	if err != nil {
		return fmt.Errorf("read the OpenAPI document: %w", err)
	}
	opts := openapi.Options{BaseURL: *upstream, Timeout: *timeout, MaxResponseBytes: *maxResp,
		IncludeTags: splitList(*includeTags), ExcludeTags: splitList(*excludeTags),
		IncludeOperations: splitList(*includeOps), ExcludeOperations: splitList(*excludeOps), Strict: *strict,
		HTTPClient: &http.Client{Timeout: *timeout,
			// Redirects are not followed: a 3xx is reported, and credentials
			// never travel to a host the operator did not name.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if *tokenFile != "" {
		tok, err := os.ReadFile(*tokenFile)
		if err != nil {
			return fmt.Errorf("read the upstream token: %w", err)
		}
		opts.Authorize = openapi.StaticHeader("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	api, err := openapi.New(doc, &opts)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	for _, w := range api.Warnings() {
		logger.Warn("openapi: "+w.Message, "operation", w.Operation)
	}
	// The catalog's size: what tools/list sends in all, page by page.
	catalog := api.CatalogBytes()
	// Definitions too large to copy into every tool that reaches them are
	// served once, as schema resources (docs/openapi.md).
	logger.Info("openapi: catalog loaded", "tools", len(api.Tools()), "bytes", catalog,
		"schemaResources", len(api.SharedSchemas()), "warnings", len(api.Warnings()))
	kr, _, err := serving.DataKeyring(*data, *keyring, logger)
	if err != nil {
		return err
	}
	srv, err := weft.NewServer(weft.Implementation{Name: "weft-openapi", Version: "0.1.0"},
		&weft.Options{Logger: logger, Protector: seal.NewManager(kr, nil),
			ToolSearch: openapiToolSearch(*toolSearch, splitList(*listedTags), api.Operations())})
	if err != nil {
		return err
	}
	if err := api.Register(srv); err != nil {
		return err
	}
	counts := map[openapi.Kind]int{}
	confirms := 0
	for _, op := range api.Operations() {
		counts[op.Kind]++
		if op.Confirm {
			confirms++
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *stdio {
		logger.Info("weft openapi on stdio", "upstream", api.BaseURL(), "tools", counts[openapi.KindTool])
		return srv.ServeStdio(ctx, stdin, stdout)
	}
	hs := weft.NewHTTPServer(*addr, serving.Mux(srv))
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	fmt.Fprintf(stdout, "weft openapi server\n  url:       http://%s/mcp\n  upstream:  %s\n  document:  %s (OpenAPI %s)\n  tools:     %d (%d ask for confirmation)\n  resources: %d, templates: %d, excluded: %d\n",
		*addr, api.BaseURL(), *spec, api.Version(), counts[openapi.KindTool], confirms,
		counts[openapi.KindResource], counts[openapi.KindResourceTemplate], counts[openapi.KindExcluded])
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	return serving.Shutdown(logger, srv, hs, 0)
}

// openapiToolSearch is the server's tool search for --tool-search: the
// tools of the operations tagged with one of listedTags stay listed. Nil
// when off.
func openapiToolSearch(on bool, listedTags []string, ops []*openapi.Operation) *weft.ToolSearch {
	if !on {
		return nil
	}
	ts := &weft.ToolSearch{}
	for _, op := range ops {
		if op.Kind == openapi.KindTool && slices.ContainsFunc(op.Tags, func(t string) bool { return slices.Contains(listedTags, t) }) {
			ts.Listed = append(ts.Listed, op.Name)
		}
	}
	return ts
}
