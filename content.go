package weft

import (
	"github.com/weftmcp/weft/exactjson"
)

// Content is one content block of a tool result or prompt message: text,
// image, audio, an embedded resource or a resource link. Build it with
// [TextContent], [ImageContent], [AudioContent], [EmbeddedResource] or
// [ResourceLinkContent].
type Content struct {
	// Type is "text", "image", "audio", "resource" or "resource_link".
	Type string
	// Text is the text of a text block.
	Text string
	// Data is the binary data of an image or audio block (sent as base64).
	Data []byte
	// MimeType is the media type of image, audio and resource-link blocks.
	MimeType string
	// Resource is the embedded resource of a "resource" block.
	Resource *ResourceContents
	// Link is the linked resource of a "resource_link" block.
	Link *ResourceInfo
	// Annotations are optional audience/priority hints.
	Annotations *Annotations
	// Meta is the block's _meta; null when absent.
	Meta exactjson.Value
}

// Annotations are optional hints on content and resources.
type Annotations struct {
	Audience     []string // "user", "assistant"
	Priority     *float64 // 0..1
	LastModified string   // ISO 8601
}

// TextContent returns a text block.
func TextContent(text string) Content { return Content{Type: "text", Text: text} }

// TextResult returns a tool result of one text block, the most common
// answer of an untyped tool handler.
func TextResult(text string) *CallToolResult {
	return &CallToolResult{Content: []Content{TextContent(text)}}
}

// ImageContent returns an image block.
func ImageContent(data []byte, mimeType string) Content {
	return Content{Type: "image", Data: data, MimeType: mimeType}
}

// AudioContent returns an audio block.
func AudioContent(data []byte, mimeType string) Content {
	return Content{Type: "audio", Data: data, MimeType: mimeType}
}

// EmbeddedResource returns a block embedding resource contents.
func EmbeddedResource(rc ResourceContents) Content { return Content{Type: "resource", Resource: &rc} }

// ResourceLinkContent returns a block linking to a resource.
func ResourceLinkContent(info ResourceInfo) Content {
	return Content{Type: "resource_link", Link: &info}
}

func (c *Content) encode(e *enc) {
	e.open()
	e.str("type", c.Type)
	switch c.Type {
	case "text":
		e.str("text", c.Text)
	case "image", "audio":
		e.blob("data", c.Data)
		e.str("mimeType", c.MimeType)
	case "resource":
		if c.Resource != nil {
			e.name("resource")
			c.Resource.encode(e)
		}
	case "resource_link":
		if c.Link != nil {
			c.Link.encodeFields(e)
		}
	}
	if c.Annotations != nil {
		e.name("annotations")
		c.Annotations.encode(e)
	}
	e.valueOpt("_meta", c.Meta)
	e.close()
}

func (a *Annotations) encode(e *enc) {
	e.open()
	if len(a.Audience) > 0 {
		e.goValue("audience", a.Audience)
	}
	if a.Priority != nil {
		e.goValue("priority", *a.Priority)
	}
	e.strOpt("lastModified", a.LastModified)
	e.close()
}

// ResourceContents is the content of a resource: text, or a binary blob.
type ResourceContents struct {
	URI      string
	MimeType string
	Text     string
	Blob     []byte // when non-nil the contents are binary
	Meta     exactjson.Value
}

// TextResource returns text resource contents.
func TextResource(uri, mimeType, text string) ResourceContents {
	return ResourceContents{URI: uri, MimeType: mimeType, Text: text}
}

// BlobResource returns binary resource contents.
func BlobResource(uri, mimeType string, blob []byte) ResourceContents {
	if blob == nil {
		blob = []byte{}
	}
	return ResourceContents{URI: uri, MimeType: mimeType, Blob: blob}
}

func (rc *ResourceContents) encode(e *enc) {
	e.open()
	e.str("uri", rc.URI)
	e.strOpt("mimeType", rc.MimeType)
	if rc.Blob != nil {
		e.blob("blob", rc.Blob)
	} else {
		e.str("text", rc.Text)
	}
	e.valueOpt("_meta", rc.Meta)
	e.close()
}

// CallToolResult is the complete result of tools/call.
type CallToolResult struct {
	Content []Content
	// StructuredContent is any JSON value; null when absent.
	StructuredContent exactjson.Value
	IsError           bool
	Meta              exactjson.Value
}

func (r *CallToolResult) encodeBody(e *enc) {
	e.name("content")
	e.b = append(e.b, '[')
	for i := range r.Content {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		r.Content[i].encode(e)
	}
	e.b = append(e.b, ']')
	if !e.era.objectsOnly() || r.StructuredContent.Kind() == exactjson.KindObject {
		// 2025-11-25 structured content is an object.
		e.valueOpt("structuredContent", r.StructuredContent)
	}
	if r.IsError {
		e.boolean("isError", true)
	}
}

// Role is the speaker of a prompt message.
type Role string

// The roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    Role
	Content Content
}

// GetPromptResult is the complete result of prompts/get.
type GetPromptResult struct {
	Description string
	Messages    []PromptMessage
	Meta        exactjson.Value
}

func (r *GetPromptResult) encodeBody(e *enc) {
	e.strOpt("description", r.Description)
	e.name("messages")
	e.b = append(e.b, '[')
	for i := range r.Messages {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.open()
		e.str("role", string(r.Messages[i].Role))
		e.name("content")
		r.Messages[i].Content.encode(e)
		e.close()
	}
	e.b = append(e.b, ']')
}

// ReadResourceResult is the complete result of resources/read.
type ReadResourceResult struct {
	Contents []ResourceContents
	// Cache overrides the resource's cache policy for this read.
	Cache *CachePolicy
	Meta  exactjson.Value
}

func (r *ReadResourceResult) encodeBody(e *enc) {
	e.name("contents")
	e.b = append(e.b, '[')
	for i := range r.Contents {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		r.Contents[i].encode(e)
	}
	e.b = append(e.b, ']')
}

// CachePolicy is the caching hint of a cacheable result (SEP-2549).
type CachePolicy struct {
	// TTLMillis is the freshness lifetime in milliseconds (0: immediately stale).
	TTLMillis int64
	// Public marks results without user-specific data, shareable across
	// authorization contexts. The default is private.
	Public bool
}

func (p CachePolicy) encode(e *enc) {
	e.integer("ttlMs", max(p.TTLMillis, 0))
	if p.Public {
		e.str("cacheScope", "public")
	} else {
		e.str("cacheScope", "private")
	}
}
