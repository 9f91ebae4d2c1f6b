package wefttest

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/weftmcp/weft/client"
)

// Fixed values of the in-memory transport.
const (
	// DefaultEndpoint is the path requests are posted to unless
	// Options.Endpoint says otherwise.
	DefaultEndpoint = "/mcp"
	// Host is the Host of every request: a loopback address, which the
	// server's DNS-rebinding guard accepts without configuration.
	Host = "127.0.0.1"
	// RemoteAddr is the remote address every request appears to come from.
	RemoteAddr = "127.0.0.1:49152"
)

// ClientOptions and Handlers are the client package's, named here so that
// a test configures its client without importing the client package.
type (
	ClientOptions = client.Options
	Handlers      = client.Handlers
)

// Options configure a client made by [NewClient]. The zero value is
// usable.
type Options struct {
	// Client configures the client itself: its capabilities (derived from
	// Handlers when not set), the Handlers answering the server's input
	// requests (see [AcceptForm], [Decline], [SampleText], [RootsOf]),
	// TasksEnabled, the protocol version, and the callbacks receiving
	// progress, logs and other notifications.
	Client client.Options
	// Endpoint is the path requests are posted to. Default
	// [DefaultEndpoint]. The endpoint is part of what framework-sealed
	// request state is bound to.
	Endpoint string
	// Header is sent with every request (Authorization, a tenant header);
	// it replaces the client's own values of the same names.
	Header http.Header
	// OnProgrammingError receives each programming error the server finds
	// while serving the client (a *weft.ProgrammingError: an input request
	// the tool does not declare, framework state without a StateMode,
	// structured content outside the output schema, ...). It must be safe
	// for concurrent use. When nil, each one fails the test with its
	// message, which names the fix, even where the test expects the error
	// response the client gets (the sanitized -32603).
	OnProgrammingError func(error)
}

// NewClient returns the client package's *client.Client talking to h in
// memory, through [RoundTripper]: the whole Streamable HTTP pipeline of h
// runs (Host and Origin guards, header validation, admission, capability
// checks, request-state sealing, SSE streaming), but no socket is opened.
// h is usually a *weft.Server, or any handler in front of one (a mux,
// authentication middleware). opts may be nil.
//
// The client is the one applications use against remote servers: it runs
// the multi-round loop through its Handlers, follows durable tasks when
// TasksEnabled (answering a task's input requests with tasks/update),
// and returns the server's JSON-RPC errors as *client.RPCError. Unless
// Options.Client.ProtocolVersion pins a version it first probes the server
// with server/discover, as it does any server. It is closed when the test
// ends.
func NewClient(t testing.TB, h http.Handler, opts *Options) *client.Client {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	report := o.OnProgrammingError
	if report == nil {
		report = func(err error) {
			t.Helper()
			t.Errorf("wefttest: %v", err)
		}
	}
	hc := &http.Client{Transport: RoundTripper(h, report)}
	topts := &client.HTTPOptions{Client: hc}
	if len(o.Header) > 0 {
		hdr := o.Header.Clone()
		topts.Header = func(_ context.Context, h http.Header) error {
			for k, vs := range hdr {
				h.Del(k)
				for _, v := range vs {
					h.Add(k, v)
				}
			}
			return nil
		}
	}
	url := fmt.Sprintf("http://%s%s", Host, o.Endpoint)
	c := client.New(client.NewHTTPTransport(url, topts), &o.Client)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
