package gateway

import (
	"context"
	"strings"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/apps"
	"github.com/weftmcp/weft/exactjson"
)

// MCP Apps (the io.modelcontextprotocol/ui extension) of 2026-07-28
// upstreams. A tool's _meta (ui included) passes through, its
// _meta.ui.resourceUri mapped to the exposed URI of the ui:// resource
// (uriMap.toolMeta), and the ui:// resources are relayed like any other:
// their reads carry the client's capabilities upstream, so the upstream
// decides, as [apps.Register] does, whether the client may have them. The
// gateway lists an upstream offering the extension as a client supporting
// it (so that an upstream hiding its ui:// resources from other clients,
// as apps.Visible does, lists them), advertises the extension itself, and
// hides those ui:// resources and templates from the lists of its clients
// that do not support the extension.

// offersApps reports a 2026-07-28 upstream advertising the extension.
func offersApps(c *conn) bool {
	ext, _ := c.caps.Get("extensions")
	return c.modern() && ext.Has(apps.ExtensionID)
}

// withUI adds the UI extension, with the app media type, to client
// capabilities (null: allInputCapabilities).
func withUI(caps exactjson.Value) exactjson.Value {
	if caps.Kind() != exactjson.KindObject {
		caps = allInputCapabilities
	}
	ext, _ := caps.Get("extensions")
	if ext.Kind() != exactjson.KindObject {
		ext = exactjson.Object()
	}
	return caps.With("extensions", ext.With(apps.ExtensionID, exactjson.Object(
		exactjson.Field("mimeTypes", exactjson.Array(exactjson.String(apps.MimeType))))))
}

// listCaps are the capabilities the upstream's lists are read with, for a
// caller supporting UI or not.
func listCaps(c *conn, ui bool) exactjson.Value {
	if ui && offersApps(c) {
		return withUI(exactjson.Value{})
	}
	return exactjson.Value{}
}

// registerApps advertises the extension on the server and installs the
// filter of ui:// items, once.
func (u *upstream) registerApps(c *conn) {
	u.regMu.Lock()
	defer u.regMu.Unlock()
	srv := u.g.srv
	if u.unapps != nil || srv == nil || !offersApps(c) {
		return
	}
	ext, _ := c.caps.Get("extensions")
	settings, _ := ext.Get(apps.ExtensionID)
	disable := srv.EnableExtension(apps.ExtensionID, settings)
	unfilter := srv.Proxy().AddVisibilityFilter(u.showApps)
	u.unapps = func() { unfilter(); disable() }
}

// showApps hides the upstream's ui:// resources and templates from clients
// that do not support the extension.
func (u *upstream) showApps(_ context.Context, req *weft.Request, kind weft.ItemKind, name string) bool {
	if kind != weft.KindResource && kind != weft.KindResourceTemplate {
		return true
	}
	key, _ := ownerKey(kind, name)
	if !strings.HasPrefix(name, apps.Scheme+"://") || apps.ClientSupports(req) {
		return true
	}
	return !u.g.owns(key, u)
}
