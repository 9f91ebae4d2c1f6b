package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/skills"
)

// Skills (the io.modelcontextprotocol/skills extension) of 2026-07-28
// upstreams. A skill's files are resources, relayed (and their URIs
// prefixed) like any: skill://pdf/SKILL.md of an upstream with the
// resource prefix "docs" is skill://docs/pdf/SKILL.md. The gateway lists
// the upstream's skills (skills/list, with its other lists, and again on
// each list change), maps their entries' URIs, and serves them as a
// skills.Source of its server: skills/list lists them after the server's
// own skills, skills/get and resources/directory/read of their URIs are
// sent upstream as the caller (the directory at skill://PREFIX itself,
// which the upstream does not have, is answered from the listed entries).

// offersSkills reports a 2026-07-28 upstream advertising the extension,
// and whether it serves resources/directory/read.
func offersSkills(c *conn) (offered, dirRead bool) {
	ext, _ := c.caps.Get("extensions")
	s, ok := ext.Get(skills.ExtensionID)
	if !c.modern() || !ok {
		return false, false
	}
	d, _ := s.Get("directoryRead")
	return true, isTrue(d)
}

// syncSkills keeps the upstream's entries, their URIs mapped (regMu held),
// of the skills whose SKILL.md the upstream exposes (its resources are
// synced first; another upstream may own the URI).
func (u *upstream) syncSkills(items []exactjson.Value) {
	out := make([]exactjson.Value, 0, len(items))
	for _, e := range items {
		m, ok := u.skillEntry(e)
		switch {
		case ok && u.g.owns("resource:"+str(m, "uri"), u):
			out = append(out, m)
		case ok:
			u.g.log.Warn("gateway: skill URI taken by another upstream; not exposed", "upstream", u.cfg.Name, "uri", str(m, "uri"))
		default:
			u.g.log.Warn("gateway: an upstream skill cannot carry the resource prefix; not exposed", "upstream", u.cfg.Name, "uri", str(e, "uri"))
		}
	}
	u.skillsMu.Lock()
	u.skills = out
	u.skillsMu.Unlock()
}

// skillEntries returns the upstream's listed skills (not waiting for a
// refresh in progress, which holds regMu).
func (u *upstream) skillEntries() []exactjson.Value {
	u.skillsMu.Lock()
	defer u.skillsMu.Unlock()
	return u.skills
}

// skillEntry maps the URIs of a skill entry ({"uri", "frontmatter",
// "resources": [{"uri", ...}]}).
func (u *upstream) skillEntry(e exactjson.Value) (exactjson.Value, bool) {
	uri, ok := u.uris.out(str(e, "uri"))
	if !ok || uri == "" || e.Kind() != exactjson.KindObject {
		return exactjson.Value{}, false
	}
	e = e.With("uri", exactjson.String(uri))
	if rs, ok := e.Get("resources"); ok && rs.Kind() == exactjson.KindArray {
		els := rs.Elements()
		out := make([]exactjson.Value, len(els))
		for i, r := range els {
			out[i] = r
			if s := str(r, "uri"); s != "" && r.Kind() == exactjson.KindObject {
				m, ok := u.uris.out(s)
				if !ok {
					return exactjson.Value{}, false
				}
				out[i] = r.With("uri", exactjson.String(m))
			}
		}
		e = e.With("resources", exactjson.Array(out...))
	}
	return e, true
}

// registerSkills adds the upstream as a skills source of the server, once.
func (u *upstream) registerSkills(c *conn) error {
	offered, dirRead := offersSkills(c)
	u.regMu.Lock()
	defer u.regMu.Unlock()
	if !offered || u.unskills != nil || u.g.srv == nil {
		return nil
	}
	remove, err := skills.AddSource(u.g.srv, skillSource{u: u, dirRead: dirRead})
	if err != nil {
		return fmt.Errorf("gateway: upstream %q: %w", u.cfg.Name, err)
	}
	u.unskills = remove
	return nil
}

// skillSource serves one upstream's skills (skills.Source).
type skillSource struct {
	u       *upstream
	dirRead bool
}

func (s skillSource) Skills(context.Context, *weft.Request) ([]exactjson.Value, error) {
	return s.u.skillEntries(), nil
}

// relay sends a skills method upstream as the caller; an upstream's
// -32602 (no such skill or directory) is reported as notFound.
func (s skillSource) relay(ctx context.Context, req *weft.Request, method string, params exactjson.Value) (res exactjson.Value, notFound bool, err error) {
	u := s.u
	if a := req.Header.Get("Authorization"); a != "" && u.cfg.Authorization == "passthrough" {
		ctx = context.WithValue(ctx, authKey{}, a)
	}
	c, err := u.get(ctx)
	if err != nil {
		return exactjson.Value{}, false, u.g.unavailable(u, err)
	}
	tctx, cancel := context.WithTimeout(ctx, u.cfg.callTimeout())
	defer cancel()
	res, err = u.do(tctx, c, method, params, callOpts{caps: req.ClientCapabilities})
	if err != nil {
		var re *client.RPCError
		if errors.As(err, &re) {
			if re.Code == client.CodeInvalidParams {
				return exactjson.Value{}, true, nil
			}
			return exactjson.Value{}, false, upstreamError(u.cfg.Name, re)
		}
		if ctx.Err() != nil {
			return exactjson.Value{}, false, ctx.Err()
		}
		return exactjson.Value{}, false, u.g.unavailable(u, err)
	}
	return res, false, nil
}

func (s skillSource) Skill(ctx context.Context, req *weft.Request, uri string) (exactjson.Value, bool, error) {
	up, ok := s.u.uris.in(uri)
	if !ok || !s.u.g.owns("resource:"+uri, s.u) {
		return exactjson.Value{}, false, nil
	}
	res, notFound, err := s.relay(ctx, req, skills.MethodGet, exactjson.Object(exactjson.Field("uri", exactjson.String(up))))
	if err != nil || notFound {
		return exactjson.Value{}, false, err
	}
	e, _ := res.Get("skill")
	m, ok := s.u.skillEntry(e)
	if !ok {
		return exactjson.Value{}, false, s.u.g.unavailable(s.u, fmt.Errorf("skills/get of %s: the upstream's entry has no usable uri", up))
	}
	return m, true, nil
}

// maxDirectoryPages bounds the pages of one relayed directory read.
const maxDirectoryPages = 1000

func (s skillSource) Directory(ctx context.Context, req *weft.Request, uri string) ([]exactjson.Value, bool, error) {
	u := s.u
	up, ok := u.uris.in(uri)
	if root := skills.Scheme + "://" + u.uris.prefix; u.uris.prefix != "" && uri == root {
		return s.root(ctx, req, root), true, nil
	}
	if !ok || !s.dirRead || !s.holds(uri) {
		return nil, false, nil
	}
	var kids []exactjson.Value
	params := exactjson.Object(exactjson.Field("uri", exactjson.String(up)))
	for range maxDirectoryPages {
		res, notFound, err := s.relay(ctx, req, skills.MethodDirectoryRead, params)
		if err != nil || notFound {
			return nil, false, err
		}
		items, _ := res.Get("resources")
		for _, k := range items.Elements() {
			if m, ok := u.uris.out(str(k, "uri")); ok && k.Kind() == exactjson.KindObject {
				kids = append(kids, k.With("uri", exactjson.String(m)))
			}
		}
		cur := str(res, "nextCursor")
		if cur == "" {
			return kids, true, nil
		}
		params = params.With("cursor", exactjson.String(cur))
	}
	return nil, false, u.g.unavailable(u, fmt.Errorf("%s: pagination does not end", skills.MethodDirectoryRead))
}

// holds reports whether a listed skill of the upstream has a file under
// the directory uri.
func (s skillSource) holds(uri string) bool {
	for _, e := range s.u.skillEntries() {
		rs, _ := e.Get("resources")
		for _, r := range rs.Elements() {
			if strings.HasPrefix(str(r, "uri"), uri+"/") {
				return true
			}
		}
	}
	return false
}

// root lists the directory skill://PREFIX: the first path segment of each
// listed skill the caller may see, as a directory.
func (s skillSource) root(ctx context.Context, req *weft.Request, root string) []exactjson.Value {
	seen := map[string]bool{}
	var kids []exactjson.Value
	for _, e := range s.u.skillEntries() {
		rest, ok := strings.CutPrefix(str(e, "uri"), root+"/")
		seg, _, more := strings.Cut(rest, "/")
		if !ok || !more || seg == "" || seen[seg] || !s.u.g.srv.Visible(ctx, req, weft.KindResource, str(e, "uri")) {
			continue
		}
		seen[seg] = true
		kids = append(kids, exactjson.Object(
			exactjson.Field("uri", exactjson.String(root+"/"+seg)),
			exactjson.Field("name", exactjson.String(seg)),
			exactjson.Field("mimeType", exactjson.String(skills.DirectoryMimeType))))
	}
	return kids
}
