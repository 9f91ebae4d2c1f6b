package weft

import (
	"context"
	"encoding/json"
	"testing"
)

// TestAddToolEmptyInputSchema: Server.AddTool does not require an
// InputSchema; an empty one is listed as {"type":"object"} and accepts any
// arguments object (but still refuses arguments that are not an object).
func TestAddToolEmptyInputSchema(t *testing.T) {
	s, _ := newServer(t, nil)
	must(t, s.AddTool(Tool{Name: "free", Description: "No schema."}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		return textResult("ok"), nil
	}))
	ts := startHTTP(t, s)
	var list struct {
		Tools []struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	must(t, json.Unmarshal(rpc(t, ts.URL, 1, "tools/list", params(nil)).Msg.Result, &list))
	if len(list.Tools) != 1 || string(list.Tools[0].InputSchema) != `{"type":"object"}` {
		t.Fatalf("listed tools %+v, want one with inputSchema {\"type\":\"object\"}", list.Tools)
	}
	for _, args := range []any{nil, M{}, M{"anything": []any{1, "two"}}} {
		p := toolCall(nil, "free", nil)
		if args != nil {
			p["arguments"] = args
		}
		if r := rpc(t, ts.URL, 2, "tools/call", p); r.text(t) != "ok" {
			t.Errorf("arguments %v: %v", args, r)
		}
	}
	p := toolCall(nil, "free", nil)
	p["arguments"] = []any{}
	rpc(t, ts.URL, 3, "tools/call", p).wantError(t, 400, CodeInvalidParams)
}
