package client

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/partners"
)

// partnerServer is a server Weft did not write, reached over one
// transport.
type partnerServer struct {
	name    string
	legacy  bool // speaks only the 2025 era
	tool    string
	args    map[string]any
	want    string // in the tool's text
	connect func(t *testing.T) Transport
}

func partnerServers() []partnerServer {
	stdio := func(argv func(t *testing.T) []string) func(t *testing.T) Transport {
		return func(t *testing.T) Transport {
			a := argv(t)
			tr, err := CommandTransport(exec.Command(a[0], a[1:]...), nil)
			if err != nil {
				t.Fatal(err)
			}
			return tr
		}
	}
	httpAt := func(url func(t *testing.T) string) func(t *testing.T) Transport {
		return func(t *testing.T) Transport { return NewHTTPTransport(url(t), nil) }
	}
	goServer := func(name string) func(t *testing.T) []string {
		return func(t *testing.T) []string { return []string{partners.GoServer(t, name)} }
	}
	echo := map[string]any{"message": "hi"}
	return []partnerServer{
		{name: "server-everything/stdio", legacy: true, tool: "echo", args: echo, want: "hi",
			connect: stdio(func(t *testing.T) []string { return partners.Everything(t) })},
		{name: "server-everything/http", legacy: true, tool: "echo", args: echo, want: "hi",
			connect: httpAt(func(t *testing.T) string { return partners.EverythingHTTP(t) })},
		{name: "go-sdk/stdio", tool: "echo", args: echo, want: "echo: hi",
			connect: stdio(goServer("gosdkserver"))},
		// The Go SDK's stateful HTTP handler lists only 2025 revisions
		// in its server/discover answer; its form elicitation then works.
		{name: "go-sdk/http", legacy: true, tool: "confirm", args: map[string]any{"topic": "launch"}, want: "confirmed by ada",
			connect: httpAt(func(t *testing.T) string { return partners.GoServerHTTP(t, "gosdkserver") })},
		{name: "ts-sdk-v2/stdio", tool: "echo", args: echo, want: "echo: hi",
			connect: stdio(func(t *testing.T) []string { return partners.TSServer(t) })},
		{name: "ts-sdk-v2/http", tool: "echo", args: echo, want: "echo: hi",
			connect: httpAt(func(t *testing.T) string { return partners.TSServerHTTP(t) })},
		{name: "mcp-go/stdio", tool: "echo", args: echo, want: "echo: hi",
			connect: stdio(goServer("mcpgoserver"))},
		{name: "mcp-go/http", tool: "echo", args: echo, want: "echo: hi",
			connect: httpAt(func(t *testing.T) string { return partners.GoServerHTTP(t, "mcpgoserver") })},
	}
}

// TestEraDetectionAgainstPartners: an unpinned client probes with
// server/discover, as the 2026-07-28 stdio and Streamable HTTP pages say,
// and reaches a server speaking only the 2025 era with initialize (before,
// it sent its requests without initialize on stdio, and every request
// failed "Server not initialized" over HTTP), and a dual-era server in
// 2026-07-28. Pinned to 2026-07-28, a 2025-only server fails with
// ErrLegacyServer, naming the era it speaks.
func TestEraDetectionAgainstPartners(t *testing.T) {
	for _, p := range partnerServers() {
		t.Run(p.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			c := New(p.connect(t), &Options{Handlers: Handlers{Elicit: func(ctx context.Context, _ exactjson.Value) (exactjson.Value, error) {
				return exactjson.Object(exactjson.Field("action", exactjson.String("accept")),
					exactjson.Field("content", exactjson.Object(exactjson.Field("name", exactjson.String("ada"))))), nil
			}}})

			defer c.Close()
			tools, err := c.ListTools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(tools, func(x Tool) bool { return x.Name == p.tool }) {
				t.Fatalf("tools/list has no %s: %v", p.tool, toolNames(tools))
			}
			res, err := c.CallTool(ctx, p.tool, p.args)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Text(), p.want) {
				t.Errorf("%s: %q, want %q in it", p.tool, res.Text(), p.want)
			}
			if v := c.ProtocolVersion(); isLegacy(v) != p.legacy {
				t.Errorf("spoke %s to a server that speaks only the 2025 era: %v", v, p.legacy)
			}
			d, err := c.Discover(ctx)
			if err != nil || len(d.SupportedVersions) == 0 {
				t.Fatalf("Discover: %+v %v", d, err)
			}

			if !p.legacy {
				// A dual-era server speaks 2025 to a client pinned to it.
				old := New(p.connect(t), &Options{ProtocolVersion: "2025-11-25"})
				defer old.Close()
				res, err := old.CallTool(ctx, p.tool, p.args)
				if err != nil || !strings.Contains(res.Text(), p.want) || old.ProtocolVersion() != "2025-11-25" {
					t.Fatalf("pinned to 2025-11-25: %v %v (spoke %s)", res, err, old.ProtocolVersion())
				}
				return
			}
			pinned := New(p.connect(t), &Options{ProtocolVersion: ProtocolVersion})
			defer pinned.Close()
			_, err = pinned.ListTools(ctx)
			if !errors.Is(err, ErrLegacyServer) {
				t.Fatalf("pinned to 2026-07-28: %v, want ErrLegacyServer", err)
			}
			var rerr *RPCError
			var herr *HTTPError
			if !errors.As(err, &rerr) && !errors.As(err, &herr) && !strings.Contains(err.Error(), "lists only [2025-11-25") {
				t.Errorf("the server's own answer is not kept: %#v", err)
			}
		})
	}
}

func toolNames(tools []Tool) []string {
	var out []string
	for _, x := range tools {
		out = append(out, x.Name)
	}
	return out
}
