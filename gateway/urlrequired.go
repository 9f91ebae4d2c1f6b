package gateway

import (
	"fmt"
	"strconv"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// A 2025-11-25 upstream may refuse a call with -32042 (URL elicitation
// required), listing URL interactions the user must complete out of band;
// its client was to retry after notifications/elicitation/complete.
// 2026-07-28 has neither: the server asks with URL input requests of an
// input_required result, and the client's retry says the interaction is
// over. So the gateway answers input_required with those requests (their
// elicitationId removed) and, on the retry, calls the upstream again.

// codeURLElicitationRequired is the 2025-11-25 error URLElicitationRequired.
const codeURLElicitationRequired = -32042

// maxURLElicitations bounds the interactions of one -32042 translated.
const maxURLElicitations = 16

// urlRetryState marks the retry of a translated -32042 in request state.
const urlRetryState = "urlRetry"

// urlRequired translates e when it is a -32042 the client can act on: URL
// interactions the upstream's inputs allow and the client supports.
func (u *upstream) urlRequired(req *weft.Request, e *client.RPCError) (*weft.InputRequired, bool) {
	if e.Code != codeURLElicitationRequired {
		return nil, false
	}
	els, _ := e.Data.Get("elicitations")
	if els.Kind() != exactjson.KindArray || els.Len() == 0 || els.Len() > maxURLElicitations {
		return nil, false
	}
	reqs := make([]exactjson.Member, 0, els.Len())
	for i, p := range els.Elements() {
		if p.Kind() != exactjson.KindObject || !isStr(mustGet(p, "mode"), "url") ||
			!allowed(u.cfg.Inputs, "elicitation/create", p) || !clientSupports(req, "elicitation/create", p) ||
			u.checkURL("elicitation/create", p) != nil {
			return nil, false
		}
		reqs = append(reqs, exactjson.Field("url-"+strconv.Itoa(i+1), exactjson.Object(
			exactjson.Field("method", exactjson.String("elicitation/create")), exactjson.Field("params", p))))
	}
	ir, err := askInputs(exactjson.Object(reqs...), u.urlPolicy, legacyClient(req))
	if err != nil {
		u.g.log.Warn("gateway: an upstream's URL elicitation required error cannot be relayed as input requests", "upstream", u.cfg.Name, "err", err)
		return nil, false
	}
	return withParkedState(ir, exactjson.Object(exactjson.Field(urlRetryState, exactjson.Bool(true)))), true
}

// urlDeclined is the error of a translated -32042's retry whose client
// declined or cancelled one of the interactions (nil when all were
// accepted): the upstream is not called again.
func (u *upstream) urlDeclined(req *weft.Request) error {
	for k, v := range inputResponses(req, u.ownInputKey()).All() {
		if a := str(v, "action"); a != "accept" {
			return weft.NewError(CodeUpstreamError, fmt.Sprintf("Upstream %q: the URL interaction it requires was not completed (%s: %s)", u.cfg.Name, k, a)).
				WithData(exactjson.Object(exactjson.Field("upstream", exactjson.String(u.cfg.Name)), exactjson.Field("code", exactjson.Int(codeURLElicitationRequired))))
		}
	}
	return nil
}

func mustGet(v exactjson.Value, name string) exactjson.Value {
	m, _ := v.Get(name)
	return m
}
