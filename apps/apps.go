// Package apps serves MCP Apps: interactive HTML user interfaces for tools
// (the io.modelcontextprotocol/ui extension, SEP-1865).
//
// An [App] is a ui:// resource holding an HTML5 document, served with the
// media type text/html;profile=mcp-app and with _meta.ui describing what
// the host must allow the sandboxed view: the origins of its Content
// Security Policy ([CSP]), browser [Permissions], a dedicated sandbox
// domain and a border preference. [Register] adds it to a server and
// declares the extension. [UITool] links a tool to the app that renders
// its results (_meta.ui.resourceUri) and says who may call it: the model,
// the app, or both.
//
// UI resources are served only to clients that declare the extension with
// the app media type on the request (capabilities.extensions
// ["io.modelcontextprotocol/ui"].mimeTypes): a read from any other client
// gets the same "Resource not found" error as an unknown URI. Install
// [Visible] as weft.Options.Visible to also hide ui:// resources, and
// app-only tools, from such clients' lists. Tools linked to an app stay
// listed for every client: they must work as plain tools (text content)
// where no UI is shown.
//
// The SEP text in the MCP repository defers to the ext-apps specification
// (specification/draft/apps.mdx), which this package follows. Tools get
// the nested _meta.ui.resourceUri only, not the deprecated flat
// "ui/resourceUri" key.
package apps

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// Identifiers of the extension.
const (
	// ExtensionID identifies the extension in capabilities.
	ExtensionID = "io.modelcontextprotocol/ui"
	// MimeType is the media type of an HTML app.
	MimeType = "text/html;profile=mcp-app"
	// Scheme is the URI scheme of UI resources.
	Scheme = "ui"
)

// Limits of App fields.
const (
	// MaxURIBytes bounds an app's URI.
	MaxURIBytes = 2048
	// MaxHTMLBytes bounds an app's document (4 MiB).
	MaxHTMLBytes = 4 << 20
	// MaxDomains bounds each CSP origin list.
	MaxDomains = 64
)

// Visibility says who may call a tool linked to an app.
type Visibility string

// The visibilities.
const (
	// VisibilityModel: the tool is listed for, and callable by, the model.
	VisibilityModel Visibility = "model"
	// VisibilityApp: the tool is callable by the app (from this server only).
	VisibilityApp Visibility = "app"
)

// UITool returns a copy of t whose _meta.ui links it to the UI resource at
// resourceURI, which renders its results, and lists who may call it.
// Without a visibility the SEP's default applies (model and app); with
// only VisibilityApp the tool is app-only (hosts keep it from the model;
// pass its name to [Visible] to hide it from clients without UI support
// too). Other _meta members of t are kept.
//
// UITool panics if resourceURI is not a ui:// URI, a visibility is unknown
// or repeated, or t.Meta is neither null nor an object: these are
// programming errors in static declarations, like a bad regexp.MustCompile
// pattern.
func UITool(t weft.Tool, resourceURI string, visibility ...Visibility) weft.Tool {
	if err := checkURI(resourceURI); err != nil {
		panic("apps: UITool " + t.Name + ": " + err.Error())
	}
	ui := []exactjson.Member{exactjson.Field("resourceUri", exactjson.String(resourceURI))}
	if len(visibility) > 0 {
		seen := map[Visibility]bool{}
		vs := make([]exactjson.Value, 0, len(visibility))
		for _, v := range visibility {
			if v != VisibilityModel && v != VisibilityApp || seen[v] {
				panic(fmt.Sprintf("apps: UITool %s: visibility %q is unknown or repeated", t.Name, v))
			}
			seen[v] = true
			vs = append(vs, exactjson.String(string(v)))
		}
		ui = append(ui, exactjson.Field("visibility", exactjson.Array(vs...)))
	}
	switch t.Meta.Kind() {
	case exactjson.KindNull:
		t.Meta = exactjson.Object()
	case exactjson.KindObject:
	default:
		panic("apps: UITool " + t.Name + ": Tool.Meta must be an object")
	}
	t.Meta = t.Meta.With("ui", exactjson.Object(ui...))
	return t
}

// CSP lists the origins an app's view may reach, beyond its own. Each
// entry is an origin: scheme (https, http, wss or ws), host and optional
// port, such as "https://api.example.com" or "wss://*.example.com:8443"; a
// leading "*." label is a subdomain wildcard. Empty lists leave the host's
// restrictive defaults in force.
type CSP struct {
	// ConnectDomains: fetch, XHR and WebSocket targets (connect-src).
	ConnectDomains []string
	// ResourceDomains: scripts, styles, images, fonts and media (script-src,
	// style-src, img-src, font-src, media-src).
	ResourceDomains []string
	// FrameDomains: nested iframes (frame-src); empty means none.
	FrameDomains []string
	// BaseURIDomains: allowed document base URIs (base-uri); empty means
	// the view's own origin.
	BaseURIDomains []string
}

// Permissions are the browser capabilities an app asks the host to grant
// its view (iframe allow attributes). Apps must not assume they are granted.
type Permissions struct {
	Camera         bool
	Microphone     bool
	Geolocation    bool
	ClipboardWrite bool
}

// Border is an app's preference for a host-drawn border and background.
type Border uint8

// The border preferences.
const (
	// BorderHost leaves prefersBorder out: the host decides.
	BorderHost Border = iota
	// BorderOn asks for a visible border and background (prefersBorder: true).
	BorderOn
	// BorderOff asks for none (prefersBorder: false).
	BorderOff
)

// App is an HTML user interface served as a UI resource.
type App struct {
	// URI is the resource URI; it must use the ui:// scheme.
	URI string
	// Name is the resource name; Title and Description are optional.
	Name        string
	Title       string
	Description string
	// HTML is the document: valid UTF-8 starting with <!DOCTYPE html>.
	HTML string
	// CSP lists the external origins the view needs.
	CSP CSP
	// Permissions are the browser capabilities the view asks for.
	Permissions Permissions
	// Domain is a dedicated sandbox origin for the view, in the format the
	// host documents (for example "a904794854a047f6.claudemcpcontent.com").
	Domain string
	// Border is the view's border preference.
	Border Border
	// Cache is the caching hint of reads (default: immediately stale, private).
	Cache weft.CachePolicy
}

// Meta returns the app's resource _meta: {"ui": {csp, permissions, domain,
// prefersBorder}} with the members that are set, or null when none is.
func (a App) Meta() exactjson.Value {
	var ui []exactjson.Member
	var csp []exactjson.Member
	for _, l := range []struct {
		name    string
		domains []string
	}{
		{"connectDomains", a.CSP.ConnectDomains},
		{"resourceDomains", a.CSP.ResourceDomains},
		{"frameDomains", a.CSP.FrameDomains},
		{"baseUriDomains", a.CSP.BaseURIDomains},
	} {
		if len(l.domains) > 0 {
			vs := make([]exactjson.Value, len(l.domains))
			for i, d := range l.domains {
				vs[i] = exactjson.String(d)
			}
			csp = append(csp, exactjson.Field(l.name, exactjson.Array(vs...)))
		}
	}
	if len(csp) > 0 {
		ui = append(ui, exactjson.Field("csp", exactjson.Object(csp...)))
	}
	var perms []exactjson.Member
	for _, p := range []struct {
		name string
		on   bool
	}{
		{"camera", a.Permissions.Camera},
		{"microphone", a.Permissions.Microphone},
		{"geolocation", a.Permissions.Geolocation},
		{"clipboardWrite", a.Permissions.ClipboardWrite},
	} {
		if p.on {
			perms = append(perms, exactjson.Field(p.name, exactjson.Object()))
		}
	}
	if len(perms) > 0 {
		ui = append(ui, exactjson.Field("permissions", exactjson.Object(perms...)))
	}
	if a.Domain != "" {
		ui = append(ui, exactjson.Field("domain", exactjson.String(a.Domain)))
	}
	if a.Border != BorderHost {
		ui = append(ui, exactjson.Field("prefersBorder", exactjson.Bool(a.Border == BorderOn)))
	}
	if len(ui) == 0 {
		return exactjson.Value{}
	}
	return exactjson.Object(exactjson.Field("ui", exactjson.Object(ui...)))
}

// Validate checks the app against the SEP and this package's limits.
func (a App) Validate() error {
	if err := checkURI(a.URI); err != nil {
		return fmt.Errorf("apps: app %q: %w", a.Name, err)
	}
	if strings.TrimSpace(a.Name) == "" {
		return fmt.Errorf("apps: app %s needs a name", a.URI)
	}
	if err := checkHTML(a.HTML); err != nil {
		return fmt.Errorf("apps: app %s: %w", a.URI, err)
	}
	for _, l := range []struct {
		name    string
		domains []string
	}{
		{"ConnectDomains", a.CSP.ConnectDomains},
		{"ResourceDomains", a.CSP.ResourceDomains},
		{"FrameDomains", a.CSP.FrameDomains},
		{"BaseURIDomains", a.CSP.BaseURIDomains},
	} {
		if len(l.domains) > MaxDomains {
			return fmt.Errorf("apps: app %s: CSP.%s has more than %d origins", a.URI, l.name, MaxDomains)
		}
		for _, d := range l.domains {
			if err := checkOrigin(d); err != nil {
				return fmt.Errorf("apps: app %s: CSP.%s: %w", a.URI, l.name, err)
			}
		}
	}
	if a.Domain != "" && !validHost(a.Domain, false) {
		return fmt.Errorf("apps: app %s: Domain %q is not a host name", a.URI, a.Domain)
	}
	if a.Border > BorderOff {
		return fmt.Errorf("apps: app %s: unknown Border %d", a.URI, a.Border)
	}
	if a.Cache.TTLMillis < 0 {
		return fmt.Errorf("apps: app %s: Cache.TTLMillis must not be negative", a.URI)
	}
	return nil
}

// Register validates app, declares the extension on s and adds the app as
// a resource. The resource is read only by clients that support UI on the
// request ([ClientSupports]); others get "Resource not found".
func Register(s *weft.Server, app App) error {
	if s == nil {
		return errors.New("apps: Register: nil server")
	}
	if err := app.Validate(); err != nil {
		return err
	}
	meta := app.Meta()
	contents := weft.TextResource(app.URI, MimeType, app.HTML)
	contents.Meta = meta
	err := s.AddResource(weft.Resource{
		ResourceInfo: weft.ResourceInfo{URI: app.URI, Name: app.Name, Title: app.Title, Description: app.Description,
			MimeType: MimeType, Size: int64(len(app.HTML)), Meta: meta},
		Cache: app.Cache,
	}, func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
		if !ClientSupports(req) {
			return nil, weft.ResourceNotFound(req.Name)
		}
		return &weft.ReadResourceResult{Contents: []weft.ResourceContents{contents}}, nil
	})
	if err != nil {
		return fmt.Errorf("apps: %w", err)
	}
	s.EnableExtension(ExtensionID, exactjson.Object())
	return nil
}

// ClientSupports reports whether the request's client declared the
// extension with the app media type:
// capabilities.extensions["io.modelcontextprotocol/ui"].mimeTypes holds
// "text/html;profile=mcp-app".
func ClientSupports(req *weft.Request) bool {
	if req == nil {
		return false
	}
	exts, _ := req.ClientCapabilities.Get("extensions")
	ui, _ := exts.Get(ExtensionID)
	types, _ := ui.Get("mimeTypes")
	for t := range types.Values() {
		if s, ok := t.AsString(); ok && s == MimeType {
			return true
		}
	}
	return false
}

// VisibleFunc is the type of weft.Options.Visible.
type VisibleFunc = func(ctx context.Context, req *weft.Request, kind weft.ItemKind, name string) bool

// Visible returns a weft.Options.Visible filter that hides, from requests
// whose client does not support UI ([ClientSupports]), every ui://
// resource and resource template and the tools named in appOnlyTools (the
// tools declared with only VisibilityApp). Everything else, and everything
// for clients that support UI, is decided by next (nil: visible).
func Visible(next VisibleFunc, appOnlyTools ...string) VisibleFunc {
	hidden := make(map[string]bool, len(appOnlyTools))
	for _, n := range appOnlyTools {
		hidden[n] = true
	}
	return func(ctx context.Context, req *weft.Request, kind weft.ItemKind, name string) bool {
		if !ClientSupports(req) {
			switch kind {
			case weft.KindResource, weft.KindResourceTemplate:
				if strings.HasPrefix(name, Scheme+"://") {
					return false
				}
			case weft.KindTool:
				if hidden[name] {
					return false
				}
			}
		}
		return next == nil || next(ctx, req, kind, name)
	}
}

// checkURI validates a ui:// URI.
func checkURI(uri string) error {
	rest, ok := strings.CutPrefix(uri, Scheme+"://")
	switch {
	case !ok:
		return fmt.Errorf("URI %q must use the ui:// scheme", uri)
	case rest == "" || len(uri) > MaxURIBytes:
		return fmt.Errorf("URI %q must be 1-%d bytes after ui://", uri, MaxURIBytes)
	case strings.ContainsAny(uri, " \t\r\n\"<>\\^`{|}#"):
		return fmt.Errorf("URI %q holds a character that must be percent-encoded", uri)
	}
	if _, err := url.Parse(uri); err != nil {
		return fmt.Errorf("URI %q: %w", uri, err)
	}
	for _, r := range uri {
		if r < 0x20 || r >= 0x7f {
			return fmt.Errorf("URI %q holds a non-ASCII or control character", uri)
		}
	}
	return nil
}

// checkHTML checks that a document is UTF-8 and starts with the HTML5 doctype.
func checkHTML(html string) error {
	if len(html) > MaxHTMLBytes {
		return fmt.Errorf("HTML is more than %d bytes", MaxHTMLBytes)
	}
	if !utf8.ValidString(html) {
		return errors.New("HTML is not valid UTF-8")
	}
	t := strings.TrimLeft(strings.TrimPrefix(html, "\ufeff"), " \t\r\n\f")
	const doctype = "<!doctype html"
	if len(t) < len(doctype)+1 || !strings.EqualFold(t[:len(doctype)], doctype) || !strings.ContainsRune(" \t\r\n\f>", rune(t[len(doctype)])) {
		return errors.New("HTML must be an HTML5 document starting with <!DOCTYPE html>")
	}
	return nil
}

// checkOrigin validates a CSP origin: scheme://host[:port].
func checkOrigin(o string) error {
	scheme, rest, ok := strings.Cut(o, "://")
	if !ok {
		return fmt.Errorf("%q is not an origin (scheme://host[:port])", o)
	}
	switch scheme {
	case "https", "http", "wss", "ws":
	default:
		return fmt.Errorf("%q: the scheme must be https, http, wss or ws", o)
	}
	host, port, hasPort := strings.Cut(rest, ":")
	if hasPort {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return fmt.Errorf("%q: bad port (origins carry no path, query or fragment)", o)
		}
	}
	if !validHost(host, true) {
		return fmt.Errorf("%q: %q is not a host name (a leading *. is the only wildcard; origins carry no path)", o, host)
	}
	return nil
}

// validHost reports whether h is a DNS host name, optionally with a
// leading "*." wildcard label.
func validHost(h string, wildcard bool) bool {
	if wildcard {
		h = strings.TrimPrefix(h, "*.")
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
