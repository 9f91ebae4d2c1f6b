package gateway

// Every use of the root package's input-request API (declarations,
// InputRequest, InputRequired, InputResponses, request state) is in this
// file, so that a rename of that API is followed here and nowhere else.

import (
	"fmt"
	"slices"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
)

// proxyInputs declares the input kinds of a proxied operation (names as in
// UpstreamConfig.Inputs; none: all of them) as conditional: the operation
// relays whatever its upstream asks, and the framework checks the client's
// capability when a request is actually emitted.
func proxyInputs(kinds []string) []weft.Input {
	if len(kinds) == 0 {
		kinds = InputKinds()
	}
	var out []weft.Input
	for _, k := range kinds {
		switch k {
		case "form":
			out = append(out, weft.Form(weft.ConditionalCapability))
		case "url":
			out = append(out, weft.URL(weft.ConditionalCapability))
		case "sampling":
			out = append(out, weft.Sampling(weft.ConditionalCapability), weft.Sampling(weft.ConditionalCapability).WithTools())
		case "roots":
			out = append(out, weft.Roots(weft.ConditionalCapability))
		}
	}
	return out
}

// inputFor is the declaration of an upstream's server-to-client request.
func inputFor(method string, params exactjson.Value) (weft.Input, bool) {
	switch method {
	case "elicitation/create":
		if mode, _ := params.Get("mode"); isStr(mode, "url") {
			return weft.URL(weft.ConditionalCapability), true
		}
		return weft.Form(weft.ConditionalCapability), true
	case "sampling/createMessage":
		if params.Has("tools") || params.Has("toolChoice") {
			return weft.Sampling(weft.ConditionalCapability).WithTools(), true
		}
		return weft.Sampling(weft.ConditionalCapability), true
	case "roots/list":
		return weft.Roots(weft.ConditionalCapability), true
	}
	return nil, false
}

// legacyStateMode protects the parked-call reference of a 2025-era upstream
// (sealed and bound to the partition); modernStateMode carries a 2026-07-28
// upstream's own requestState untouched.
const (
	legacyStateMode = weft.StateFramework
	modernStateMode = weft.StateApplication
)

// inputRequest builds the embedded request for an upstream's
// server-to-client request (elicitation/create, sampling/createMessage,
// roots/list). keepID keeps a URL elicitation's elicitationId, for a
// client of the 2025 era (whose revision has it, and is told of the
// interaction's completion by it); 2026-07-28 removed it.
func inputRequest(method string, params exactjson.Value, policy func(rawURL string) (elicit.URLPolicy, bool), keepID bool) (weft.InputRequest, error) {
	in, ok := inputFor(method, params)
	if !ok {
		return weft.InputRequest{}, fmt.Errorf("the gateway cannot relay %s to its clients", method)
	}
	switch method {
	case "elicitation/create":
		if mode, _ := params.Get("mode"); isStr(mode, "url") && !keepID {
			params = params.Without("elicitationId") // the client's revision needs none
		}
	case "roots/list":
		params = exactjson.Object()
	}
	r := weft.Proxy{}.Relay(in, params)
	if policy != nil && inputKind(method, params) == "url" {
		if p, ok := policy(str(params, "url")); ok {
			r = weft.Proxy{}.WithURLPolicy(r, p)
		}
	}
	return r, r.Err()
}

// checkRelayed checks an upstream's request the way srv checks the input
// requests it emits (srv.CheckInputRequest): for a request the gateway
// hands its client outside an input_required result.
func checkRelayed(srv *weft.Server, method string, params exactjson.Value, policy func(rawURL string) (elicit.URLPolicy, bool)) error {
	r, err := inputRequest(method, params, policy, false)
	if err != nil || srv == nil {
		return err
	}
	return srv.Proxy().CheckInputRequest(r)
}

// inputKind names the kind of an upstream's input request as in
// UpstreamConfig.Inputs ("" for a method that is none).
func inputKind(method string, params exactjson.Value) string {
	switch method {
	case "elicitation/create":
		if mode, _ := params.Get("mode"); isStr(mode, "url") {
			return "url"
		}
		return "form"
	case "sampling/createMessage":
		return "sampling"
	case "roots/list":
		return "roots"
	}
	return ""
}

// allowed reports whether kinds (empty: all) admits the request.
func allowed(kinds []string, method string, params exactjson.Value) bool {
	k := inputKind(method, params)
	return k != "" && (len(kinds) == 0 || slices.Contains(kinds, k))
}

// clientSupports reports whether req's client declared the capability an
// upstream's server-to-client request needs.
func clientSupports(req *weft.Request, method string, params exactjson.Value) bool {
	in, ok := inputFor(method, params)
	return ok && req.ClientSupports(in)
}

// askInputs builds an input_required result from keyed embedded requests
// ({key: {method, params}}) with state set by setState; keepIDs as in
// inputRequest.
func askInputs(reqs exactjson.Value, policy func(rawURL string) (elicit.URLPolicy, bool), keepIDs bool) (*weft.InputRequired, error) {
	ir := new(weft.InputRequired)
	for key, r := range reqs.All() {
		params, _ := r.Get("params")
		if params.IsNull() {
			params = exactjson.Object()
		}
		ir2, err := inputRequest(str(r, "method"), params, policy, keepIDs)
		if err != nil {
			return nil, fmt.Errorf("input request %q: %w", key, err)
		}
		ir.Ask(key, ir2)
	}
	return ir, nil
}

// withParkedState attaches the sealed reference to a parked call.
func withParkedState(ir *weft.InputRequired, st exactjson.Value) *weft.InputRequired {
	return ir.WithFrameworkState(st)
}

// withUpstreamState attaches a 2026-07-28 upstream's requestState.
func withUpstreamState(ir *weft.InputRequired, st string) *weft.InputRequired {
	return ir.WithApplicationState(st)
}

// releaseOutput lets progress and logs stream to a client lacking a
// declared input kind's capability (the gateway relays only what it
// supports).
func releaseOutput(req *weft.Request) { weft.Proxy{}.ReleaseOutput(req) }

// parkedState returns the parked-call reference of a retry, if any.
func parkedState(req *weft.Request) (exactjson.Value, bool) {
	st, ok, err := weft.FrameworkState[exactjson.Value](req)
	return st, ok && err == nil
}

// upstreamState returns the upstream requestState of a retry, if any.
func upstreamState(req *weft.Request) (string, bool) { return req.ApplicationState() }

// inputResponses returns the retry's inputResponses as a JSON object (an
// empty object when there are none), without own: the key of the
// gateway's own request (a per-user upstream's authorization, peruser.go;
// "" for none), whose answer goes to no upstream.
func inputResponses(req *weft.Request, own string) exactjson.Value {
	var m []exactjson.Member
	for k, v := range req.InputResponses().All() {
		if own != "" && k == own {
			continue
		}
		m = append(m, exactjson.Field(k, v))
	}
	return exactjson.Object(m...)
}

// authorizeInput is the gateway's own URL request sending the user to its
// authorization start page (peruser.go), checked against policy.
func authorizeInput(message, rawURL string, policy elicit.URLPolicy) (*weft.InputRequired, error) {
	var p weft.Proxy // building values needs no server
	r := p.WithURLPolicy(p.Relay(weft.URL(weft.ConditionalCapability), exactjson.Object(
		exactjson.Field("mode", exactjson.String("url")),
		exactjson.Field("message", exactjson.String(message)),
		exactjson.Field("url", exactjson.String(rawURL)))), policy)
	if err := r.Err(); err != nil {
		return nil, err
	}
	return weft.AskInput(authorizeKey, r), nil
}

// authorizeAnswer reads the answer to the gateway's authorization request
// on a retry: present, and its action.
func authorizeAnswer(req *weft.Request) (action string, present bool) {
	v, ok := req.InputResponses().Get(authorizeKey)
	if !ok {
		return "", false
	}
	return str(v, "action"), true
}

// legacyClient reports whether req's client speaks a revision of the 2025
// era (through the server's bridge).
func legacyClient(req *weft.Request) bool {
	return req.ProtocolVersion != "" && req.ProtocolVersion < "2026"
}
