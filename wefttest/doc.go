// Package wefttest tests Weft servers without a network, as net/http/httptest
// does for net/http handlers.
//
// A [Client] talks to a *weft.Server (or any http.Handler in front of one)
// in memory: each request goes through the handler's ServeHTTP with an
// in-process http.ResponseWriter, so the whole Streamable HTTP pipeline runs
// (Host and Origin guards, header validation, admission, capability checks,
// request-state sealing, SSE streaming) but no socket is opened. The client
// fills in what a conforming MCP 2026-07-28 client sends on every request:
//
//   - params._meta with io.modelcontextprotocol/protocolVersion,
//     io.modelcontextprotocol/clientCapabilities and
//     io.modelcontextprotocol/clientInfo (and progressToken / logLevel when
//     asked to);
//   - the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers, and the
//     Mcp-Param-{Name} headers of tool arguments whose input-schema property
//     carries "x-mcp-header". Values that are not plain visible ASCII are sent
//     in the Base64 sentinel form "=?base64?...?=";
//   - a fresh integer JSON-RPC id per request.
//
// Handlers are tested through the client: a *weft.Request cannot be built
// outside package weft (its input responses and verified state are
// unexported), and going through the real pipeline is what makes a test
// meaningful anyway. A typical test:
//
//	srv, err := weft.NewServer(weft.Implementation{Name: "demo"}, nil)
//	if err != nil {
//		t.Fatal(err)
//	}
//	_ = weft.AddTool(srv, weft.Tool{Name: "add", Description: "Adds."}, add)
//	c := wefttest.NewWireClient(srv, wefttest.WithTest(t))
//	res, err := c.CallTool(ctx, "add", map[string]int{"a": 2, "b": 3})
//	sum, err := wefttest.StructuredAs[addOutput](res)
//	// res.Text(), res.IsError ...
//
// Programming errors reach the test: when the server finds a mistake in the
// application's code that it can only see while serving a request (an input
// request the tool does not declare, framework state without a StateMode,
// structured content outside the output schema, ...), the client still gets
// the sanitized -32603 a real client would, but the call's error wraps
// [ErrProgramming] and the *weft.ProgrammingError, whose message names the
// fix, and [WithTest] fails the test with it.
//
// Multi round-trip requests (input_required results) are driven by hand with
// [Client.Retry] or automatically with [Client.CallToolWithInput] and a
// [Responder] such as [AcceptForm], [Decline], [SampleText] or [RootsOf].
// The client declares no optional capabilities unless told to: use
// [WithCapabilities] (for example with [Capabilities]) to declare
// elicitation, sampling or roots.
//
// Besides decoding, the client checks what it receives: a response that
// breaks the protocol (a missing or wrong id, a JSON-RPC request on the SSE
// stream, a result without resultType, an input request the client did not
// declare support for, ...) is reported as an error wrapping [ErrProtocol].
// JSON-RPC errors are not Go errors of [Client.Call] (they are in
// [Response.Error]); the typed methods return them as *[RPCError].
//
// A Client is cheap: make one per configuration (capabilities, headers,
// endpoint) rather than reconfiguring one. It is safe for concurrent use.
//
// The client package's Go client works without a network too: give its
// HTTP transport an *http.Client whose Transport is [RoundTripper]. It
// follows durable tasks (answering a task's input requests through
// tasks/update) and runs the multi-round loop through its handlers, as it
// does against a remote server.
package wefttest
