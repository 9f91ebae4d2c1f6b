package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/apps"
	"github.com/weftmcp/weft/skills"
)

// Per-caller lists of a mounted server. The mount registers what the
// child lists for Options.ListAuthorization (default: an anonymous
// caller); a visibility filter on the parent then shows each caller, in
// the parent's lists, only those of the child's items the child lists for
// the caller's own Authorization header. Operations need no filter: they
// reach the child as the caller, and the child refuses what it hides.

// callerListTTL bounds how long one caller's view of the child is reused
// (a list change of the child ends it at once).
const callerListTTL = 5 * time.Second

// maxCallerViews bounds the cached views (all are dropped beyond it).
const maxCallerViews = 1024

// callerLists caches, per (kind, Authorization), what the child lists.
type callerLists struct {
	u   *upstream
	now func() time.Time

	mu    sync.Mutex
	gen   uint64
	views map[viewKey]*callerView
}

type viewKey struct {
	kind weft.ItemKind
	auth string
	ui   bool // the caller supports MCP Apps (apps.go)
}

type callerView struct {
	gen   uint64
	at    time.Time
	ready chan struct{} // closed when names (or err) is set
	names map[string]bool
	err   error
}

// invalidate drops every view: the child's lists changed.
func (cl *callerLists) invalidate() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.gen++
	clear(cl.views)
}

// listKinds are the list methods of each kind and the member naming an
// item.
var listKinds = map[weft.ItemKind]struct{ method, member, key string }{
	weft.KindTool:             {"tools/list", "tools", "name"},
	weft.KindPrompt:           {"prompts/list", "prompts", "name"},
	weft.KindResource:         {"resources/list", "resources", "uri"},
	weft.KindResourceTemplate: {"resources/templates/list", "resourceTemplates", "uriTemplate"},
}

var ownerPrefix = map[weft.ItemKind]string{
	weft.KindTool: "tool:", weft.KindPrompt: "prompt:", weft.KindResource: "resource:", weft.KindResourceTemplate: "template:",
}

// show is the visibility filter.
func (cl *callerLists) show(ctx context.Context, req *weft.Request, kind weft.ItemKind, name string) bool {
	lk, ok := listKinds[kind]
	// The skills extension lists skill files (resources) too.
	listing := req.Method == lk.method || kind == weft.KindResource && (req.Method == skills.MethodList || req.Method == skills.MethodDirectoryRead)
	if !ok || !listing || !cl.u.g.owns(ownerPrefix[kind]+name, cl.u) {
		return true
	}
	auth := req.Header.Get("Authorization")
	if auth == cl.u.listAuth {
		return true // the registered view is this caller's
	}
	names, err := cl.view(ctx, kind, auth, apps.ClientSupports(req))
	if err != nil {
		cl.u.g.log.Warn("gateway: cannot read the mounted server's lists as the caller; its items are hidden from the caller", "upstream", cl.u.cfg.Name, "err", err)
		return false
	}
	return names[name]
}

// view returns the exposed names of kind the child lists for auth.
func (cl *callerLists) view(ctx context.Context, kind weft.ItemKind, auth string, ui bool) (map[string]bool, error) {
	k := viewKey{kind, auth, ui}
	cl.mu.Lock()
	v := cl.views[k]
	if v != nil {
		select {
		case <-v.ready:
			if v.gen != cl.gen || cl.now().Sub(v.at) > callerListTTL || v.err != nil {
				v = nil
			}
		default: // being read
		}
	}
	if v == nil {
		if len(cl.views) >= maxCallerViews {
			clear(cl.views)
		}
		v = &callerView{gen: cl.gen, at: cl.now(), ready: make(chan struct{})}
		cl.views[k] = v
		cl.mu.Unlock()
		v.names, v.err = cl.read(ctx, kind, auth, ui)
		close(v.ready)
		return v.names, v.err
	}
	cl.mu.Unlock()
	select {
	case <-v.ready:
		return v.names, v.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read lists kind on the child with auth (and the UI extension when ui).
func (cl *callerLists) read(ctx context.Context, kind weft.ItemKind, auth string, ui bool) (map[string]bool, error) {
	u := cl.u
	lk := listKinds[kind]
	ctx = context.WithValue(ctx, authKey{}, auth)
	c, err := u.get(ctx)
	if err != nil {
		return nil, err
	}
	tctx, cancel := context.WithTimeout(ctx, u.cfg.callTimeout())
	defer cancel()
	items, err := u.listAll(tctx, c, lk.method, lk.member, listCaps(c, ui))
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(items))
	for _, it := range items {
		n, ok := str(it, lk.key), false
		if kind == weft.KindTool || kind == weft.KindPrompt {
			n, ok = u.cfg.exposedName(n)
		} else {
			n, ok = u.uris.out(n)
		}
		if ok {
			names[n] = true
		}
	}
	return names, nil
}

// owns reports whether u owns key (see claim).
func (g *Gateway) owns(key string, u *upstream) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.owners[key] == u
}
