package wefttest_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/wefttest"
)

// Testing a typed tool: call it in memory and check its result, and check
// that an unknown tool is a JSON-RPC error.
func ExampleClient_CallTool() {
	type sumIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type sumOut struct {
		Sum int `json:"sum"`
	}
	srv, err := weft.NewServer(weft.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	err = weft.AddTool(srv, weft.Tool{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, req *weft.Request, in sumIn) (sumOut, error) {
			return sumOut{Sum: in.A + in.B}, nil
		})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	c := wefttest.NewWireClient(srv)
	res, err := c.CallTool(ctx, "add", map[string]int{"a": 2, "b": 3})
	if err != nil {
		panic(err)
	}
	fmt.Println("text:", res.Text())
	out, err := wefttest.StructuredAs[sumOut](res)
	if err != nil {
		panic(err)
	}
	fmt.Println("sum:", out.Sum)
	fmt.Println("isError:", res.IsError)

	_, err = c.CallTool(ctx, "divide", map[string]int{"a": 1, "b": 0})
	var rpcErr *wefttest.RPCError
	if errors.As(err, &rpcErr) {
		fmt.Println("error:", rpcErr.Code, rpcErr.Message, "HTTP", rpcErr.HTTPStatus)
	}
	// Output:
	// text: {"sum":5}
	// sum: 5
	// isError: false
	// error: -32602 Unknown tool HTTP 400
}

// Testing a tool that asks the user for input: CallToolWithInput answers
// every input_required round with a WireResponder and retries until the tool
// completes.
func ExampleClient_CallToolWithInput() {
	srv, err := weft.NewServer(weft.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	type nameForm struct {
		Name string `json:"name"`
	}
	form := weft.FormOf[nameForm](weft.RequiredCapability)
	err = weft.AddTool(srv, weft.Tool{Name: "greet", Description: "Greets the user by name.",
		Inputs: []weft.Input{form}},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			a, outcome, _, err := form.Answer(req, "user")
			if err != nil || outcome != weft.Accepted {
				return nil, weft.AskInput("user", form.Ask("What is your name?"))
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("Hello, " + a.Name + "!")}}, nil
		})
	if err != nil {
		panic(err)
	}

	c := wefttest.NewWireClient(srv, wefttest.WithCapabilities(wefttest.Capabilities(form)))
	final, rounds, err := c.CallToolWithInput(context.Background(), "greet", nil,
		wefttest.WireAcceptForm(map[string]any{"name": "Ada"}), 0)
	if err != nil {
		panic(err)
	}
	for i, r := range rounds {
		fmt.Printf("round %d: %s %v\n", i+1, r.ResultType, r.InputKeys())
	}
	fmt.Println(final.Text())
	// Output:
	// round 1: input_required [user]
	// round 2: complete []
	// Hello, Ada!
}

// Driving the rounds by hand: inspect the input request, then retry with a
// response. The retry is a new request that echoes the request state.
func ExampleClient_Retry() {
	srv, err := weft.NewServer(weft.Implementation{Name: "approvals", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	form := weft.Form(weft.RequiredCapability)
	err = weft.AddTool(srv, weft.Tool{Name: "deploy", Description: "Deploys after approval.",
		Inputs: []weft.Input{form}, StateMode: weft.StateApplication},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			resp, ok := req.InputResponses().Get("approve")
			state, _ := req.ApplicationState()
			if !ok || state != "deploy-42" {
				return nil, weft.AskInput("approve", form.Ask("Deploy build 42?",
					exactjson.Object(exactjson.Field("type", exactjson.String("object")), exactjson.Field("properties", exactjson.Object())))).
					WithApplicationState("deploy-42")
			}
			action, _ := resp.Get("action")
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("deploy: " + action.String())}}, nil
		})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	c := wefttest.NewWireClient(srv, wefttest.WithCapabilities(wefttest.Capabilities(weft.Form(weft.RequiredCapability))))
	first, err := c.CallTool(ctx, "deploy", nil)
	if err != nil {
		panic(err)
	}
	msg, _ := first.InputRequests["approve"].Params.Get("message")
	fmt.Println(first.ResultType, first.InputRequests["approve"].Method, msg, first.RequestState)

	second, err := c.Retry(ctx, first, map[string]exactjson.Value{
		"approve": exactjson.Object(exactjson.Field("action", exactjson.String("decline"))),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(second.ResultType, second.Text())
	// Output:
	// input_required elicitation/create "Deploy build 42?" deploy-42
	// complete deploy: "decline"
}

// Progress notifications arrive on the request's SSE stream before the
// result; WithProgress makes every request carry a progress token.
func ExampleResponse_Progress() {
	srv, err := weft.NewServer(weft.Implementation{Name: "worker", Version: "1.0.0"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	err = weft.AddTool(srv, weft.Tool{Name: "work", Description: "Works in three steps."},
		func(ctx context.Context, req *weft.Request, _ struct{}) (*weft.CallToolResult, error) {
			for i := 1; i <= 3; i++ {
				if err := req.Progress(float64(i), 3, fmt.Sprintf("step %d", i)); err != nil {
					return nil, err
				}
			}
			return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("done")}}, nil
		})
	if err != nil {
		panic(err)
	}

	c := wefttest.NewWireClient(srv, wefttest.WithProgress())
	res, err := c.CallTool(context.Background(), "work", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("streamed:", res.Response.Streamed)
	for _, p := range res.Response.Progress() {
		fmt.Printf("%v/%v %s\n", p.Progress, p.Total, p.Message)
	}
	fmt.Println(res.Text())
	// Output:
	// streamed: true
	// 1/3 step 1
	// 2/3 step 2
	// 3/3 step 3
	// done
}
