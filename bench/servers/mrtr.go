package servers

import (
	"context"
	"encoding/json"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// ConfirmTool is the multi-round tool: echo_confirm first asks for a form
// confirmation with framework-protected (sealed) state and completes like
// echo on the retry.
const ConfirmTool = "echo_confirm"

// mrtrMeta declares form elicitation, which echo_confirm asks for.
var mrtrMeta = Meta(`{"elicitation":{"form":{}}}`)

// MRTRParams returns the params of a call to name with the multi-round
// client's _meta, followed by extra members (JSON, starting with a comma).
func MRTRParams(name, extra string) string {
	return `{"name":"` + name + `","arguments":{"text":"hello, bench","count":3},"_meta":` + mrtrMeta + extra + `}`
}

// PlainCall is the plain call the multi-round retry is compared with: echo
// with the same _meta.
func PlainCall() *Call { return NewCall("tools/call", ToolName, MRTRParams(ToolName, "")) }

// FirstCall is round 1 of the multi-round call.
func FirstCall() *Call { return NewCall("tools/call", ConfirmTool, MRTRParams(ConfirmTool, "")) }

// RetryCall is the retry answering round 1, whose requestState was state.
func RetryCall(state string) *Call {
	token, _ := json.Marshal(state)
	return NewCall("tools/call", ConfirmTool, MRTRParams(ConfirmTool,
		`,"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":`+string(token)))
}

// AddConfirm registers echo_confirm on s.
func AddConfirm(s *weft.Server) error {
	form := weft.Form(weft.ConditionalCapability)
	schema := exactjson.Object(
		exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object(exactjson.Field("ok",
			exactjson.Object(exactjson.Field("type", exactjson.String("boolean")))))),
		exactjson.Field("required", exactjson.Array(exactjson.String("ok"))))
	phase := exactjson.Object(exactjson.Field("phase", exactjson.String("confirming")))
	return weft.AddTool(s, weft.Tool{Name: ConfirmTool, Description: "Echoes after a confirmation.",
		Inputs: []weft.Input{form}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request, in EchoArgs) (EchoOut, error) {
			if st, ok, _ := weft.FrameworkState[exactjson.Value](req); ok {
				p, _ := st.Get("phase")
				if s, _ := p.AsString(); s == "confirming" && req.InputResponses().Has("confirm") {
					return EchoOut(in), nil
				}
			}
			return EchoOut{}, weft.AskInput("confirm", form.Ask("Echo this?", schema)).
				WithFrameworkState(phase)
		})
}
