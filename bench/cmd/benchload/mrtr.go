package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/bench/servers"
	"github.com/weftmcp/weft/exactjson"
)

// The multi-round comparison: one Weft server with the plain echo tool and
// echo_confirm, which first asks for a form confirmation with
// framework-protected (sealed) state and completes on the retry.
const confirmTool = "echo_confirm"

var mrtrMeta = servers.Meta(`{"elicitation":{"form":{}}}`)

func mrtrParams(name, extra string) string {
	return `{"name":"` + name + `","arguments":{"text":"hello, bench","count":3},"_meta":` + mrtrMeta + extra + `}`
}

func newMRTRServer() (*weft.Server, error) {
	s, err := servers.NewWeft()
	if err != nil {
		return nil, err
	}
	form := weft.FormElicitation(weft.Conditional)
	schema := exactjson.Object(
		exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object(exactjson.Field("ok",
			exactjson.Object(exactjson.Field("type", exactjson.String("boolean")))))),
		exactjson.Field("required", exactjson.Array(exactjson.String("ok"))))
	phase := exactjson.Object(exactjson.Field("phase", exactjson.String("confirming")))
	err = weft.AddTool(s, weft.Tool{Name: confirmTool, Description: "Echoes after a confirmation.",
		Inputs: []weft.InputDeclaration{form}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request, in servers.EchoArgs) (servers.EchoOut, error) {
			if st, ok := req.FrameworkState(); ok {
				p, _ := st.Get("phase")
				if s, _ := p.AsString(); s == "confirming" && req.InputResponses().Has("confirm") {
					return servers.EchoOut(in), nil
				}
			}
			return servers.EchoOut{}, weft.AskInput("confirm", weft.ElicitForm(form, "Echo this?", schema)).
				WithFrameworkState(phase)
		})
	return s, err
}

// multiRound measures, in memory on one Weft server: a plain call; round 1
// of the multi-round call (input_required, state sealed); the retry (state
// opened and verified, answers checked, handler completes).
func multiRound(rounds int) ([]micro, error) {
	s, err := newMRTRServer()
	if err != nil {
		return nil, err
	}
	plain := servers.NewCall("tools/call", servers.ToolName, mrtrParams(servers.ToolName, ""))
	first := servers.NewCall("tools/call", confirmTool, mrtrParams(confirmTool, ""))

	// Round 1 once, to get the sealed state the retries echo.
	p := servers.NewInProc(s, first)
	w := p.Do(1)
	var resp servers.Response
	if err := servers.DecodeResponse(w.Header().Get("Content-Type"), w.Body.Bytes(), &resp); err != nil {
		return nil, err
	}
	if w.Code != http.StatusOK || resp.Result == nil || resp.Result.ResultType != "input_required" || resp.Result.RequestState == "" {
		return nil, fmt.Errorf("round 1 did not ask for input: HTTP %d %s", w.Code, w.Body.Bytes())
	}
	token, _ := json.Marshal(resp.Result.RequestState)
	retry := servers.NewCall("tools/call", confirmTool, mrtrParams(confirmTool,
		`,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":`+string(token)))
	for _, c := range []*servers.Call{plain, retry} {
		w := servers.NewInProc(s, c).Do(2)
		if err := servers.CheckEcho(w.Code, w.Header().Get("Content-Type"), w.Body.Bytes(), 2); err != nil {
			return nil, fmt.Errorf("multi-round check: %w", err)
		}
	}
	run := func(c *servers.Call, want string) func() error {
		p := servers.NewInProc(s, c)
		id := int64(1)
		return func() error {
			id++
			w := p.Do(id)
			if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(want)) {
				return fmt.Errorf("HTTP %d: %s", w.Code, w.Body.Bytes())
			}
			return nil
		}
	}
	return runMicro(rounds, []bench{
		{name: "plain call", op: run(plain, `"resultType":"complete"`)},
		{name: "round 1: input_required + seal", op: run(first, `"resultType":"input_required"`)},
		{name: "retry: open + verify + complete", op: run(retry, `"resultType":"complete"`)},
	})
}
