package weft

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/weftmcp/weft/exactjson"
)

// The catalog methods: server/discover and the four list methods. Each
// answers with a typed result ([*DiscoverResult], [*ListToolsResult], ...)
// that middleware sees before it is encoded.

// catalogSizes counts the registered tools, prompts, and resources plus
// resource templates.
func (s *Server) catalogSizes() (tools, prompts, resources int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tools.len(), s.prompts.len(), s.resources.len() + s.templates.len()
}

// capabilities returns the ServerCapabilities object derived from what is
// registered; withExtensions adds the extensions map (2026-07-28;
// 2025-11-25 capabilities have none).
func (s *Server) capabilities(withExtensions bool) exactjson.Value {
	nt, np, nr := s.catalogSizes()
	listChanged := exactjson.Field("listChanged", exactjson.Bool(true))
	var members []exactjson.Member
	if nt > 0 {
		members = append(members, exactjson.Field("tools", exactjson.Object(listChanged)))
	}
	if np > 0 {
		members = append(members, exactjson.Field("prompts", exactjson.Object(listChanged)))
	}
	if nr > 0 {
		members = append(members, exactjson.Field("resources", exactjson.Object(listChanged, exactjson.Field("subscribe", exactjson.Bool(true)))))
	}
	if np > 0 || nr > 0 {
		members = append(members, exactjson.Field("completions", exactjson.Object()))
	}
	members = append(members, exactjson.Field("logging", exactjson.Object()))
	if withExtensions {
		var exts []exactjson.Member
		s.mu.RLock()
		for k, e := range s.extensions {
			exts = append(exts, exactjson.Field(k, e.settings))
		}
		s.mu.RUnlock()
		if len(exts) > 0 {
			members = append(members, exactjson.Field("extensions", exactjson.Object(exts...)))
		}
	}
	return exactjson.Object(members...)
}

// listCache is the caching hint of discovery and the lists.
func (s *Server) listCache() *CachePolicy {
	if s.opts.Cache != nil {
		c := *s.opts.Cache
		return &c
	}
	return &CachePolicy{Public: s.opts.Admission == nil && s.opts.Visible == nil && s.visFilters.Load() == nil}
}

func (s *Server) handleDiscover(ctx context.Context, req *Request) (Result, error) {
	return &DiscoverResult{
		SupportedVersions: supportedVersions,
		Capabilities:      s.capabilities(true),
		Instructions:      s.opts.Instructions,
		Cache:             s.listCache(),
	}, nil
}

// page applies cursor pagination to n items: the page starts at the
// cursor's offset and holds at most Options.PageSize items (listPage ends it
// earlier when the items would not fit the output limit).
func (s *Server) page(req *Request, n int) (start, end int, e *Error) {
	if cv, ok := req.Params.Get("cursor"); ok {
		c, isStr := cv.AsString()
		if !isStr || len(c) > s.limits.MaxCursorBytes {
			return 0, 0, InvalidParams("Invalid cursor")
		}
		if c != "" {
			raw, err := base64.RawURLEncoding.DecodeString(c)
			if err != nil || !strings.HasPrefix(string(raw), "o:") {
				return 0, 0, InvalidParams("Invalid cursor")
			}
			off, err := strconv.Atoi(string(raw[2:]))
			if err != nil || off < 0 || off > n {
				return 0, 0, InvalidParams("Invalid cursor")
			}
			start = off
		}
	}
	return start, min(start+s.opts.PageSize, n), nil
}

// offsetCursor is the opaque cursor of the page that starts at item off.
func offsetCursor(off int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(off)))
}

// listEnvelopeBytes bounds what a list page holds besides its items: the
// result's members, _meta and the largest cursor a client can send back
// (Limits.MaxCursorBytes; a 2025-11-25 cursor is sealed to the session and
// longer than the offset it carries).
func listEnvelopeBytes[T Tool | Prompt | ResourceInfo | ResourceTemplate](s *Server, to era) (int, error) {
	b, err := s.encodeResult(&Page[T]{Cache: s.listCache()}, to)
	// A cursor is base64url (sealed: "weft1." and base64url), which JSON
	// does not escape.
	return len(b) + len(`,"nextCursor":""`) + s.limits.MaxCursorBytes, err
}

// listItemBytes is the encoded size of one item in a list page of an era,
// measured once per registration (op caches it).
func listItemBytes[T Tool | Prompt | ResourceInfo | ResourceTemplate](s *Server, op *operation, it T, to era) (int, error) {
	if op != nil {
		if n := op.listBytes[to].Load(); n > 0 {
			return int(n), nil
		}
	}
	e := &enc{nums: &s.limits.JSON, era: to}
	encodeListItem(e, &it)
	if e.err != nil {
		return 0, e.err
	}
	if op != nil {
		op.listBytes[to].Store(int64(len(e.b)))
	}
	return len(e.b), nil
}

// listPage answers a list method: one page (params.cursor) of the
// registrations of cat that req may see (Options.Visible, by the name key
// gives), as item gives them. A page holds at most Options.PageSize items
// and never more than Limits.MaxOutputBytes encoded: it ends before the
// item that would not fit, and its cursor (an offset into the visible list)
// starts the next page there. An item too large for a page of its own is
// an error naming it, logged, where its page would start.
func listPage[E any, T Tool | Prompt | ResourceInfo | ResourceTemplate](s *Server, cat *catalog[E], kind ItemKind, key func(E) string, op func(E) *operation, item func(E) T) Handler {
	return func(ctx context.Context, req *Request) (Result, error) {
		s.mu.RLock()
		all := cat.list()
		s.mu.RUnlock()
		vis := all[:0:0]
		for _, it := range all {
			if kind == KindTool && s.search != nil && !s.search.lists(key(it)) {
				continue // found through the search tool (toolsearch.go)
			}
			if s.Visible(ctx, req, kind, key(it)) {
				vis = append(vis, it)
			}
		}
		start, end, e := s.page(req, len(vis))
		if e != nil {
			return nil, e
		}
		to := req.era
		envelope, err := listEnvelopeBytes[T](s, to)
		if err != nil {
			return nil, internalError(fmt.Errorf("%s: encoding the page: %w", req.Method, err))
		}
		budget := s.limits.MaxOutputBytes - envelope
		p := &Page[T]{Items: make([]T, 0, end-start), Cache: s.listCache()}
		used := 0
		for i, it := range vis[start:end] {
			t := item(it)
			n, err := listItemBytes(s, op(it), t, to)
			if err != nil {
				s.log.Error("weft: encoding a list item failed", "method", req.Method, "kind", kindNoun(kind), "name", key(it), "err", err)
				return nil, internalError(fmt.Errorf("%s: %s %q: %w", req.Method, kindNoun(kind), key(it), err))
			}
			if i > 0 {
				n++ // the comma before it
			}
			if used+n > budget {
				if i == 0 {
					return nil, s.oversizeItem(req, kind, key(it), n, budget)
				}
				end = start + i
				break
			}
			used += n
			p.Items = append(p.Items, t)
		}
		if end < len(vis) {
			p.NextCursor = offsetCursor(end)
		}
		return p, nil
	}
}

// warnOversize logs, when it is registered, an item too large for a list
// page of its own (measured as 2026-07-28 lists send it): the lists will
// fail where its page starts (oversizeItem). It stays callable.
func warnOversize[T Tool | Prompt | ResourceInfo | ResourceTemplate](s *Server, kind ItemKind, name string, op *operation, it T) {
	n, err := listItemBytes(s, op, it, eraModern)
	if err != nil {
		return // the lists report it, naming the item
	}
	envelope, err := listEnvelopeBytes[T](s, eraModern)
	if err != nil || n <= s.limits.MaxOutputBytes-envelope {
		return
	}
	s.log.Warn("weft: "+kindNoun(kind)+" too large for a list page: the list will fail where its page starts; raise Limits.MaxOutputBytes or make it smaller",
		"kind", kindNoun(kind), "name", name, "bytes", n, "max_output_bytes", s.limits.MaxOutputBytes)
}

// oversizeItem is the error of a list page whose first item does not fit
// the output limit on its own, logged with the item's name.
func (s *Server) oversizeItem(req *Request, kind ItemKind, name string, n, budget int) *Error {
	noun := kindNoun(kind)
	msg := fmt.Sprintf("%s %q encodes to %d bytes, more than a %s page can hold (%d bytes under Limits.MaxOutputBytes %d): raise Limits.MaxOutputBytes or make the %s smaller",
		noun, name, n, req.Method, budget, s.limits.MaxOutputBytes, noun)
	s.log.Error("weft: list item larger than the output limit", "method", req.Method, "kind", kindNoun(kind), "name", name, "bytes", n, "max_output_bytes", s.limits.MaxOutputBytes)
	return protocolError(CodeInternalError, msg, exactjson.Object(
		exactjson.Field("name", exactjson.String(name)),
		exactjson.Field("bytes", exactjson.Int(int64(n))),
		exactjson.Field("maxOutputBytes", exactjson.Int(int64(s.limits.MaxOutputBytes)))))
}

// listHandlers are the handlers of the four list methods.
func (s *Server) listHandlers() map[string]Handler {
	return map[string]Handler{
		"tools/list": listPage(s, &s.tools, KindTool, func(t *toolEntry) string { return t.tool.Name },
			func(t *toolEntry) *operation { return t.op }, func(t *toolEntry) Tool { return t.tool }),
		"prompts/list": listPage(s, &s.prompts, KindPrompt, func(p *promptEntry) string { return p.prompt.Name },
			func(p *promptEntry) *operation { return p.op }, func(p *promptEntry) Prompt { return p.prompt }),
		"resources/list": listPage(s, &s.resources, KindResource, func(r *resourceEntry) string { return r.res.URI },
			func(r *resourceEntry) *operation { return r.op }, func(r *resourceEntry) ResourceInfo { return r.res.ResourceInfo }),
		"resources/templates/list": listPage(s, &s.templates, KindResourceTemplate, func(t *templateEntry) string { return t.tmpl.URITemplate },
			func(t *templateEntry) *operation { return t.op }, func(t *templateEntry) ResourceTemplate { return t.tmpl }),
	}
}

// kindNoun names a catalog kind in messages.
func kindNoun(k ItemKind) string {
	switch k {
	case KindTool:
		return "tool"
	case KindPrompt:
		return "prompt"
	case KindResource:
		return "resource"
	}
	return "resource template"
}
