package gateway

import (
	"encoding/base64"
	"fmt"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// Conversions of upstream results (JSON) into the root package's result
// types, which the gateway's server encodes for its own clients.

// The URIs of resource links and embedded resources are mapped with m.

func toolResult(v exactjson.Value, m uriMap) (*weft.CallToolResult, error) {
	out := &weft.CallToolResult{}
	cs, _ := v.Get("content")
	for c := range cs.Values() {
		blk, err := content(c)
		if err != nil {
			return nil, err
		}
		m.content(&blk)
		out.Content = append(out.Content, blk)
	}
	out.StructuredContent, _ = v.Get("structuredContent")
	if ie, ok := v.Get("isError"); ok {
		out.IsError, _ = ie.AsBool()
	}
	out.Meta, _ = v.Get("_meta")
	return out, nil
}

func content(c exactjson.Value) (weft.Content, error) {
	t := str(c, "type")
	blk := weft.Content{Type: t, MimeType: str(c, "mimeType")}
	blk.Meta, _ = c.Get("_meta")
	if a, ok := c.Get("annotations"); ok {
		blk.Annotations = annotations(a)
	}
	switch t {
	case "text":
		blk.Text = str(c, "text")
	case "image", "audio":
		d, err := base64.StdEncoding.DecodeString(str(c, "data"))
		if err != nil {
			return blk, fmt.Errorf("the upstream sent %s content whose data is not base64: %w", t, err)
		}
		blk.Data = d
	case "resource":
		r, _ := c.Get("resource")
		rc, err := resourceContents(r)
		if err != nil {
			return blk, err
		}
		blk.Resource = &rc
	case "resource_link":
		info := resourceInfo(c)
		blk.Link = &info
	default:
		return blk, fmt.Errorf("the upstream sent content of type %q, which the gateway does not relay", t)
	}
	return blk, nil
}

func annotations(a exactjson.Value) *weft.Annotations {
	out := &weft.Annotations{LastModified: str(a, "lastModified")}
	aud, _ := a.Get("audience")
	for v := range aud.Values() {
		if s, ok := v.AsString(); ok {
			out.Audience = append(out.Audience, s)
		}
	}
	if p, ok := a.Get("priority"); ok {
		if n, ok := p.AsNumber(); ok {
			f := n.Float64()
			out.Priority = &f
		}
	}
	return out
}

func resourceContents(r exactjson.Value) (weft.ResourceContents, error) {
	rc := weft.ResourceContents{URI: str(r, "uri"), MimeType: str(r, "mimeType"), Text: str(r, "text")}
	rc.Meta, _ = r.Get("_meta")
	if b, ok := r.Get("blob"); ok {
		s, _ := b.AsString()
		d, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return rc, fmt.Errorf("the upstream sent a resource blob that is not base64: %w", err)
		}
		if d == nil {
			d = []byte{}
		}
		rc.Blob = d
	}
	return rc, nil
}

func resourceInfo(r exactjson.Value) weft.ResourceInfo {
	info := weft.ResourceInfo{URI: str(r, "uri"), Name: str(r, "name"), Title: str(r, "title"),
		Description: str(r, "description"), MimeType: str(r, "mimeType")}
	if sz, ok := r.Get("size"); ok {
		if n, ok := sz.AsNumber(); ok {
			info.Size, _ = n.Int64()
		}
	}
	if a, ok := r.Get("annotations"); ok {
		info.Annotations = annotations(a)
	}
	info.Meta, _ = r.Get("_meta")
	return info
}

func promptResult(v exactjson.Value, m uriMap) (*weft.GetPromptResult, error) {
	out := &weft.GetPromptResult{Description: str(v, "description")}
	out.Meta, _ = v.Get("_meta")
	msgs, _ := v.Get("messages")
	for msg := range msgs.Values() {
		c, _ := msg.Get("content")
		blk, err := content(c)
		if err != nil {
			return nil, err
		}
		m.content(&blk)
		out.Messages = append(out.Messages, weft.PromptMessage{Role: weft.Role(str(msg, "role")), Content: blk})
	}
	return out, nil
}

func readResult(v exactjson.Value, m uriMap) (*weft.ReadResourceResult, error) {
	out := &weft.ReadResourceResult{}
	out.Meta, _ = v.Get("_meta")
	cs, _ := v.Get("contents")
	for c := range cs.Values() {
		rc, err := resourceContents(c)
		if err != nil {
			return nil, err
		}
		rc.URI = m.outOr(rc.URI)
		out.Contents = append(out.Contents, rc)
	}
	return out, nil
}

// toolDef converts an upstream tool definition; the UI resource of an MCP
// Apps tool is mapped with m.
func toolDef(v exactjson.Value, name string, m uriMap) (weft.Tool, error) {
	t := weft.Tool{Name: name, Title: str(v, "title"), Description: str(v, "description")}
	if t.Description == "" {
		t.Description = t.Title
	}
	if t.Description == "" {
		t.Description = "Tool " + str(v, "name") + " of an upstream server."
	}
	if s, ok := v.Get("inputSchema"); ok {
		b, err := exactjson.Encode(s, 0)
		if err != nil {
			return t, err
		}
		t.InputSchema = b
	}
	if s, ok := v.Get("outputSchema"); ok {
		b, err := exactjson.Encode(s, 0)
		if err != nil {
			return t, err
		}
		t.OutputSchema = b
	}
	if a, ok := v.Get("annotations"); ok && a.Kind() == exactjson.KindObject {
		ann := &weft.ToolAnnotations{Title: str(a, "title")}
		hint := func(k string) *bool {
			h, ok := a.Get(k)
			if !ok {
				return nil
			}
			b, ok := h.AsBool()
			if !ok {
				return nil
			}
			return &b
		}
		ann.ReadOnlyHint, ann.DestructiveHint = hint("readOnlyHint"), hint("destructiveHint")
		ann.IdempotentHint, ann.OpenWorldHint = hint("idempotentHint"), hint("openWorldHint")
		t.Annotations = ann
	}
	t.Meta, _ = v.Get("_meta")
	t.Meta = m.toolMeta(t.Meta)
	return t, nil
}

func promptDef(v exactjson.Value, name string) weft.Prompt {
	p := weft.Prompt{Name: name, Title: str(v, "title"), Description: str(v, "description")}
	p.Meta, _ = v.Get("_meta")
	args, _ := v.Get("arguments")
	for a := range args.Values() {
		req, _ := a.Get("required")
		r, _ := req.AsBool()
		p.Arguments = append(p.Arguments, weft.PromptArgument{Name: str(a, "name"), Title: str(a, "title"),
			Description: str(a, "description"), Required: r})
	}
	return p
}
