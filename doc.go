// Package weft is a Model Context Protocol (MCP) server framework: one
// [Server] serves MCP 2026-07-28 clients and, unless [Options.Legacy] says
// otherwise, 2025-11-25 clients on the same endpoint, over Streamable HTTP
// ([Server.ServeHTTP], an [net/http.Handler]) and stdio ([Server.ServeStdio]).
// The package example shows a whole server: a tool that asks the user to
// confirm with a form and then continues as a durable task. A first server
// needs this package alone; its tests need package wefttest beside it.
//
// # Registration
//
// A Server holds a catalog: tools ([Server.AddTool], or the generic [AddTool]
// with typed arguments and results and JSON Schemas inferred from Go types),
// prompts ([Server.AddPrompt]), resources and resource templates
// ([Server.AddResource], [Server.AddResourceTemplate]), and custom or
// extension methods ([Server.HandleMethod]). Registrations may change while
// the server runs; listeners are told (subscriptions/listen, or the
// list_changed notifications of 2025-11-25 sessions).
//
// A tool, prompt or resource that needs the user's answer declares the input
// requests it may make (form or URL elicitation, sampling, roots) and its
// request-state mode. Its handler then returns an [*InputRequired] with keyed
// input requests and state; the client answers and retries, and the handler
// runs again with [Request.InputResponses] and the verified state. Long work
// continues as a durable task ([RunAsTask], [Options].Tasks).
//
// # The path of a request
//
// A transport (transport_http.go, transport_stdio.go) reads one message and
// hands it to the dispatch core (dispatch.go), which parses it once, offers
// one that is not of 2026-07-28 to the era adapters (era.go; the 2025-11-25
// one is era2025_*.go), which serve the messages of their eras, validates a 2026-07-28 request in the
// specification's order (validate.go), admits it ([Options.Admission],
// admission.go) and dispatches it: the [Observer], the
// rate limiter, the concurrency gate and the request deadline, the handler
// span, panic recovery, [Options.Middleware], and the method's handler
// (catalog.go for discovery and the lists, call.go for tools/call,
// prompts/get, resources/read and completion, listen.go, tasks.go). Every
// handler returns a typed [Result], which middleware see and replace, and
// which is encoded for the client's era only at the end. Messages for the
// client (progress, logs, list changes, a 2025-11-25 session's server
// requests) go through one stream seam that each transport implements.
//
// The same dispatch runs the requests of 2025-11-25 sessions, whose
// multi-round calls the adapter's bridge turns into server-to-client
// requests, and the steps of durable tasks. docs/architecture.md tells the
// whole path.
//
// # The two eras
//
// 2026-07-28 is stateless: every request carries its protocol version and
// client capabilities in params._meta, and a server never sends requests to
// the client. 2025-11-25 clients initialize a session first
// (Mcp-Session-Id; stored in a [github.com/weftmcp/weft/sessionstore.Store]
// so that a fleet can serve it) and answer server requests. Handlers are
// written once, for 2026-07-28; Weft serves them to both.
package weft
