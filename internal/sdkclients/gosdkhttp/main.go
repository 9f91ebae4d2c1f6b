// Command gosdkhttp is a client built on the official Go SDK (v1.8.0) that
// a test drives over Streamable HTTP with a bearer token, one JSON command
// per line on stdin, one JSON answer per line on stdout:
//
//	{"op":"list"}                          → {"tools":["a","b"]}
//	{"op":"call","name":"t","args":{...}}  → {"text":"…","isError":false} or {"error":"…"}
//	{"op":"quit"}                          → exits
//
// When a call's server asks for a URL interaction, it prints
// {"elicit":"url","url":"…"} and waits for {"op":"accept"} (the test
// played the browser) or {"op":"decline"} before answering the server.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type command struct {
	Op   string         `json:"op"`
	Name string         `json:"name,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

var outMu sync.Mutex

func emit(v any) {
	b, _ := json.Marshal(v)
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Println(string(b))
}

func main() {
	endpoint := flag.String("url", "", "the server's MCP endpoint")
	token := flag.String("token", "", "the bearer token")
	version := flag.String("protocol", "", "the protocol version to ask for (default: the SDK's latest)")
	flag.Parse()
	if *endpoint == "" {
		log.Fatal("usage: gosdkhttp -url URL [-token TOKEN] [-protocol VERSION]")
	}
	cmds := make(chan command)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var c command
			if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
				log.Fatalf("bad command %q: %v", sc.Text(), err)
			}
			cmds <- c
		}
		close(cmds)
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "gosdkhttp", Version: "1.0.0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if r.Params.Mode != "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			emit(map[string]string{"elicit": "url", "url": r.Params.URL})
			select {
			case c, ok := <-cmds:
				if ok && c.Op == "accept" {
					return &mcp.ElicitResult{Action: "accept"}, nil
				}
				return &mcp.ElicitResult{Action: "decline"}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	hc := &http.Client{Transport: bearer{token: *token, base: http.DefaultTransport}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: *endpoint, HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: *version})
	if err != nil {
		emit(map[string]string{"error": "connect: " + err.Error()})
		os.Exit(1)
	}
	defer cs.Close()
	emit(map[string]string{"connected": cs.InitializeResult().ProtocolVersion})
	for cmd := range cmds {
		switch cmd.Op {
		case "list":
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				emit(map[string]string{"error": err.Error()})
				continue
			}
			names := []string{}
			for _, t := range res.Tools {
				names = append(names, t.Name)
			}
			emit(map[string]any{"tools": names})
		case "call":
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: cmd.Name, Arguments: cmd.Args})
			if err != nil {
				emit(map[string]string{"error": err.Error()})
				continue
			}
			var text []string
			for _, c := range res.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					text = append(text, t.Text)
				}
			}
			emit(map[string]any{"text": strings.Join(text, "\n"), "isError": res.IsError})
		case "quit":
			return
		default:
			emit(map[string]string{"error": "unknown op " + cmd.Op})
		}
	}
}
