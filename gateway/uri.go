package gateway

import (
	"strings"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// URI prefixing. An upstream's resource URIs and resource template URIs are
// exposed with the upstream's URI prefix inserted after the scheme:
//
//	scheme://rest  <->  scheme://PREFIX/rest
//
// (FastMCP's "path" form: resource://data becomes resource://github/data,
// file:///etc/hosts becomes file://github//etc/hosts). The rule is
// reversible: an exposed URI maps back by removing "PREFIX/" after the
// "://". A URI without "://" after a valid scheme cannot carry the prefix:
// such a resource or template is left out (and logged); such a URI inside
// a result is passed unchanged. With no prefix every URI is unchanged.

// uriMap maps the URIs of one upstream.
type uriMap struct{ prefix string }

// splitScheme splits uri at its "://", reporting false when what precedes
// it is not an RFC 3986 scheme (ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )).
func splitScheme(uri string) (scheme, rest string, ok bool) {
	i := strings.Index(uri, "://")
	if i <= 0 {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		c := uri[j]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", "", false
		}
	}
	return uri[:i], uri[i+3:], true
}

// out returns the exposed URI (or URI template) of an upstream one,
// reporting false when it cannot carry the prefix.
func (m uriMap) out(uri string) (string, bool) {
	if m.prefix == "" {
		return uri, true
	}
	scheme, rest, ok := splitScheme(uri)
	if !ok {
		return "", false
	}
	return scheme + "://" + m.prefix + "/" + rest, true
}

// outOr returns the exposed URI of uri, or uri when it cannot carry the
// prefix (URIs inside results).
func (m uriMap) outOr(uri string) string {
	if e, ok := m.out(uri); ok {
		return e
	}
	return uri
}

// in returns the upstream URI of an exposed one, reporting false when the
// URI is not under the prefix.
func (m uriMap) in(uri string) (string, bool) {
	if m.prefix == "" {
		return uri, true
	}
	scheme, rest, ok := splitScheme(uri)
	if !ok {
		return "", false
	}
	rest, ok = strings.CutPrefix(rest, m.prefix+"/")
	if !ok {
		return "", false
	}
	return scheme + "://" + rest, true
}

// content maps the URI of a resource link or embedded resource.
func (m uriMap) content(c *weft.Content) {
	if c.Link != nil {
		c.Link.URI = m.outOr(c.Link.URI)
	}
	if c.Resource != nil {
		c.Resource.URI = m.outOr(c.Resource.URI)
	}
}

// toolMeta maps the UI resource an MCP Apps tool names
// (_meta.ui.resourceUri, and the deprecated flat "ui/resourceUri").
func (m uriMap) toolMeta(meta exactjson.Value) exactjson.Value {
	if m.prefix == "" || meta.Kind() != exactjson.KindObject {
		return meta
	}
	if ui, ok := meta.Get("ui"); ok && ui.Kind() == exactjson.KindObject {
		if s := str(ui, "resourceUri"); s != "" {
			meta = meta.With("ui", ui.With("resourceUri", exactjson.String(m.outOr(s))))
		}
	}
	if s := str(meta, "ui/resourceUri"); s != "" {
		meta = meta.With("ui/resourceUri", exactjson.String(m.outOr(s)))
	}
	return meta
}

// resultJSON maps the URIs of the content blocks of a tool result in JSON
// (a relayed task's result).
func (m uriMap) resultJSON(v exactjson.Value) exactjson.Value {
	if m.prefix == "" || v.Kind() != exactjson.KindObject {
		return v
	}
	cs, ok := v.Get("content")
	if !ok || cs.Kind() != exactjson.KindArray {
		return v
	}
	els := cs.Elements()
	out := make([]exactjson.Value, len(els))
	for i, c := range els {
		out[i] = c
		switch str(c, "type") {
		case "resource_link":
			if s := str(c, "uri"); s != "" {
				out[i] = c.With("uri", exactjson.String(m.outOr(s)))
			}
		case "resource":
			if r, ok := c.Get("resource"); ok && r.Kind() == exactjson.KindObject {
				if s := str(r, "uri"); s != "" {
					out[i] = c.With("resource", r.With("uri", exactjson.String(m.outOr(s))))
				}
			}
		}
	}
	return v.With("content", exactjson.Array(out...))
}
