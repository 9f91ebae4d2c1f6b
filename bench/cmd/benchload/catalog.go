package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/bench/servers"
	"github.com/weftmcp/weft/gateway"
	"github.com/weftmcp/weft/openapi"
)

// Large catalogs (issue #28 item 4): list, lookup and call cost of an
// OpenAPI catalog and a gateway catalog at 10 and 1,000 tools, in memory
// (the front server's ServeHTTP); the upstream API (OpenAPI) and the
// upstream MCP server (gateway) answer over loopback. Both servers have
// weft.Options.ToolSearch with every tool listed, so that one server gives
// the full list and the search tool.

// catalogSizes are the catalog sizes measured.
var catalogSizes = []int{10, 1000}

// catalogGroups are the tags (OpenAPI) and tool-name words of the
// generated catalogs.
var catalogGroups = []string{"billing", "crm", "storage", "dns", "mail", "search", "auth", "metrics", "queue", "cdn"}

// catalogDoc is an OpenAPI 3.1 document of n POST operations, each with a
// path parameter and a JSON body referring to a shared schema, tagged by
// group.
func catalogDoc(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"openapi":"3.1.0","info":{"title":"Catalog","version":"1"},"paths":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		g := catalogGroups[i%len(catalogGroups)]
		fmt.Fprintf(&b, `"/%s/things%d/{id}":{"post":{"operationId":"%s_update_thing%d","summary":"Updates a %s thing (%d).","tags":["%s"],`+
			`"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],`+
			`"requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Thing"}}}},`+
			`"responses":{"200":{"description":"OK","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Thing"}}}}}}}`,
			g, i, g, i, g, i, g)
	}
	b.WriteString(`},"components":{"schemas":{"Thing":{"type":"object","properties":{` +
		`"name":{"type":"string","description":"The thing's name."},"size":{"type":"integer","minimum":0},` +
		`"labels":{"type":"array","items":{"type":"string"}},"owner":{"type":"object","properties":{"id":{"type":"string"},"email":{"type":"string","format":"email"}}}}}}}}`)
	return []byte(b.String())
}

// catalogServer is one measured catalog: the front handler and what to stop.
type catalogServer struct {
	h     http.Handler
	close func()
	call  string // the called tool
	args  string // its arguments
}

// openAPICatalog serves catalogDoc(n) in front of an upstream that answers
// every request with a Thing.
func openAPICatalog(n int) (*catalogServer, error) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"a","size":1}`))
	}))
	api, err := openapi.New(catalogDoc(n), &openapi.Options{BaseURL: up.URL})
	if err != nil {
		up.Close()
		return nil, err
	}
	s, err := weft.NewServer(weft.Implementation{Name: "bench-openapi", Version: "1"},
		&weft.Options{Logger: discardLogger(), ToolSearch: &weft.ToolSearch{Listed: []string{"*"}}})
	if err != nil {
		up.Close()
		return nil, err
	}
	if err := api.Register(s); err != nil {
		up.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(servers.Path, s)
	mid := n / 2
	return &catalogServer{h: mux, close: up.Close, call: fmt.Sprintf("%s_update_thing%d", catalogGroups[mid%len(catalogGroups)], mid),
		args: `{"id":"x","body":{"name":"a","size":1}}`}, nil
}

// gatewayCatalog serves, through package gateway, an upstream Weft server
// of n tools.
func gatewayCatalog(ctx context.Context, n int) (*catalogServer, error) {
	upSrv, err := weft.NewServer(weft.Implementation{Name: "bench-upstream", Version: "1"}, &weft.Options{Logger: discardLogger()})
	if err != nil {
		return nil, err
	}
	echo := func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("ok")}}, nil
	}
	for i := range n {
		g := catalogGroups[i%len(catalogGroups)]
		schema := `{"type":"object","properties":{"id":{"type":"string","description":"The thing."},"name":{"type":"string"},"size":{"type":"integer","minimum":0}},"required":["id"]}`
		if err := upSrv.AddTool(weft.Tool{Name: fmt.Sprintf("%s_update_thing%d", g, i), Description: fmt.Sprintf("Updates a %s thing (%d).", g, i),
			InputSchema: []byte(schema)}, echo); err != nil {
			return nil, err
		}
	}
	upMux := http.NewServeMux()
	upMux.Handle(servers.Path, upSrv)
	up := httptest.NewServer(upMux)
	s, err := weft.NewServer(weft.Implementation{Name: "bench-gateway", Version: "1"},
		&weft.Options{Logger: discardLogger(), ToolSearch: &weft.ToolSearch{Listed: []string{"*"}}})
	if err != nil {
		up.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	gw, err := gateway.New(ctx, s, &gateway.Config{Upstreams: []gateway.UpstreamConfig{{Name: "upstream", URL: up.URL + servers.Path}}}, &gateway.Options{Logger: discardLogger()})

	if err != nil {
		up.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(servers.Path, s)
	mid := n / 2
	return &catalogServer{h: mux, close: func() { _ = gw.Close(); up.Close() },
		call: fmt.Sprintf("%s_update_thing%d", catalogGroups[mid%len(catalogGroups)], mid), args: `{"id":"x","name":"a"}`}, nil
}

// rpcResult is the part of a response the catalog rows check.
type rpcResult struct {
	Error  *struct{ Message string } `json:"error"`
	Result struct {
		Tools             []json.RawMessage `json:"tools"`
		NextCursor        string            `json:"nextCursor"`
		IsError           bool              `json:"isError"`
		StructuredContent struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"structuredContent"`
	} `json:"result"`
}

// withMeta adds the request _meta a 2026-07-28 request carries to a params
// object.
func withMeta(params string) string {
	sep := ","
	if params == "{}" {
		sep = ""
	}
	return strings.TrimSuffix(params, "}") + sep + `"_meta":` + servers.Meta(`{}`) + "}"
}

// do serves one request in memory and decodes the response.
func (c *catalogServer) do(method, name, params string) (*rpcResult, error) {
	p := servers.NewInProc(c.h, servers.NewCall(method, name, withMeta(params)))
	w := p.Do(1)
	if w.Code != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d: %s", method, w.Code, w.Body.Bytes())
	}
	var r rpcResult
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if r.Error != nil {
		return nil, fmt.Errorf("%s: %s", method, r.Error.Message)
	}
	return &r, nil
}

// listAll walks tools/list to its end and returns the tools seen.
func (c *catalogServer) listAll() (int, error) {
	n, cursor := 0, ""
	for range 1000 {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + strconv.Quote(cursor) + `}`
		}
		r, err := c.do("tools/list", "", params)
		if err != nil {
			return 0, err
		}
		n += len(r.Result.Tools)
		if cursor = r.Result.NextCursor; cursor == "" {
			return n, nil
		}
	}
	return 0, fmt.Errorf("tools/list does not end")
}

// catalogRows measures both catalogs at each size.
func catalogRows(ctx context.Context, rounds int) ([]micro, error) {
	var benches []bench
	for _, kind := range []string{"OpenAPI", "gateway"} {
		for _, n := range catalogSizes {
			var c *catalogServer
			var err error
			if kind == "OpenAPI" {
				c, err = openAPICatalog(n)
			} else {
				c, err = gatewayCatalog(ctx, n)
			}
			if err != nil {
				return nil, fmt.Errorf("%s catalog of %d tools: %w", kind, n, err)
			}
			defer c.close()
			// Check what is measured: the full list, a search that finds
			// the called tool first, and the call.
			if got, err := c.listAll(); err != nil || got != n+1 {
				return nil, fmt.Errorf("%s catalog of %d tools lists %d tools (want %d with search_tools): %v", kind, n, got, n+1, err)
			}
			query := `{"name":"search_tools","arguments":{"query":"` + c.call + `"}}`
			r, err := c.do("tools/call", "search_tools", query)
			if err != nil || len(r.Result.StructuredContent.Tools) == 0 || r.Result.StructuredContent.Tools[0].Name != c.call {
				return nil, fmt.Errorf("%s catalog of %d tools: search_tools does not find %s first: %+v %v", kind, n, c.call, r, err)
			}
			call := `{"name":` + strconv.Quote(c.call) + `,"arguments":` + c.args + `}`
			if r, err := c.do("tools/call", c.call, call); err != nil || r.Result.IsError {
				return nil, fmt.Errorf("%s catalog of %d tools: calling %s: %+v %v", kind, n, c.call, r, err)
			}
			label := fmt.Sprintf("%s, %d tools: ", kind, n)
			benches = append(benches,
				bench{name: label + "tools/list, every page", op: func() error { _, err := c.listAll(); return err }},
				bench{name: label + "search_tools (lookup)", op: inProcOp(c.h, "tools/call", "search_tools", query)},
				bench{name: label + "tools/call", op: inProcOp(c.h, "tools/call", c.call, call)})
		}
	}
	return runMicro(rounds, benches)
}

// inProcOp serves one request in memory and checks its status.
func inProcOp(h http.Handler, method, name, params string) func() error {
	p := servers.NewInProc(h, servers.NewCall(method, name, withMeta(params)))
	id := int64(1)
	return func() error {
		id++
		w := p.Do(id)
		if w.Code != http.StatusOK || bytes.Contains(w.Body.Bytes(), []byte(`"error":`)) {
			return fmt.Errorf("%s: HTTP %d: %.300s", method, w.Code, w.Body.Bytes())
		}
		return nil
	}
}

// catalogMarkdown is the report's large-catalog section.
func (r *report) catalogMarkdown(p func(string, ...any)) {
	if len(r.catalog) == 0 {
		return
	}
	p("## Large catalogs (issue #28)\n\n")
	p("An OpenAPI catalog (`openapi.New` of a generated 3.1 document: POST operations with a path parameter and a JSON body referring to a shared schema, "+
		"ten tags) and a gateway catalog (`gateway.New` in front of a Weft server with as many tools), at 10 and 1,000 tools, in memory through the front server's "+
		"ServeHTTP; the upstream API and the upstream MCP server answer over loopback. `weft.Options.ToolSearch` with every tool listed: "+
		"tools/list walks every page (the list plus `search_tools`), the lookup is a `search_tools` call whose query is the called tool's name "+
		"(it scans and ranks the whole catalog), the call is a tools/call of the middle tool. Medians of %d rounds; CPU is the whole process's "+
		"(the upstream's included).\n\n", r.cfg.rounds)
	p("| row | wall/op | CPU/op | B/op | allocs/op |\n|---|---:|---:|---:|---:|\n")
	for _, m := range r.catalog {
		p("| %s | %s | %s | %d | %d |\n", m.name, fmtDur(m.ns), fmtDur(m.cpu), m.bytes, m.allocs)
	}
	p("\n")
}

// discardLogger drops the catalog servers' logs.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
