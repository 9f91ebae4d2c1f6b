package weft

import (
	"context"
	"encoding/base64"
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

// page applies cursor pagination to n items.
func (s *Server) page(req *Request, n int) (start, end int, next string, e *Error) {
	if cv, ok := req.Params.Get("cursor"); ok {
		c, isStr := cv.AsString()
		if !isStr || len(c) > s.limits.MaxCursorBytes {
			return 0, 0, "", InvalidParams("Invalid cursor")
		}
		if c != "" {
			raw, err := base64.RawURLEncoding.DecodeString(c)
			if err != nil || !strings.HasPrefix(string(raw), "o:") {
				return 0, 0, "", InvalidParams("Invalid cursor")
			}
			off, err := strconv.Atoi(string(raw[2:]))
			if err != nil || off < 0 || off > n {
				return 0, 0, "", InvalidParams("Invalid cursor")
			}
			start = off
		}
	}
	end = min(start+s.opts.PageSize, n)
	if end < n {
		next = base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(end)))
	}
	return start, end, next, nil
}

// listPage answers a list method: one page (params.cursor) of the
// registrations of cat that req may see (Options.Visible, by the name key
// gives), as item gives them.
func listPage[E any, T Tool | Prompt | ResourceInfo | ResourceTemplate](s *Server, cat *catalog[E], kind ItemKind, key func(E) string, item func(E) T) Handler {
	return func(ctx context.Context, req *Request) (Result, error) {
		s.mu.RLock()
		all := cat.list()
		s.mu.RUnlock()
		vis := all[:0:0]
		for _, it := range all {
			if s.Visible(ctx, req, kind, key(it)) {
				vis = append(vis, it)
			}
		}
		start, end, next, e := s.page(req, len(vis))
		if e != nil {
			return nil, e
		}
		p := &Page[T]{Items: make([]T, 0, end-start), NextCursor: next, Cache: s.listCache()}
		for _, it := range vis[start:end] {
			p.Items = append(p.Items, item(it))
		}
		return p, nil
	}
}

// listHandlers are the handlers of the four list methods.
func (s *Server) listHandlers() map[string]Handler {
	return map[string]Handler{
		"tools/list": listPage(s, &s.tools, KindTool, func(t *toolEntry) string { return t.tool.Name }, func(t *toolEntry) Tool { return t.tool }),
		"prompts/list": listPage(s, &s.prompts, KindPrompt, func(p *promptEntry) string { return p.prompt.Name },
			func(p *promptEntry) Prompt { return p.prompt }),
		"resources/list": listPage(s, &s.resources, KindResource, func(r *resourceEntry) string { return r.res.URI },
			func(r *resourceEntry) ResourceInfo { return r.res.ResourceInfo }),
		"resources/templates/list": listPage(s, &s.templates, KindResourceTemplate, func(t *templateEntry) string { return t.tmpl.URITemplate },
			func(t *templateEntry) ResourceTemplate { return t.tmpl }),
	}
}
