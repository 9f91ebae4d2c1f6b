package gateway

// Every use of the root package's input-request API (declarations,
// InputRequest, InputRequired, InputResponses, request state) is in this
// file, so that a rename of that API is followed here and nowhere else.

import (
	"fmt"
	"slices"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// proxyInputs declares the input kinds of a proxied operation (names as in
// UpstreamConfig.Inputs; none: all of them) as conditional: the operation
// relays whatever its upstream asks, and the framework checks the client's
// capability when a request is actually emitted.
func proxyInputs(kinds []string) []weft.InputDeclaration {
	if len(kinds) == 0 {
		kinds = InputKinds()
	}
	var out []weft.InputDeclaration
	for _, k := range kinds {
		switch k {
		case "form":
			out = append(out, weft.FormElicitation(weft.Conditional))
		case "url":
			out = append(out, weft.URLElicitation(weft.Conditional))
		case "sampling":
			out = append(out, weft.Sampling(weft.Conditional), weft.SamplingWithTools(weft.Conditional))
		case "roots":
			out = append(out, weft.Roots(weft.Conditional))
		}
	}
	return out
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
// roots/list).
func inputRequest(method string, params exactjson.Value) (weft.InputRequest, error) {
	var d weft.InputDeclaration
	switch method {
	case "elicitation/create":
		if mode, _ := params.Get("mode"); isStr(mode, "url") {
			d = weft.URLElicitation(weft.Conditional)
			params = params.Without("elicitationId")
		} else {
			d = weft.FormElicitation(weft.Conditional)
		}
	case "sampling/createMessage":
		if params.Has("tools") || params.Has("toolChoice") {
			d = weft.SamplingWithTools(weft.Conditional)
		} else {
			d = weft.Sampling(weft.Conditional)
		}
	case "roots/list":
		d = weft.Roots(weft.Conditional)
		params = exactjson.Object()
	default:
		return weft.InputRequest{}, fmt.Errorf("the gateway cannot relay %s to its clients", method)
	}
	return weft.NewInputRequest(d, params)
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
	switch method {
	case "elicitation/create":
		if mode, _ := params.Get("mode"); isStr(mode, "url") {
			return req.ClientSupports(weft.InputURLElicitation)
		}
		return req.ClientSupports(weft.InputFormElicitation)
	case "sampling/createMessage":
		if params.Has("tools") || params.Has("toolChoice") {
			return req.ClientSupports(weft.InputSamplingWithTools)
		}
		return req.ClientSupports(weft.InputSampling)
	case "roots/list":
		return req.ClientSupports(weft.InputRoots)
	}
	return false
}

// askInputs builds an input_required result from keyed embedded requests
// ({key: {method, params}}) with state set by setState.
func askInputs(reqs exactjson.Value) (*weft.InputRequired, error) {
	ir := weft.NewInputRequired()
	for key, r := range reqs.All() {
		params, _ := r.Get("params")
		if params.IsNull() {
			params = exactjson.Object()
		}
		ir2, err := inputRequest(str(r, "method"), params)
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
func releaseOutput(req *weft.Request) { req.ReleaseOutput() }

// parkedState returns the parked-call reference of a retry, if any.
func parkedState(req *weft.Request) (exactjson.Value, bool) { return req.FrameworkState() }

// upstreamState returns the upstream requestState of a retry, if any.
func upstreamState(req *weft.Request) (string, bool) { return req.ApplicationState() }

// inputResponses returns the retry's inputResponses as a JSON object (an
// empty object when there are none).
func inputResponses(req *weft.Request) exactjson.Value {
	var m []exactjson.Member
	for k, v := range req.InputResponses().All() {
		m = append(m, exactjson.Field(k, v))
	}
	return exactjson.Object(m...)
}
