package weft

// Fuzz targets for the untrusted input that reaches the server through its
// HTTP handler (issue #8, item 4): the JSON-RPC envelope (FuzzServeHTTPBody),
// pagination cursors (FuzzCursor) and the Mcp-* metadata header codec as the
// transport uses it (FuzzMetadataHeaders). Seed corpora live in
// testdata/fuzz/<FuzzName>/ and are replayed by every `go test`.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/hdr"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/task"
)

// fuzzServer is one server per fuzz process with a bit of everything: typed
// and untyped tools (one with an Mcp-Param mirror), framework and
// application state, a task tool, a prompt with completion, a resource and
// a template.
var fuzzServer = sync.OnceValue(func() *Server {
	k, _ := seal.NewKey("fuzz", bytes.Repeat([]byte{3}, 32))
	kr, _ := seal.NewKeyring(k)
	s, err := NewServer(Implementation{Name: "fuzz", Version: "1"}, &Options{
		Protector:      seal.NewManager(kr, nil),
		PageSize:       1,
		Logger:         slog.New(slog.DiscardHandler),
		RequestTimeout: 2 * time.Second,
		Tasks:          &TaskOptions{Store: task.NewMemoryStore(nil), NoRunner: true},
	})
	add := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	add(err)
	form := Form(ConditionalCapability)
	add(s.AddTool(Tool{Name: "echo", Description: "Echoes.",
		InputSchema: []byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer"}}}`)},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			return textResult("echo " + req.Arguments().String()), nil
		}))
	add(s.AddTool(Tool{Name: "ask", Description: "Asks with framework state.", Inputs: []Input{form}, StateMode: StateFramework},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if _, ok, _ := FrameworkState[exactjson.Value](req); ok {
				return textResult("done"), nil
			}
			return nil, AskInput("ok", form.Ask("OK?", exactjson.Object(exactjson.Field("type", exactjson.String("object")),
				exactjson.Field("properties", exactjson.Object())))).
				WithFrameworkState(exactjson.String("s"))
		}))
	add(s.AddTool(Tool{Name: "app", Description: "Application state.", Inputs: []Input{form}, StateMode: StateApplication},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if st, ok := req.ApplicationState(); ok {
				return textResult(strconv.Itoa(len(st))), nil
			}
			return nil, new(InputRequired).WithApplicationState("h")
		}))
	add(s.AddTool(Tool{Name: "long", Description: "Runs as a task.", Task: TaskOptional},
		func(ctx context.Context, req *Request) (*CallToolResult, error) {
			if req.Task() == nil && req.TasksSupported() {
				return nil, RunAsTask(nil)
			}
			_ = req.Progress(1, 2, "half")
			return textResult("long"), nil
		}))
	add(s.AddPrompt(Prompt{Name: "p", Description: "A prompt.", Arguments: []PromptArgument{{Name: "a", Required: true}},
		Complete: func(ctx context.Context, req *Request, c CompletionRequest) (Completion, error) {
			return Completion{Values: []string{c.Value + "x"}}, nil
		}}, func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
		return &GetPromptResult{Messages: []PromptMessage{{Role: RoleUser, Content: TextContent(args["a"])}}}, nil
	}))
	read := func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "r")}}, nil
	}
	add(s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "fuzz://doc", Name: "doc"}}, read))
	add(s.AddResourceTemplate(ResourceTemplate{URITemplate: "fuzz://items/{id}{?q}", Name: "item"}, read))
	return s
})

// fuzzHeaders derives conforming metadata headers from a body when it can
// be read, so that the fuzzer reaches past the header checks.
func fuzzHeaders(b []byte, sse bool) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if sse {
		h.Set("Accept", "application/json, text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	v, err := exactjson.Parse(b, exactjson.Limits{})
	if err != nil {
		return h
	}
	method, _ := v.Get("method")
	m, _ := method.AsString()
	p, _ := v.Get("params")
	meta, _ := p.Get("_meta")
	if pv, ok := meta.Get(metaProtocolVersion); ok {
		if s, ok := pv.AsString(); ok {
			h.Set("MCP-Protocol-Version", hdr.Encode(s))
		}
	}
	if m != "" {
		h.Set("Mcp-Method", hdr.Encode(m))
	}
	for _, member := range []string{"name", "uri", "taskId"} {
		if nv, ok := p.Get(member); ok {
			if s, ok := nv.AsString(); ok {
				h.Set("Mcp-Name", hdr.Encode(s))
			}
		}
	}
	args, _ := p.Get("arguments")
	if rv, ok := args.Get("region"); ok {
		if s, ok := rv.AsString(); ok {
			h.Set("Mcp-Param-Region", hdr.Encode(s))
		}
	}
	return h
}

// fuzzServe runs one request through the server in process. The context
// ends after a short while so that listen streams (and anything else that
// waits) return.
func fuzzServe(b []byte, h http.Header) *httptest.ResponseRecorder {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(b))
	req.Header = h
	rec := httptest.NewRecorder()
	fuzzServer().ServeHTTP(rec, req)
	return rec
}

// fuzzCheckMessage checks one server-to-client JSON-RPC message. It returns
// the id member (raw) of a response, or nil for a notification.
func fuzzCheckMessage(t *testing.T, b []byte) (id json.RawMessage, isResponse bool) {
	t.Helper()
	v, err := exactjson.Parse(b, exactjson.Limits{MaxInputBytes: exactjson.MaxInputBytesCeiling, MaxDepth: exactjson.MaxDepthCeiling,
		MaxNodes: exactjson.MaxNodesCeiling, MaxStringBytes: exactjson.MaxStringBytesCeiling})
	if err != nil {
		t.Fatalf("server sent invalid JSON %q: %v", b, err)
	}
	if v.Kind() != exactjson.KindObject {
		t.Fatalf("server sent a non-object %q", b)
	}
	if jv, _ := v.Get("jsonrpc"); !isString(jv, "2.0") {
		t.Fatalf(`server message without "jsonrpc":"2.0": %q`, b)
	}
	if mv, ok := v.Get("method"); ok {
		if _, isStr := mv.AsString(); !isStr || v.Has("id") || v.Has("result") || v.Has("error") {
			t.Fatalf("malformed notification %q", b)
		}
		return nil, false
	}
	idv, ok := v.Get("id")
	if !ok {
		t.Fatalf("response without an id member: %q", b)
	}
	switch {
	case idv.Kind() == exactjson.KindNull, idv.Kind() == exactjson.KindString, isInteger(idv):
	default:
		t.Fatalf("response id %s is neither null, a string nor an integer", idv)
	}
	res, hasRes := v.Get("result")
	ev, hasErr := v.Get("error")
	switch {
	case hasRes == hasErr:
		t.Fatalf("a response needs exactly one of result and error: %q", b)
	case hasRes:
		if res.Kind() != exactjson.KindObject {
			t.Fatalf("result is not an object: %q", b)
		}
		if rt, _ := res.Get("resultType"); rt.Kind() != exactjson.KindString {
			t.Fatalf("result without a string resultType: %q", b)
		}
		if idv.Kind() == exactjson.KindNull {
			t.Fatalf("a result with a null id: %q", b)
		}
	case hasErr:
		code, _ := ev.Get("code")
		msg, _ := ev.Get("message")
		if !isInteger(code) || msg.Kind() != exactjson.KindString {
			t.Fatalf("malformed error object: %q", b)
		}
	}
	raw, _ := exactjson.Encode(idv, 0)
	return raw, true
}

// fuzzDocumented5xx are the 5xx statuses docs/limits.md documents for
// client-visible conditions: busy or shutting down (503) and the request
// deadline (504).
var fuzzDocumented5xx = map[int]bool{http.StatusServiceUnavailable: true, http.StatusGatewayTimeout: true}

// FuzzServeHTTPBody posts arbitrary bodies through Server.ServeHTTP: the
// server never panics, every answer is a well-formed JSON-RPC response (or a
// stream of well-formed messages) whose id echoes the request id when it
// could be read, and no input produces a 5xx other than the documented ones.
func FuzzServeHTTPBody(f *testing.F) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{` + meta + `,"cursor":"bzox"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + meta + `,"name":"echo","arguments":{"region":"eu","n":3}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{` + meta + `,"name":"ask"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{` + meta + `,"name":"ask","requestState":"weft1.AAAA","inputResponses":{"ok":{"action":"accept","content":{}}}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{` + meta + `,"name":"app","requestState":"h"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{` + meta + `,"name":"long","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{` + meta + `,"taskId":"nope"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{` + meta + `,"name":"p","arguments":{"a":"x"}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"completion/complete","params":{` + meta + `,"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"b"}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{` + meta + `,"uri":"fuzz://items/42?q=x"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"subscriptions/listen","params":{` + meta + `,"notifications":{"toolsListChanged":true,"resourceSubscriptions":["fuzz://doc"]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"server/discover"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"server/discover"}]`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"1.0","id":null,"method":""}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"server/discover"}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
		"\xef\xbb\xbf{}", `nul`, ``, `{"a":` + strings.Repeat("[", 200),
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		sse := mode&1 == 1
		h := fuzzHeaders(body, sse)
		if mode&2 == 2 {
			h.Del("Mcp-Method") // the header checks themselves
		}
		rec := fuzzServe(body, h)
		status := rec.Code
		if status >= 500 && !fuzzDocumented5xx[status] {
			t.Fatalf("HTTP %d for %q: %s", status, body, rec.Body.Bytes())
		}
		if rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("response without Cache-Control: no-store (HTTP %d)", status)
		}
		// The id the request carried, when the server could read it.
		var reqID json.RawMessage
		if v, err := exactjson.Parse(body, exactjson.Limits{}); err == nil {
			if idv, ok := v.Get("id"); ok && (idv.Kind() == exactjson.KindString || isInteger(idv)) && v.Kind() == exactjson.KindObject {
				reqID, _ = exactjson.Encode(idv, 0)
			}
		}
		checkID := func(id json.RawMessage, frame []byte) {
			if string(id) == "null" || reqID == nil {
				return
			}
			if !bytes.Equal(id, reqID) {
				t.Fatalf("response id %s does not echo the request id %s: %q", id, reqID, frame)
			}
		}
		ct := rec.Header().Get("Content-Type")
		switch {
		case status == http.StatusAccepted:
			if rec.Body.Len() != 0 {
				t.Fatalf("202 with a body: %q", rec.Body.Bytes())
			}
		case strings.HasPrefix(ct, "text/event-stream"):
			if status != http.StatusOK {
				t.Fatalf("an event stream with HTTP %d", status)
			}
			responses := 0
			for _, ev := range strings.Split(rec.Body.String(), "\n\n") {
				for _, line := range strings.Split(ev, "\n") {
					switch {
					case line == "", strings.HasPrefix(line, ":"):
					case strings.HasPrefix(line, "data: "):
						frame := []byte(strings.TrimPrefix(line, "data: "))
						if id, isResp := fuzzCheckMessage(t, frame); isResp {
							responses++
							checkID(id, frame)
						}
					default:
						t.Fatalf("unexpected SSE line %q", line)
					}
				}
			}
			if responses > 1 {
				t.Fatalf("%d responses on one stream", responses)
			}
		default:
			if ct != "application/json" {
				t.Fatalf("HTTP %d with Content-Type %q", status, ct)
			}
			id, isResp := fuzzCheckMessage(t, rec.Body.Bytes())
			if !isResp {
				t.Fatalf("a JSON answer that is not a response: %q", rec.Body.Bytes())
			}
			checkID(id, rec.Body.Bytes())
			var m struct {
				Error *struct{ Code int }
			}
			_ = json.Unmarshal(rec.Body.Bytes(), &m)
			if m.Error == nil && status != http.StatusOK {
				t.Fatalf("a result with HTTP %d: %q", status, rec.Body.Bytes())
			}
		}
	})
}

// FuzzCursor sends arbitrary cursors to every list method (PageSize 1): an
// accepted cursor yields at most one item and a well-formed nextCursor, a
// refused one the fixed -32602 "Invalid cursor" with HTTP 400; never
// anything else.
func FuzzCursor(f *testing.F) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []string{"", enc("o:0"), enc("o:1"), enc("o:2"), enc("o:4"), enc("o:-1"), enc("o:+1"), enc("o:01"),
		enc("o:99999999999999999999"), enc("x:1"), "bzox", "bzox=", "!!", strings.Repeat("A", 5000), enc("o:1") + "\x00"} {
		for m := uint8(0); m < 4; m++ {
			f.Add(c, m)
		}
	}
	methods := []struct{ method, member string }{
		{"tools/list", "tools"}, {"prompts/list", "prompts"}, {"resources/list", "resources"}, {"resources/templates/list", "resourceTemplates"},
	}
	f.Fuzz(func(t *testing.T, cursor string, which uint8) {
		m := methods[int(which)%len(methods)]
		p := exactjson.Object(
			exactjson.Field("_meta", exactjson.Object(
				exactjson.Field(metaProtocolVersion, exactjson.String(ProtocolVersion)),
				exactjson.Field(metaClientCapabilities, exactjson.Object()))),
			exactjson.Field("cursor", exactjson.String(cursor)))
		b, err := exactjson.Encode(exactjson.Object(exactjson.Field("jsonrpc", exactjson.String("2.0")),
			exactjson.Field("id", exactjson.Int(1)), exactjson.Field("method", exactjson.String(m.method)), exactjson.Field("params", p)), 0)
		if err != nil {
			return // not representable (invalid UTF-8)
		}
		rec := fuzzServe(b, fuzzHeaders(b, false))
		var res struct {
			Result json.RawMessage
			Error  *struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatalf("HTTP %d, not JSON: %q", rec.Code, rec.Body.Bytes())
		}
		if res.Error != nil {
			if rec.Code != http.StatusBadRequest || Code(res.Error.Code) != CodeInvalidParams || res.Error.Message != "Invalid cursor" {
				t.Fatalf("cursor %q: HTTP %d %+v", cursor, rec.Code, *res.Error)
			}
			return
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("cursor %q: a result with HTTP %d", cursor, rec.Code)
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(res.Result, &page); err != nil {
			t.Fatal(err)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(page[m.member], &items); err != nil || len(items) > 1 {
			t.Fatalf("cursor %q: %s = %s", cursor, m.member, page[m.member])
		}
		if nc, ok := page["nextCursor"]; ok {
			var next string
			if err := json.Unmarshal(nc, &next); err != nil || next == "" {
				t.Fatalf("nextCursor %s", nc)
			}
			raw, err := base64.RawURLEncoding.DecodeString(next)
			if err != nil || !strings.HasPrefix(string(raw), "o:") {
				t.Fatalf("the server issued a cursor it cannot read: %q", next)
			}
		}
	})
}

// FuzzMetadataHeaders fuzzes the Mcp-Method, Mcp-Name and Mcp-Param-Region
// header values of a tools/call to the mirrored tool "echo" (region
// argument arg), as the HTTP transport decodes them (literal or Base64
// sentinel): the call is served exactly when every header decodes to its
// body value, and refused with 400/-32020 otherwise.
func FuzzMetadataHeaders(f *testing.F) {
	for _, s := range [][4]string{
		{"tools/call", "echo", "eu-west", "eu-west"},
		{"tools/call", hdr.Encode("echo"), hdr.Encode("é"), "é"},
		{"tools/call", "=?base64?ZWNobw==?=", "=?base64?ZXU=?=", "eu"},
		{"tools/call", "=?base64?ZWNobw?=", "eu", "eu"},
		{"tools/call", " echo", "eu", "eu"},
		{"tools/call", "echo", "=?base64?IGV1?=", " eu"},
		{"tools/call", "echo", "", ""},
		{"TOOLS/CALL", "echo", "eu", "eu"},
		{"tools/call", "Echo", "eu", "eu"},
		{"=?base64?dG9vbHMvY2FsbA==?=", "echo", "x", "x"},
		{"tools/call", "echo", "line\nbreak", "line\nbreak"},
		{"tools/call", "echo", hdr.Encode("=?base64?eA==?="), "=?base64?eA==?="},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, methodHdr, nameHdr, regionHdr, arg string) {
		p := exactjson.Object(
			exactjson.Field("_meta", exactjson.Object(
				exactjson.Field(metaProtocolVersion, exactjson.String(ProtocolVersion)),
				exactjson.Field(metaClientCapabilities, exactjson.Object()))),
			exactjson.Field("name", exactjson.String("echo")),
			exactjson.Field("arguments", exactjson.Object(exactjson.Field("region", exactjson.String(arg)))))
		b, err := exactjson.Encode(exactjson.Object(exactjson.Field("jsonrpc", exactjson.String("2.0")),
			exactjson.Field("id", exactjson.Int(1)), exactjson.Field("method", exactjson.String("tools/call")), exactjson.Field("params", p)), 0)
		if err != nil {
			return // arg is not valid UTF-8
		}
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json")
		h.Set("MCP-Protocol-Version", ProtocolVersion)
		h["Mcp-Method"] = []string{methodHdr}
		h["Mcp-Name"] = []string{nameHdr}
		h["Mcp-Param-Region"] = []string{regionHdr}
		rec := fuzzServe(b, h)
		var res struct {
			Result json.RawMessage
			Error  *struct{ Code Code }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatalf("HTTP %d, not JSON: %q", rec.Code, rec.Body.Bytes())
		}
		dm, errM := hdr.Decode(methodHdr)
		dn, errN := hdr.Decode(nameHdr)
		dr, errR := hdr.Decode(regionHdr)
		match := errM == nil && errN == nil && errR == nil && dm == "tools/call" && dn == "echo" && dr == arg
		switch {
		case match && (res.Error != nil || rec.Code != http.StatusOK):
			t.Fatalf("headers %q %q %q decode to the body values but the call failed: HTTP %d %s", methodHdr, nameHdr, regionHdr, rec.Code, rec.Body.Bytes())
		case !match && res.Error == nil:
			t.Fatalf("headers %q %q %q (decoded %q %q %q) differ from the body but the call was served", methodHdr, nameHdr, regionHdr, dm, dn, dr)
		case !match && (res.Error.Code != CodeHeaderMismatch || rec.Code != http.StatusBadRequest):
			t.Fatalf("a header mismatch answered HTTP %d code %d", rec.Code, res.Error.Code)
		}
	})
}
