// Command mcpgoserver is an MCP server built on mcp-go (v1.2.1), a server
// Weft's tests did not write: over stdio, or over Streamable HTTP with
// -http ADDR (at /mcp). Its "echo" tool returns its message.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP at `ADDR` (at /mcp) instead of stdio")
	flag.Parse()
	s := server.NewMCPServer("mcpgo-partner", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Returns its message."), mcp.WithString("message", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("echo: " + req.GetString("message", "")), nil
		})
	if *addr != "" {
		log.Fatal(server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp")).Start(*addr))
	}
	if err := server.ServeStdio(s); err != nil {
		log.Fatal(err)
	}
}
