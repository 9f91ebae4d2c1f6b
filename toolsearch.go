package weft

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/weftmcp/weft/exactjson"
)

// Tool search: progressive discovery of a large catalog. With
// Options.ToolSearch set, tools/list shows a small set of tools and a search
// tool; the search tool returns the definitions of the tools that match a
// query, which the client then calls by name (every tool stays callable).

// DefaultToolSearchName is the name of the search tool when
// ToolSearch.Name is empty (FastMCP's name for the same tool).
const DefaultToolSearchName = "search_tools"

// DefaultToolSearchResults is the number of definitions one search
// returns when ToolSearch.MaxResults is 0; MaxToolSearchResults is the most
// it may be set to.
const (
	DefaultToolSearchResults = 10
	MaxToolSearchResults     = 100
)

// ToolSearch configures progressive discovery ([Options.ToolSearch]): for
// catalogs of hundreds of tools, whose full list costs a model's context
// more than the tools it needs. tools/list then shows only the search tool
// and the Listed tools; the search tool takes a query and answers with the
// matching tools' definitions (as tools/list gives them: name, description,
// schemas) in its structuredContent; the client calls a found tool by name
// with tools/call as usual. Hidden tools are left out of lists only: calls,
// visibility ([Options.Visible], admission) and the response cache work as
// without a search tool. The JSON names are those of the gateway's
// configuration file.
type ToolSearch struct {
	// Name is the search tool's name. Default DefaultToolSearchName. The
	// server registers the search tool under it when it is created; a tool
	// registered later under the same name replaces it.
	Name string `json:"name,omitempty"`
	// Listed are path.Match patterns on tool names: the tools listed
	// besides the search tool (a group such as a gateway prefix,
	// "github_*", or the few tools every conversation needs). Default:
	// none.
	Listed []string `json:"listed,omitempty"`
	// MaxResults bounds the definitions one search returns (the caller may
	// ask for fewer). Default DefaultToolSearchResults, at most
	// MaxToolSearchResults.
	MaxResults int `json:"maxResults,omitempty"`
}

// toolSearch is a resolved ToolSearch.
type toolSearch struct {
	name   string
	listed []string
	max    int
}

// resolveToolSearch checks a ToolSearch and fills in its defaults.
func resolveToolSearch(ts *ToolSearch) (*toolSearch, error) {
	r := &toolSearch{name: cmp.Or(ts.Name, DefaultToolSearchName), listed: slices.Clone(ts.Listed), max: cmp.Or(ts.MaxResults, DefaultToolSearchResults)}
	var errs []error
	if !validToolName(r.name) {
		errs = append(errs, fmt.Errorf("weft: Options.ToolSearch.Name %q must be 1-128 characters of A-Z a-z 0-9 _ . -", r.name))
	}
	if r.max < 1 || r.max > MaxToolSearchResults {
		errs = append(errs, fmt.Errorf("weft: Options.ToolSearch.MaxResults = %d is outside 1..%d (0 means the default)", ts.MaxResults, MaxToolSearchResults))
	}
	for _, p := range r.listed {
		if _, err := path.Match(p, ""); err != nil {
			errs = append(errs, fmt.Errorf("weft: Options.ToolSearch.Listed pattern %q: %w", p, err))
		}
	}
	return r, errors.Join(errs...)
}

// lists reports whether tools/list shows the tool called name.
func (ts *toolSearch) lists(name string) bool {
	if name == ts.name {
		return true
	}
	for _, p := range ts.listed {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// toolSearchInput is the search tool's input schema.
const toolSearchInput = `{"type":"object","properties":{` +
	`"query":{"type":"string","minLength":1,"maxLength":1024,"description":"Words describing what the tool should do: matched against tool names, titles, descriptions and parameter names and descriptions."},` +
	`"limit":{"type":"integer","minimum":1,"maximum":100,"description":"At most this many tools (default and ceiling: the server's)."}},` +
	`"required":["query"],"additionalProperties":false}`

// toolSearchOutput is the search tool's output schema.
const toolSearchOutput = `{"type":"object","properties":{"tools":{"type":"array","items":{"type":"object"}}},"required":["tools"]}`

// addToolSearch registers the search tool.
func (s *Server) addToolSearch() error {
	ts := s.search
	return s.addTool(Tool{
		Name:  ts.name,
		Title: "Search tools",
		Description: "Finds the tools of this server that match a query and returns their definitions " +
			"(name, description, input schema). Only a few tools are listed: search first, then call a tool you found by its name.",
		InputSchema:  []byte(toolSearchInput),
		OutputSchema: []byte(toolSearchOutput),
		Annotations:  &ToolAnnotations{ReadOnlyHint: ptr(true), OpenWorldHint: ptr(false)},
	}, true, s.handleToolSearch)
}

func ptr[T any](v T) *T { return &v }

// handleToolSearch answers the search tool: the visible tools that match
// the query, best first, as many as fit the limit and the output bound.
func (s *Server) handleToolSearch(ctx context.Context, req *Request) (*CallToolResult, error) {
	args := req.Arguments()
	qv, _ := args.Get("query")
	query, _ := qv.AsString()
	limit := s.search.max
	if lv, ok := args.Get("limit"); ok {
		if num, ok := lv.AsNumber(); ok {
			if n, ok := num.Int64(); ok && n >= 1 && n < int64(limit) {
				limit = int(n)
			}
		}
	}
	terms := searchTerms(query)
	whole := strings.ToLower(strings.TrimSpace(query))
	if len(terms) == 0 {
		return &CallToolResult{IsError: true, Content: []Content{TextContent("The query has no words to search for: describe the tool wanted, e.g. \"create invoice\".")}}, nil
	}
	s.mu.RLock()
	all := s.tools.list()
	s.mu.RUnlock()
	type hit struct {
		e     *toolEntry
		score int
		order int
	}
	var hits []hit
	for i, e := range all {
		if e.tool.Name == s.search.name {
			continue
		}
		if sc := e.searchScore(whole, terms); sc > 0 && s.Visible(ctx, req, KindTool, e.tool.Name) {
			hits = append(hits, hit{e, sc, i})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return cmp.Compare(b.score, a.score) })
	// The definitions are sent twice (structuredContent and its text), so
	// each may use under half the output bound.
	budget := s.limits.MaxOutputBytes/2 - 1024
	e := &enc{nums: &s.limits.JSON, era: req.era}
	e.b = append(e.b, `{"tools":[`...)
	found, left := 0, 0
	for _, h := range hits {
		if found == limit {
			left++
			continue
		}
		mark := len(e.b)
		if found > 0 {
			e.b = append(e.b, ',')
		}
		h.e.tool.encode(e)
		if e.err != nil {
			return nil, fmt.Errorf("weft: %s: encoding tool %q: %w", s.search.name, h.e.tool.Name, e.err)
		}
		if len(e.b) > budget {
			e.b = e.b[:mark]
			left++
			continue
		}
		found++
	}
	e.b = append(e.b, "]}"...)
	out, err := exactjson.Parse(e.b, exactjson.Limits{})
	if err != nil {
		return nil, fmt.Errorf("weft: %s: %w", s.search.name, err)
	}
	if left > 0 {
		out = out.With("more", exactjson.Int(int64(left)))
	}
	return &CallToolResult{Content: []Content{TextContent(string(e.b))}, StructuredContent: out}, nil
}

// searchTerms are the lower-case words of a query.
func searchTerms(query string) []string {
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	slices.Sort(words)
	return slices.Compact(words)
}

// searchScore rates how well a tool matches a query (whole, lower case) and
// its terms: three points for each term in its name, one for each in its
// title, description or parameters, and the name asked for exactly before
// any other; 0 means no match.
func (e *toolEntry) searchScore(whole string, terms []string) int {
	e.searchOnce.Do(func() {
		e.searchName = strings.ToLower(e.tool.Name)
		var b strings.Builder
		b.WriteString(strings.ToLower(e.tool.Title))
		b.WriteByte('\n')
		b.WriteString(strings.ToLower(e.tool.Description))
		if in, err := exactjson.Parse(e.tool.InputSchema, exactjson.Limits{}); err == nil {
			props, _ := in.Get("properties")
			for k, v := range props.All() {
				b.WriteByte('\n')
				b.WriteString(strings.ToLower(k))
				if d, ok := v.Get("description"); ok {
					ds, _ := d.AsString()
					b.WriteByte(' ')
					b.WriteString(strings.ToLower(ds))
				}
			}
		}
		e.searchText = b.String()
	})
	score := 0
	if whole == e.searchName {
		score = 1 << 20
	}
	for _, t := range terms {
		if strings.Contains(e.searchName, t) {
			score += 3
		} else if strings.Contains(e.searchText, t) {
			score++
		}
	}
	return score
}
