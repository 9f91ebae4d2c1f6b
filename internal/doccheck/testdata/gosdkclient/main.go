// Command gosdkclient is a client built on the official Go SDK (v1.8.0):
// it connects to the MCP endpoint given as its first argument asking for
// the protocol revision given as its second, calls the tool named by its
// third argument with the JSON arguments of its fourth, and prints the
// negotiated revision and the result as one JSON object.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) != 5 {
		log.Fatal("usage: gosdkclient URL VERSION TOOL ARGS")
	}
	url, version, tool := os.Args[1], os.Args[2], os.Args[3]
	var args map[string]any
	if err := json.Unmarshal([]byte(os.Args[4]), &args); err != nil {
		log.Fatalf("arguments: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "gosdkclient", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		log.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		log.Fatalf("tools/call: %v", err)
	}
	var text string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text += t.Text
		}
	}
	out, err := json.Marshal(map[string]any{
		"protocolVersion":   cs.InitializeResult().ProtocolVersion,
		"tools":             names,
		"text":              text,
		"structuredContent": res.StructuredContent,
		"isError":           res.IsError,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))
}
