// Package wefttest tests Weft servers without a network, as net/http/httptest
// does for net/http handlers.
//
// [NewClient] returns the client package's *client.Client, the client an
// application uses against remote servers, talking to a *weft.Server (or
// any http.Handler in front of one) in memory through [RoundTripper]: each
// request goes through the handler's ServeHTTP, so the whole Streamable
// HTTP pipeline runs (Host and Origin guards, header validation, admission,
// capability checks, request-state sealing, SSE streaming) but no socket is
// opened. A typical test:
//
//	func TestOrder(t *testing.T) {
//		srv := newServer(t) // what main calls
//		c := wefttest.NewClient(t, srv, &wefttest.Options{Client: wefttest.ClientOptions{
//			Handlers: wefttest.Handlers{Elicit: wefttest.AcceptForm(confirm{Confirm: true})},
//		}})
//		res, err := c.CallTool(t.Context(), "order", orderArgs{Item: "tea"})
//		if err != nil || res.Text() != "Ordered tea." {
//			t.Fatalf("order = %v, %v", res, err)
//		}
//	}
//
// The client runs the multi-round loop itself: an input_required result is
// answered by its Handlers ([AcceptForm], [AcceptURL], [Decline], [Cancel],
// [SampleText], [RootsOf], or a function of the test's own) and retried.
// With client.Options.TasksEnabled it follows a durable task to its result
// and answers the task's input requests through tasks/update with the same
// handlers. A client declares the capabilities its handlers answer;
// client.Options.Capabilities (see [weft.ClientCapabilities]) declares others. To drive
// rounds by hand (a tampered, stale or missing answer), send each one with
// Client.Call and the inputResponses and requestState of the round before.
//
// Programming errors fail the test: when the server finds a mistake in the
// application's code that it can only see while serving a request (an input
// request the tool does not declare, framework state without a StateMode,
// structured content outside the output schema, a handler that panics), the
// client gets the sanitized -32603 a real client would, and the test fails
// with the *weft.ProgrammingError, whose message names the fix. A test that
// expects one sets Options.OnProgrammingError.
//
// Handlers are tested through a client: a *weft.Request cannot be built
// outside package weft (its input responses and verified state are
// unexported), and going through the real pipeline is what makes a test
// meaningful anyway.
package wefttest
