package openapi_test

import (
	"strings"
	"testing"

	"github.com/weftmcp/weft/openapi"
)

// TestTransportHeadersDropped (issue 25, weakness): header parameters named
// after headers of the HTTP transport, a proxy or the host were sent as the
// caller wrote them, so a caller could set X-Forwarded-For, Connection or
// Proxy-Authorization on the upstream request. They are now dropped when
// the document is loaded, with a warning each; the API's own headers stay.
func TestTransportHeadersDropped(t *testing.T) {
	up := echoUpstream(t)
	dropped := []string{"Connection", "Proxy-Authorization", "X-Forwarded-For", "X-Forwarded-Host", "Forwarded",
		"Host", "Content-Length", "Transfer-Encoding", "TE", "Upgrade", "Keep-Alive", "X-Real-IP", "Via", "Cookie"}
	var params strings.Builder
	for _, h := range dropped {
		params.WriteString("        - {name: " + h + ", in: header, schema: {type: string}}\n")
	}
	doc := `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /h:
    get:
      operationId: h
      parameters:
        - {name: X-Api-Version, in: header, schema: {type: string}}
` + params.String() + `      responses: {'200': {description: ok, content: {application/json: {schema: {type: object}}}}}
`
	api, _, c := newServer(t, doc, openapi.Options{BaseURL: up.URL}, nil)
	ws := api.Warnings()
	if len(ws) != len(dropped) {
		t.Fatalf("warnings %v, want one per dropped header (%d)", ws, len(dropped))
	}
	for i, h := range dropped {
		if ws[i].Operation != "h (GET /h)" || !strings.Contains(ws[i].Message, `"`+h+`" is dropped`) {
			t.Errorf("warning %d: %v", i, ws[i])
		}
	}
	in := string(api.Operations()[0].InputSchema)
	if !strings.Contains(in, `"X-Api-Version"`) {
		t.Errorf("the API's own header is gone: %s", in)
	}
	for _, h := range dropped {
		if strings.Contains(in, `"`+h+`"`) {
			t.Errorf("input schema still has %s: %s", h, in)
		}
	}
	// The arguments are refused as unknown, so nothing reaches the upstream.
	res := callRaw(t, c, "h", `{"X-Forwarded-For":"10.0.0.1","X-Api-Version":"2"}`)
	if !res.IsError {
		t.Errorf("a call setting X-Forwarded-For succeeded: %s", res.Text())
	}
	s, res := call(t, c, "h", `{"X-Api-Version":"2"}`)
	if res.IsError || s.Headers["X-Api-Version"] != "2" || s.Headers["X-Forwarded-For"] != "" {
		t.Errorf("result %s, upstream saw %v", res.Text(), s.Headers)
	}
}
