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
	s, err := weft.NewServer(weft.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	type addArgs struct {
		A int64 `json:"a"`
		B int64 `json:"b"`
	}
	type sum struct {
		Sum int64 `json:"sum"`
	}
	err = weft.AddTool(s, weft.Tool{Name: "add", Description: "Adds two integers."},
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

// A multi-round tool: the first call answers input_required with a form
// elicitation (inferred from a Go struct) and sealed state (a Go value); the
// client's retry carries the answer and the state back, and the handler
// completes.
func ExampleAskInput() {
	key, err := seal.GenerateKey("example-2026-08")
	if err != nil {
		log.Fatal(err)
	}
	ring, err := seal.NewKeyring(key)
	if err != nil {
		log.Fatal(err)
	}
	s, err := weft.NewServer(weft.Implementation{Name: "shop", Version: "1.0.0"},
		&weft.Options{Protector: seal.NewManager(ring, nil)})
	if err != nil {
		log.Fatal(err)
	}

	type approval struct {
		Approve bool `json:"approve" jsonschema:"approve the order"`
	}
	type pending struct {
		Item string `json:"item"`
	}
	approve := weft.FormOf[approval](weft.ConditionalCapability)
	type orderArgs struct {
		Item string `json:"item"`
	}
	text := func(s string) *weft.CallToolResult {
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent(s)}}
	}
	err = weft.AddTool(s, weft.Tool{Name: "order", Description: "Orders an item once the user approves.",
		Inputs: []weft.Input{approve}, StateMode: weft.StateFramework},
		func(ctx context.Context, req *weft.Request, in orderArgs) (*weft.CallToolResult, error) {
			order, resumed, err := weft.FrameworkState[pending](req)
			if err != nil {
				return nil, err
			}
			if !resumed {
				return nil, weft.AskInput("approval", approve.Ask("Order "+in.Item+"?")).
					WithFrameworkState(pending{Item: in.Item})
			}
			// The answer is validated against the form and decoded; the
			// decision is still the application's.
			answer, outcome, _, err := approve.Answer(req, "approval")
			if err != nil || outcome != weft.Accepted || !answer.Approve {
				return text("Order cancelled."), nil
			}
			return text("Ordered " + order.Item + "."), nil
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
	// {"approval":{"method":"elicitation/create","params":{"mode":"form","message":"Order tea?","requestedSchema":{"type":"object","properties":{"approve":{"type":"boolean","description":"approve the order"}},"required":["approve"]}}}}
	// sealed state: true
	// complete Ordered tea.
}

// An emitted input request names the declaration it was built from.
func ExampleInputRequest_Declaration() {
	approve := weft.Form(weft.ConditionalCapability)
	signIn := weft.URL(weft.RequiredCapability)
	r := approve.Ask("Approve the order?", exactjson.Object(
		exactjson.Field("type", exactjson.String("object")),
		exactjson.Field("properties", exactjson.Object())))
	fmt.Println(r.Declaration() == approve, r.Declaration() == signIn)
	fmt.Println(r.Declaration())
	// Output:
	// true false
	// conditional form elicitation
}

// An untyped tool (an authored input schema) reads its arguments as a Go
// value with ArgumentsAs, and answers text with TextResult.
func ExampleArgumentsAs() {
	s, err := weft.NewServer(weft.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	err = s.AddTool(weft.Tool{Name: "greet", Description: "Greets someone.",
		InputSchema: []byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
			in, err := weft.ArgumentsAs[struct {
				Name string `json:"name"`
			}](req)
			if err != nil {
				return nil, err
			}
			return weft.TextResult("Hello, " + in.Name + "!"), nil
		})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()

	_, body := postMCP(ts.URL, "tools/call", "greet", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`+
		`"name":"greet","arguments":{"name":"Ada"}}}`)
	fmt.Println(strings.Contains(string(body), `"text":"Hello, Ada!"`))
	// Output:
	// true
}

// Progressive discovery: of a large catalog, tools/list shows the search
// tool and the Listed group; search_tools returns the definitions of the
// tools matching a query, which the client then calls by name.
func ExampleToolSearch() {
	s, err := weft.NewServer(weft.Implementation{Name: "crm", Version: "1.0.0"}, &weft.Options{
		ToolSearch: &weft.ToolSearch{Listed: []string{"contacts_*"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	reply := func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("done")}}, nil
	}
	for _, t := range []weft.Tool{
		{Name: "contacts_find", Description: "Finds a contact by name."},
		{Name: "invoices_create", Description: "Creates an invoice for a contact."},
		{Name: "invoices_void", Description: "Voids an invoice."},
	} {
		if err := s.AddTool(t, reply); err != nil {
			log.Fatal(err)
		}
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

	_, body := postMCP(ts.URL, "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`)
	var list struct {
		Result struct{ Tools []struct{ Name string } }
	}
	if err := json.Unmarshal(body, &list); err != nil {
		log.Fatal(err)
	}
	fmt.Println("listed:", list.Result.Tools)

	_, body = postMCP(ts.URL, "tools/call", "search_tools", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{`+meta+
		`,"name":"search_tools","arguments":{"query":"void invoice"}}}`)
	var found struct {
		Result struct {
			StructuredContent struct{ Tools []struct{ Name string } }
		}
	}
	if err := json.Unmarshal(body, &found); err != nil {
		log.Fatal(err)
	}
	fmt.Println("found:", found.Result.StructuredContent.Tools)
	// Output:
	// listed: [{search_tools} {contacts_find}]
	// found: [{invoices_void} {invoices_create}]
}

// A client that answers a tool's declared inputs declares the capabilities
// ClientCapabilities names.
func ExampleClientCapabilities() {
	caps := weft.ClientCapabilities(weft.Form(weft.RequiredCapability), weft.URL(weft.RequiredCapability), weft.Roots(weft.RequiredCapability))
	b, _ := exactjson.Encode(caps, 0)
	fmt.Println(string(b))
	// Output: {"elicitation":{"form":{},"url":{}},"roots":{}}
}
