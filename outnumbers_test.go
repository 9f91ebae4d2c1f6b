package weft

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
)

// bigNumber returns the number digits × 10^exp as a Value (built, not
// parsed, so no parser limit stops it).
func bigNumber(t testing.TB, digits string, exp int32) exactjson.Value {
	t.Helper()
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		t.Fatalf("bad digits %q", digits)
	}
	return exactjson.NumberValue(exactjson.NumberFromDecimal(u, -exp))
}

// TestOutgoingNumbersWithinJSONLimits: numbers in results and in framework
// state are held to the JSON limits docs/limits.md promises (1,024
// characters, adjusted exponent 10,000), not only to the encoder's hard
// ceilings: past them the call fails with -32603 and nothing of the
// result, no state either, is sent (framework state is not even sealed);
// at them it succeeds.
func TestOutgoingNumbersWithinJSONLimits(t *testing.T) {
	atExp := bigNumber(t, "1", 10000)                     // 1E+10000
	pastExp := bigNumber(t, "1", 10001)                   // 1E+10001
	atLen := bigNumber(t, strings.Repeat("7", 1024), 0)   // 1,024 characters
	pastLen := bigNumber(t, strings.Repeat("7", 1025), 0) // 1,025 characters
	pastNeg := bigNumber(t, "1", -10001)                  // 1E-10001
	form := Form(ConditionalCapability)
	cases := []struct {
		name  string
		where string // structured, meta, state, ask
		v     exactjson.Value
		ok    bool
	}{
		{"structured content at the exponent limit", "structured", atExp, true},
		{"structured content past the exponent limit", "structured", pastExp, false},
		{"structured content past the negative exponent limit", "structured", pastNeg, false},
		{"structured content at the length limit", "structured", atLen, true},
		{"structured content past the length limit", "structured", pastLen, false},
		{"_meta past the exponent limit", "meta", pastExp, false},
		{"framework state at the exponent limit", "state", atExp, true},
		{"framework state past the exponent limit", "state", pastExp, false},
		{"framework state past the length limit", "state", pastLen, false},
		{"input request params past the exponent limit", "ask", pastExp, false},
	}
	prot := &countingProtector{inner: managerFor(t, fixedKey(t, "k", 1))}
	s, _ := newServer(t, &Options{Protector: prot})
	var current exactjson.Value
	var where string
	must(t, s.AddTool(Tool{Name: "out", Description: "Returns a number.", Inputs: []Input{form}, StateMode: StateFramework},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			obj := exactjson.Object(exactjson.Field("n", current))
			switch where {
			case "meta":
				return &CallToolResult{Content: []Content{TextContent("x")}, Meta: obj}, nil
			case "state":
				return nil, AskInput("e", form.Ask("OK?", approveSchema)).WithFrameworkState(obj)
			case "ask":
				sch := exactjson.Object(exactjson.Field("type", exactjson.String("object")), exactjson.Field("properties",
					exactjson.Object(exactjson.Field("n", exactjson.Object(exactjson.Field("type", exactjson.String("number")),
						exactjson.Field("maximum", current))))))
				return nil, AskInput("e", form.Ask("OK?", sch))
			}
			return &CallToolResult{Content: []Content{TextContent("x")}, StructuredContent: obj}, nil
		}))
	url := startHTTP(t, s).URL + "/mcp"
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			current, where = c.v, c.where
			seals := prot.seals.Load()
			r := rpc(t, url, i+1, "tools/call", toolCall(elicitCaps, "out", nil))
			if c.ok {
				res := r.result(t)
				if c.where == "state" && res["requestState"] == nil {
					t.Fatalf("no requestState in %s", r.Body)
				}
				return
			}
			// Sealing failures are HTTP 200 (docs/request-state.md), other
			// internal errors HTTP 500, as for every handler failure.
			status := 500
			if c.where == "state" {
				status = 200
			}
			want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32603,"message":"Internal error"}}`, i+1)
			if r.Status != status || string(r.Body) != want {
				t.Fatalf("got %v, want HTTP %d %s", r, status, want)
			}
			if c.where == "state" && prot.seals.Load() != seals {
				t.Errorf("state past the limits was sealed")
			}
		})
	}
}

// TestOutgoingNumbersLegacyInputRequest: a 2025-11-25 client is never sent a
// server-to-client request whose params hold a number past the limits: the
// call fails with -32603 instead.
func TestOutgoingNumbersLegacyInputRequest(t *testing.T) {
	s, _ := legacyServerFor(t, &Options{Legacy: LegacyOptions{InputTimeout: 2 * time.Second}})
	form := Form(ConditionalCapability)
	past := bigNumber(t, "1", 10001)
	must(t, s.AddTool(Tool{Name: "ask", Description: "Asks with a huge maximum.", Inputs: []Input{form}},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			sch := exactjson.Object(exactjson.Field("type", exactjson.String("object")), exactjson.Field("properties",
				exactjson.Object(exactjson.Field("n", exactjson.Object(exactjson.Field("type", exactjson.String("number")),
					exactjson.Field("maximum", past))))))
			return nil, AskInput("e", form.Ask("OK?", sch))
		}))
	c := newLegacyClient(t, startHTTP(t, s).URL)
	c.initialize()
	r := c.call(1, "tools/call", M{"name": "ask"})
	if r.Msg.Error == nil || r.Msg.Error.Code != CodeInternalError {
		t.Fatalf("got %v, want -32603", r)
	}
	if len(c.requests) != 0 {
		t.Fatalf("the client was sent %d requests: %v", len(c.requests), c.requests)
	}
}
