// Package client is an MCP client for 2026-07-28 and the 2025 era:
// stateless requests carrying their own _meta (protocol version, client
// capabilities, client info) or, for a 2025-era server, initialize, an
// Mcp-Session-Id session and the server's own requests answered through
// the same handlers. An unpinned client detects the era before its first
// request as the 2026-07-28 transport pages say: it probes with
// server/discover (bounded by Options.ProbeTimeout) and falls back to
// initialize on any answer that is not a recognised modern one, whatever
// its error code; a client pinned to a version fails with ErrLegacyServer
// or ErrModernServer when the server speaks only the other era;
// the Streamable HTTP and stdio transports, an automatic multi round-trip
// (MRTR) loop that answers the server's input requests (elicitation,
// sampling, roots) through registered handlers, and the tasks extension
// (io.modelcontextprotocol/tasks): following a task to its result by
// polling tasks/get, answering its input requests with tasks/update, and
// cancelling it with tasks/cancel.
//
//	c := client.New(client.NewHTTPTransport("http://127.0.0.1:3917/mcp", nil), &client.Options{
//		Handlers: client.Handlers{Elicit: askUser},
//	})
//	res, err := c.CallTool(ctx, "get_weather", map[string]any{"city": "Paris"})
//
// The stdio transport is strict about framing (a line that is not a
// JSON-RPC message breaks it; StdioOptions.Noise opts in to reporting and
// skipping the banners and log lines some servers print on stdout) and can
// answer the server-to-client requests a 2025-era server sends during a
// request (Request.OnServerRequest); the gateway's stdio upstreams are
// built on it.
//
// Servers that require OAuth are reached through the HTTP client given to
// NewHTTPTransport: package client/oauth is an http.RoundTripper running
// the MCP authorization flow.
//
// Errors sent by the server are *RPCError; local failures are plain
// errors (ErrClosed, ErrProtocol, ErrTooManyRounds, ErrLegacyServer,
// ErrModernServer, *MissingHandlerError, *HTTPError, *TaskError).
package client
