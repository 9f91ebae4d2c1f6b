// Command gosdkserver is an MCP server built on the official Go SDK
// (v1.8.0), a server Weft's tests did not write: over stdio, or over
// Streamable HTTP with -http ADDR. Its "echo" tool returns its message; its
// "confirm" tool asks the client for a name with a form elicitation during
// the call (in the 2025 era: the SDK refuses that in 2026-07-28).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type input struct {
	Topic string `json:"topic"`
}

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP at `ADDR` (at /mcp) instead of stdio")
	flag.Parse()
	server := mcp.NewServer(&mcp.Implementation{Name: "gosdk-upstream", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Returns its message."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Message string `json:"message"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Message}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "confirm", Description: "Asks who confirms a topic."},
		func(ctx context.Context, req *mcp.CallToolRequest, in input) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message:         "Who confirms " + in.Topic + "?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
			})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
				Text: fmt.Sprintf("%s confirmed by %v (%s)", in.Topic, res.Content["name"], res.Action)}}}, nil, nil
		})
	if *addr != "" {
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
		mux := http.NewServeMux()
		mux.Handle("/mcp", h)
		log.Fatal(http.ListenAndServe(*addr, mux))
	}
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
