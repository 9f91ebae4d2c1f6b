package servers

import (
	"context"
	"fmt"
	"net/http"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// Ablations of Weft's echo tool through the public API only. Each variant
// removes one piece of per-call work, so the differences measure what a
// hot-path change to that piece could save at most.

// Variants are the ablations, from the measured server to the floor.
var Variants = []string{"full", "no-input-validation", "no-typed-output", "no-validation-no-typed-output", "floor"}

// VariantNotes describe each ablation.
var VariantNotes = map[string]string{
	"full":                          "the measured server: typed In and Out, input and output schemas inferred and validated",
	"no-input-validation":           "authored input schema `{\"type\":\"object\"}`: no argument validation",
	"no-typed-output":               "`Out = *CallToolResult` built with exactjson: no output schema, no `FromGo`, no output validation",
	"no-validation-no-typed-output": "both of the above",
	"floor":                         "also no typed bind: an untyped handler reads the arguments with exactjson accessors",
}

var permissive = []byte(`{"type":"object"}`)

func echoResult(in EchoArgs) *weft.CallToolResult {
	v := exactjson.Object(exactjson.Field("text", exactjson.String(in.Text)), exactjson.Field("count", exactjson.Int(int64(in.Count))))
	text, _ := exactjson.Encode(v, 0)
	return &weft.CallToolResult{StructuredContent: v, Content: []weft.Content{weft.TextContent(string(text))}}
}

// NewWeftVariant returns the Weft echo server of one ablation variant.
func NewWeftVariant(variant string) (http.Handler, error) {
	s, err := weft.NewServer(weft.Implementation{Name: "bench-weft", Version: "1.0.0"}, &weft.Options{Logger: discard})
	if err != nil {
		return nil, err
	}
	t := weft.Tool{Name: ToolName, Description: "Echoes its arguments."}
	switch variant {
	case "full": // typed In and Out, both schemas inferred: the measured server
		err = weft.AddTool(s, t, func(ctx context.Context, req *weft.Request, in EchoArgs) (EchoOut, error) { return echo(in), nil })
	case "no-input-validation": // authored permissive input schema
		t.InputSchema = permissive
		err = weft.AddTool(s, t, func(ctx context.Context, req *weft.Request, in EchoArgs) (EchoOut, error) { return echo(in), nil })
	case "no-typed-output": // no output schema; result built with exactjson
		err = weft.AddTool(s, t, func(ctx context.Context, req *weft.Request, in EchoArgs) (*weft.CallToolResult, error) {
			return echoResult(in), nil
		})
	case "no-validation-no-typed-output":
		t.InputSchema = permissive
		err = weft.AddTool(s, t, func(ctx context.Context, req *weft.Request, in EchoArgs) (*weft.CallToolResult, error) {
			return echoResult(in), nil
		})
	case "floor": // untyped handler: no validation, no bind, no output schema
		t.InputSchema = permissive
		err = s.AddTool(t, func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			a := req.Arguments()
			tv, _ := a.Get("text")
			cv, _ := a.Get("count")
			text, _ := tv.AsString()
			n, _ := cv.AsNumber()
			c, _ := n.Int64()
			return echoResult(EchoArgs{Text: text, Count: int(c)}), nil
		})
	default:
		return nil, fmt.Errorf("unknown variant %q", variant)
	}
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(Path, s)
	return mux, nil
}
