// Package client is an MCP client for 2026-07-28 and the 2025 era:
// stateless requests carrying their own _meta (protocol version, client
// capabilities, client info) or, for a 2025-11-25 server (a pinned
// Options.ProtocolVersion, or an unpinned client told -32022 that only
// the 2025 era is served), initialize, an Mcp-Session-Id session and the
// server's own requests answered through the same handlers;
// the Streamable HTTP and stdio transports, an automatic multi round-trip
// (MRTR) loop that answers the server's input requests (elicitation,
// sampling, roots) through registered handlers, and the tasks extension
// (io.modelcontextprotocol/tasks): following a task to its result by
// polling tasks/get, answering its input requests with tasks/update, and
// cancelling it with tasks/cancel.
//
//	c := client.New(client.NewHTTPTransport("http://127.0.0.1:3917/mcp", nil), client.Options{
//		Handlers: client.Handlers{Elicit: askUser},
//	})
//	res, err := c.CallTool(ctx, "get_weather", map[string]any{"city": "Paris"})
//
// The stdio transport is strict about framing (a line that is not a
// JSON-RPC message breaks it; WithNoiseHandler opts in to reporting and
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
// errors (ErrClosed, ErrProtocol, ErrTooManyRounds, *MissingHandlerError,
// *HTTPError, *TaskError).
package client
