// Package gateway fronts other MCP servers on a [weft.Server]: stdio
// commands and Streamable HTTP endpoints of the 2025 era (2025-11-25,
// 2025-06-18 sessions) or of 2026-07-28, and other servers of the process
// ([Mount]). Their tools, prompts, resources and resource templates are
// registered on the server — tools and prompts renamed by each upstream's
// prefix, include, exclude and rename rules, resource and template URIs
// given its resource prefix after the scheme (scheme://PREFIX/rest, mapped
// back on the way upstream) — kept current on the upstreams' list changes,
// and every operation is forwarded to its owner. The MCP Apps and skills
// extensions of 2026-07-28 upstreams are relayed with them.
//
// Era translation: a 2025-era upstream asks for input (elicitation,
// sampling, roots) with requests sent during a call; the gateway parks the
// call and answers its 2026-07-28 client input_required, and the client's
// retry, on any instance of a fleet, delivers the answers through the
// mailbox of a [sessionstore.Store] (PostgreSQL for a fleet). 2025-era
// clients are served by the server's own legacy bridge. A 2026-07-28
// upstream's tasks (the tasks extension) reach the clients under ids the
// server seals ([weft.Proxy.RelayTasks]), so that tasks/get, tasks/update
// and tasks/cancel find the upstream's task from any instance. A 2025-11-25
// upstream's task-augmented tools run as 2025 tasks that the instance
// holding the upstream's session drives (tasks/get at the upstream's
// pollInterval, tasks/result relaying the task's input requests), given to
// the clients as tasks of the extension the same way.
//
//	cfg, err := gateway.LoadConfig("gateway.yaml")
//	gw, err := gateway.New(ctx, srv, cfg, &gateway.Options{Store: parked})
//	defer gw.Close()
//
// The command `weft gateway --config FILE` serves a configuration; see
// docs/gateway.md for what is translated, what is not, and the limits.
package gateway
