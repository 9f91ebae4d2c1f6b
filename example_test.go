package weft_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/seal"
)

// postMCP sends one JSON-RPC request the way a 2026-07-28 client does: the
// body plus the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers.
func postMCP(url, method, name, body string) (*http.Response, []byte) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", weft.ProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		log.Fatal(err)
	}
	return resp, b
}

// A typed tool: the input and output schemas are inferred from the Go types,
// and integers beyond 2^53 stay exact in both directions.
func ExampleAddTool() {
	s := weft.NewServer(weft.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	type addArgs struct {
		A int64 `json:"a"`
		B int64 `json:"b"`
	}
	type sum struct {
		Sum int64 `json:"sum"`
	}
	err := weft.AddTool(s, weft.Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, req *weft.Request, in addArgs) (sum, error) {
			return sum{Sum: in.A + in.B}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()

	resp, body := postMCP(ts.URL, "tools/call", "add", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`+
		`"name":"add","arguments":{"a":9007199254740993,"b":1}}}`)
	fmt.Println(resp.StatusCode, resp.Header.Get("Content-Type"))
	fmt.Println(string(body))
	// Output:
	// 200 application/json
	// {"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"sum\":9007199254740994}"}],"structuredContent":{"sum":9007199254740994},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"calc","version":"1.0.0"}}}}
}

// approvalAnswer is the elicitation result ExampleAskInput expects.
type approvalAnswer struct {
	Action  string `json:"action"`
	Content struct {
		Approve bool `json:"approve"`
	} `json:"content"`
}

// A multi-round tool: the first call answers input_required with a form
// elicitation and sealed state; the client's retry carries the answer and
// the state back, and the handler completes.
func ExampleAskInput() {
	key, err := seal.GenerateKey("example-2026-08")
	if err != nil {
		log.Fatal(err)
	}
	ring, err := seal.NewKeyring(key)
	if err != nil {
		log.Fatal(err)
	}
	s := weft.NewServer(weft.Implementation{Name: "shop", Version: "1.0.0"},
		&weft.Options{Protector: seal.NewManager(ring)})

	approval := weft.FormElicitation(weft.Conditional)
	schema := exactjson.Object(
		exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object(
			exactjson.Field("approve", exactjson.Object(exactjson.Field("type", exactjson.String("boolean")))))),
		exactjson.Field("required", exactjson.Array(exactjson.String("approve"))))
	type orderArgs struct {
		Item string `json:"item"`
	}
	text := func(s string) *weft.CallToolResult {
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(s)}}
	}
	err = weft.AddTool(s, weft.Tool{Name: "order", Description: "Orders an item once the user approves.",
		Inputs: []weft.InputDeclaration{approval}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request, in orderArgs) (*weft.CallToolResult, error) {
			state, resumed := req.FrameworkState()
			if !resumed {
				return nil, weft.AskInput("approval", weft.ElicitForm(approval, "Order "+in.Item+"?", schema)).
					WithFrameworkState(exactjson.Object(exactjson.Field("item", exactjson.String(in.Item))))
			}
			// Decoding is conversion, not validation: check the action
			// and the content before acting.
			answer, ok, err := weft.Decode[approvalAnswer](req.InputResponses(), "approval")
			if err != nil || !ok || answer.Action != "accept" || !answer.Content.Approve {
				return text("Order cancelled."), nil
			}
			item, _ := state.Get("item")
			name, _ := item.AsString()
			return text("Ordered " + name + "."), nil
		})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	_, body := postMCP(ts.URL, "tools/call", "order", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+
		meta+`,"name":"order","arguments":{"item":"tea"}}}`)
	var first struct {
		Result struct {
			ResultType    string          `json:"resultType"`
			InputRequests json.RawMessage `json:"inputRequests"`
			RequestState  string          `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &first); err != nil {
		log.Fatal(err)
	}
	fmt.Println(first.Result.ResultType)
	fmt.Println(string(first.Result.InputRequests))
	fmt.Println("sealed state:", strings.HasPrefix(first.Result.RequestState, seal.TokenPrefix))

	// The retry: a new id, the same params, the answer and the exact state.
	st, _ := json.Marshal(first.Result.RequestState)
	_, body = postMCP(ts.URL, "tools/call", "order", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{`+
		meta+`,"name":"order","arguments":{"item":"tea"},`+
		`"inputResponses":{"approval":{"action":"accept","content":{"approve":true}}},"requestState":`+string(st)+`}}`)
	var second struct {
		Result struct {
			ResultType string `json:"resultType"`
			Content    []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &second); err != nil {
		log.Fatal(err)
	}
	fmt.Println(second.Result.ResultType, second.Result.Content[0].Text)
	// Output:
	// input_required
	// {"approval":{"method":"elicitation/create","params":{"mode":"form","message":"Order tea?","requestedSchema":{"type":"object","properties":{"approve":{"type":"boolean"}},"required":["approve"]}}}}
	// sealed state: true
	// complete Ordered tea.
}
