// Package servers builds the same MCP tool, "echo", on each implementation
// under comparison, and the 2026-07-28 tools/call request every one of them
// is measured with.
//
// The tool takes {text string, count int} and returns the same object as
// structuredContent plus a text block holding its JSON, which is what each
// library's typed-tool helper produces for a typed output.
package servers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftmcp/weft"
)

// Implementations in the order they are measured within a round.
var Impls = []string{"weft", "gosdk", "mcpgo", "bare"}

// Names are the display names of the implementations.
var Names = map[string]string{
	"weft":  "Weft",
	"gosdk": "go-sdk v1.8.0",
	"mcpgo": "mcp-go v1.2.1",
	"bare":  "bare net/http",
}

// EchoArgs are the tool's arguments.
type EchoArgs struct {
	Text  string `json:"text" jsonschema:"the text to echo"`
	Count int    `json:"count" jsonschema:"how many times"`
}

// EchoOut is the tool's structured output.
type EchoOut struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

func echo(in EchoArgs) EchoOut { return EchoOut(in) }

const (
	// ProtocolVersion is the revision every request speaks.
	ProtocolVersion = "2026-07-28"
	// Path is where every implementation is mounted.
	Path = "/mcp"
	// ToolName is the measured tool.
	ToolName = "echo"
)

// discard is every server's logger: its handler is disabled, so no
// implementation formats log records nobody reads (Weft would otherwise
// format a record per request at Info).
var discard = slog.New(slog.DiscardHandler)

// New returns the http.Handler of impl, serving the echo tool at [Path].
func New(impl string) (http.Handler, error) {
	var h http.Handler
	switch impl {
	case "weft":
		s, err := NewWeft()
		if err != nil {
			return nil, err
		}
		h = s
	case "gosdk":
		h = newGoSDK()
	case "mcpgo":
		h = newMCPGo()
	case "bare":
		h = http.HandlerFunc(bare)
	case "weft-legacy": // Weft serving 2025-11-25 sessions too (the gateway's upstream)
		s, err := NewWeftWith(weft.Options{Legacy: weft.LegacyOptions{InMemorySessions: true}})
		if err != nil {
			return nil, err
		}
		h = s
	case "weft-mrtr": // Weft with the multi-round tool too (not a compared implementation)
		s, err := NewWeft()
		if err == nil {
			err = AddConfirm(s)
		}
		if err != nil {
			return nil, err
		}
		h = s
	default:
		return nil, fmt.Errorf("unknown implementation %q (want one of %v)", impl, Impls)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	return mux, nil
}

// NewWeft returns the Weft server with the echo tool.
func NewWeft() (*weft.Server, error) { return NewWeftWith(weft.Options{}) }

// NewWeftWith is NewWeft with options (its logger discards unless set).
func NewWeftWith(opts weft.Options) (*weft.Server, error) {
	if opts.Logger == nil {
		opts.Logger = discard
	}
	s, err := weft.NewServer(weft.Implementation{Name: "bench-weft", Version: "1.0.0"}, &opts)
	if err != nil {
		return nil, err
	}
	err = weft.AddTool(s, weft.Tool{Name: ToolName, Description: "Echoes its arguments."},
		func(ctx context.Context, req *weft.Request, in EchoArgs) (EchoOut, error) {
			return echo(in), nil
		})
	return s, err
}

func newGoSDK() http.Handler {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "bench-gosdk", Version: "1.0.0"}, &gosdk.ServerOptions{Logger: discard})
	gosdk.AddTool(s, &gosdk.Tool{Name: ToolName, Description: "Echoes its arguments."},
		func(ctx context.Context, req *gosdk.CallToolRequest, in EchoArgs) (*gosdk.CallToolResult, EchoOut, error) {
			return nil, echo(in), nil
		})
	return gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s },
		&gosdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: discard})
}

func newMCPGo() http.Handler {
	s := mcpgoserver.NewMCPServer("bench-mcpgo", "1.0.0", mcpgoserver.WithToolCapabilities(false))
	tool := mcpgomcp.NewTool(ToolName, mcpgomcp.WithDescription("Echoes its arguments."),
		mcpgomcp.WithInputSchema[EchoArgs](), mcpgomcp.WithOutputSchema[EchoOut]())
	s.AddTool(tool, mcpgomcp.NewStructuredToolHandler(
		func(ctx context.Context, req mcpgomcp.CallToolRequest, in EchoArgs) (EchoOut, error) {
			return echo(in), nil
		}))
	// Stateless, as the 2026-07-28 era is on this transport: the era is
	// chosen per request from _meta and MCP-Protocol-Version.
	return mcpgoserver.NewStreamableHTTPServer(s, mcpgoserver.WithStateLess(true))
}

// bare is the ceiling: a plain net/http handler that decodes the JSON-RPC
// envelope and the arguments with encoding/json and encodes the same result
// the frameworks send.
func bare(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  struct {
			Name      string                     `json:"name"`
			Arguments EchoArgs                   `json:"arguments"`
			Meta      map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil || msg.Method != "tools/call" || msg.Params.Name != ToolName {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	out := echo(msg.Params.Arguments)
	text, _ := json.Marshal(out)
	type content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  struct {
			ResultType        string    `json:"resultType"`
			Content           []content `json:"content"`
			StructuredContent EchoOut   `json:"structuredContent"`
		} `json:"result"`
	}{JSONRPC: "2.0", ID: msg.ID}
	resp.Result.ResultType = "complete"
	resp.Result.Content = []content{{Type: "text", Text: string(text)}}
	resp.Result.StructuredContent = out
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// Call is one tools/call request: its body and the headers a 2026-07-28
// client sends with it.
type Call struct {
	prefix, suffix []byte
	Header         http.Header
}

// Meta is the per-request _meta of a 2026-07-28 client declaring caps.
func Meta(caps string) string {
	return `{"io.modelcontextprotocol/protocolVersion":"` + ProtocolVersion + `",` +
		`"io.modelcontextprotocol/clientCapabilities":` + caps + `,` +
		`"io.modelcontextprotocol/clientInfo":{"name":"weft-benchload","version":"1.0.0"}}`
}

// EchoParams are the params of the measured call.
var EchoParams = `{"name":"echo","arguments":{"text":"hello, bench","count":3},"_meta":` + Meta(`{}`) + `}`

// NewCall returns the tools/call request of tool name with the given params
// object (already JSON).
func NewCall(method, name, params string) *Call {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", ProtocolVersion)
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	return &Call{
		prefix: []byte(`{"jsonrpc":"2.0","id":`),
		suffix: []byte(`,"method":"` + method + `","params":` + params + `}`),
		Header: h,
	}
}

// EchoCall is the measured request.
func EchoCall() *Call { return NewCall("tools/call", ToolName, EchoParams) }

// AppendBody appends the body with request id id to dst.
func (c *Call) AppendBody(dst []byte, id int64) []byte {
	dst = append(dst, c.prefix...)
	dst = strconv.AppendInt(dst, id, 10)
	return append(dst, c.suffix...)
}

// Body returns the body with request id id.
func (c *Call) Body(id int64) []byte { return c.AppendBody(nil, id) }

// Response is the part of a JSON-RPC response the checks read.
type Response struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		ResultType string `json:"resultType"`
		Content    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
		RequestState      string          `json:"requestState"`
		InputRequests     json.RawMessage `json:"inputRequests"`
		TaskID            string          `json:"taskId"`
		Status            string          `json:"status"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// CheckEcho verifies that an HTTP response answers the echo call with id:
// status 200, a JSON (or single-event SSE) response with the same id, no
// error, structuredContent equal to the arguments and a text block with
// the same JSON.
func CheckEcho(status int, contentType string, body []byte, id int64) error {
	if status != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.300s", status, body)
	}
	var resp Response
	if err := DecodeResponse(contentType, body, &resp); err != nil {
		return err
	}
	if string(resp.ID) != strconv.FormatInt(id, 10) {
		return fmt.Errorf("id %s, want %d", resp.ID, id)
	}
	if resp.Error != nil {
		return fmt.Errorf("JSON-RPC error %d %s", resp.Error.Code, resp.Error.Message)
	}
	if resp.Result == nil || resp.Result.IsError {
		return fmt.Errorf("no result or isError: %.300s", body)
	}
	want := EchoOut{Text: "hello, bench", Count: 3}
	var got EchoOut
	if err := json.Unmarshal(resp.Result.StructuredContent, &got); err != nil || got != want {
		return fmt.Errorf("structuredContent %s, want %+v", resp.Result.StructuredContent, want)
	}
	if len(resp.Result.Content) != 1 || resp.Result.Content[0].Type != "text" {
		return fmt.Errorf("content %+v, want one text block", resp.Result.Content)
	}
	var fromText EchoOut
	if err := json.Unmarshal([]byte(resp.Result.Content[0].Text), &fromText); err != nil || fromText != want {
		return fmt.Errorf("text block %q does not hold the output", resp.Result.Content[0].Text)
	}
	return nil
}

// DecodeResponse decodes a JSON-RPC response sent as application/json or
// as an SSE stream whose last data frame is the response.
func DecodeResponse(contentType string, body []byte, into *Response) error {
	if bytes.HasPrefix([]byte(contentType), []byte("text/event-stream")) {
		var last []byte
		for _, line := range bytes.Split(body, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				last = bytes.TrimSpace(d)
			}
		}
		if last == nil {
			return errors.New("SSE response without a data frame")
		}
		body = last
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("response is not JSON-RPC (%v): %.300s", err, body)
	}
	return nil
}
