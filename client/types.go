package client

import (
	"slices"
	"strings"

	"github.com/weftmcp/weft/exactjson"
)

// ContentBlock is one content item of a tool result or prompt message.
type ContentBlock struct {
	Type     string // text, image, audio, resource, resource_link, ...
	Text     string // text blocks
	Data     string // base64 data of image and audio blocks
	MimeType string
	// Resource is the embedded resource of a "resource" block; URI is the
	// link of a "resource_link" block or the embedded resource's URI.
	Resource exactjson.Value
	URI      string
	Raw      exactjson.Value
}

func parseContent(v exactjson.Value) ContentBlock {
	b := ContentBlock{
		Type:     str(v, "type"),
		Text:     str(v, "text"),
		Data:     str(v, "data"),
		MimeType: str(v, "mimeType"),
		URI:      str(v, "uri"),
		Raw:      v,
	}
	if r, ok := v.Get("resource"); ok {
		b.Resource = r
		if b.URI == "" {
			b.URI = str(r, "uri")
		}
		if b.MimeType == "" {
			b.MimeType = str(r, "mimeType")
		}
	}
	return b
}

func parseContents(v exactjson.Value) []ContentBlock {
	var out []ContentBlock
	for e := range v.Values() {
		out = append(out, parseContent(e))
	}
	return out
}

// ToolResult is the result of tools/call.
type ToolResult struct {
	ResultType        string
	Content           []ContentBlock
	StructuredContent exactjson.Value // JSON null when absent
	IsError           bool
	// TaskID is set when the result was delivered through a task.
	TaskID string
	Meta   exactjson.Value
	Raw    exactjson.Value
}

// Text returns the text of the result's text blocks, joined by newlines.
func (r *ToolResult) Text() string { return joinText(r.Content) }

func joinText(blocks []ContentBlock) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func parseToolResult(v exactjson.Value) *ToolResult {
	content, _ := v.Get("content")
	sc, _ := v.Get("structuredContent")
	ie, _ := v.Get("isError")
	isErr, _ := ie.AsBool()
	meta, _ := v.Get("_meta")
	return &ToolResult{ResultType: resultType(v), Content: parseContents(content), StructuredContent: sc, IsError: isErr, Meta: meta, Raw: v}
}

// Tool is a tool definition from tools/list.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  exactjson.Value
	OutputSchema exactjson.Value
	Annotations  exactjson.Value
	Raw          exactjson.Value
}

func parseTool(v exactjson.Value) Tool {
	in, _ := v.Get("inputSchema")
	out, _ := v.Get("outputSchema")
	ann, _ := v.Get("annotations")
	return Tool{Name: str(v, "name"), Title: str(v, "title"), Description: str(v, "description"),
		InputSchema: in, OutputSchema: out, Annotations: ann, Raw: v}
}

// DiscoverResult is the result of server/discover.
type DiscoverResult struct {
	SupportedVersions []string
	Capabilities      exactjson.Value
	Instructions      string
	ServerInfo        exactjson.Value // _meta serverInfo, JSON null when absent
	TTLMillis         int64
	CacheScope        string
	Raw               exactjson.Value
}

func parseDiscover(v exactjson.Value) *DiscoverResult {
	d := &DiscoverResult{Instructions: str(v, "instructions"), CacheScope: str(v, "cacheScope"), Raw: v}
	sv, _ := v.Get("supportedVersions")
	for e := range sv.Values() {
		if s, ok := e.AsString(); ok {
			d.SupportedVersions = append(d.SupportedVersions, s)
		}
	}
	d.Capabilities, _ = v.Get("capabilities")
	d.ServerInfo, _ = metaOf(v).Get(metaServerInfo)
	d.TTLMillis, _ = integer(v, "ttlMs")
	return d
}

// SupportsExtension reports whether the server declared extension id.
func (d *DiscoverResult) SupportsExtension(id string) bool {
	ext, _ := d.Capabilities.Get("extensions")
	return ext.Has(id)
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string
	Content ContentBlock
}

// PromptResult is the result of prompts/get.
type PromptResult struct {
	Description string
	Messages    []PromptMessage
	Raw         exactjson.Value
}

// Text returns the text of the prompt's text messages, joined by newlines.
func (r *PromptResult) Text() string {
	blocks := make([]ContentBlock, len(r.Messages))
	for i, m := range r.Messages {
		blocks[i] = m.Content
	}
	return joinText(blocks)
}

func parsePromptResult(v exactjson.Value) *PromptResult {
	p := &PromptResult{Description: str(v, "description"), Raw: v}
	msgs, _ := v.Get("messages")
	for m := range msgs.Values() {
		c, _ := m.Get("content")
		p.Messages = append(p.Messages, PromptMessage{Role: str(m, "role"), Content: parseContent(c)})
	}
	return p
}

// ResourceContents is one item of a resources/read result.
type ResourceContents struct {
	URI      string
	MimeType string
	Text     string // text contents
	Blob     string // base64 of binary contents
	Raw      exactjson.Value
}

// ResourceResult is the result of resources/read.
type ResourceResult struct {
	Contents   []ResourceContents
	TTLMillis  int64
	CacheScope string
	Raw        exactjson.Value
}

// Text joins the text of the text contents with newlines.
func (r *ResourceResult) Text() string {
	var parts []string
	for _, c := range r.Contents {
		if _, blob := c.Raw.Get("blob"); !blob {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func parseResourceResult(v exactjson.Value) *ResourceResult {
	r := &ResourceResult{CacheScope: str(v, "cacheScope"), Raw: v}
	r.TTLMillis, _ = integer(v, "ttlMs")
	cs, _ := v.Get("contents")
	for c := range cs.Values() {
		r.Contents = append(r.Contents, ResourceContents{URI: str(c, "uri"), MimeType: str(c, "mimeType"),
			Text: str(c, "text"), Blob: str(c, "blob"), Raw: c})
	}
	return r
}

// Completion is the result of completion/complete.
type Completion struct {
	Values  []string
	Total   int64 // 0 when absent
	HasMore bool
	Raw     exactjson.Value
}

func parseCompletion(v exactjson.Value) *Completion {
	cv, _ := v.Get("completion")
	out := &Completion{Raw: v}
	vals, _ := cv.Get("values")
	for e := range vals.Values() {
		if s, ok := e.AsString(); ok {
			out.Values = append(out.Values, s)
		}
	}
	out.Total, _ = integer(cv, "total")
	hm, _ := cv.Get("hasMore")
	out.HasMore, _ = hm.AsBool()
	return out
}

// str returns member name of v as a string ("" when absent or not a string).
func str(v exactjson.Value, name string) string {
	m, _ := v.Get(name)
	s, _ := m.AsString()
	return s
}

// num returns member name of v as a float64 (0 when absent).
func num(v exactjson.Value, name string) float64 {
	m, _ := v.Get(name)
	n, ok := m.AsNumber()
	if !ok {
		return 0
	}
	return n.Float64()
}

// integer returns member name of v as an int64.
func integer(v exactjson.Value, name string) (int64, bool) {
	m, _ := v.Get(name)
	n, ok := m.AsNumber()
	if !ok {
		return 0, false
	}
	return n.Int64()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
