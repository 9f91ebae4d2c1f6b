// Command gosdkserver is an MCP server built on the official Go SDK
// (v1.8.0), speaking 2025-11-25 over stdio: the upstream of the gateway's
// test with a server it did not write. Its "confirm" tool asks the client
// for a name with a form elicitation during the call.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type input struct {
	Topic string `json:"topic"`
}

func main() {
	server := mcp.NewServer(&mcp.Implementation{Name: "gosdk-upstream", Version: "1.0.0"}, nil)
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
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
