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
		for k, v := range s.extensions {
			exts = append(exts, exactjson.Field(k, v))
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
	return &CachePolicy{Public: s.opts.Admission == nil && s.opts.Visible == nil}
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

// visiblePage returns one page (params.cursor) of the items of all that req
// may see (Options.Visible, by the name key gives), as item gives them.
func visiblePage[E, T any](s *Server, ctx context.Context, req *Request, all []E, kind ItemKind, key func(E) string, item func(E) T) ([]T, string, error) {
	vis := all[:0:0]
	for _, it := range all {
		if s.Visible(ctx, req, kind, key(it)) {
			vis = append(vis, it)
		}
	}
	start, end, next, e := s.page(req, len(vis))
	if e != nil {
		return nil, "", e
	}
	out := make([]T, 0, end-start)
	for _, it := range vis[start:end] {
		out = append(out, item(it))
	}
	return out, next, nil
}

func (s *Server) handleToolsList(ctx context.Context, req *Request) (Result, error) {
	s.mu.RLock()
	all := s.tools.list()
	s.mu.RUnlock()
	tools, next, err := visiblePage(s, ctx, req, all, KindTool, func(t *toolEntry) string { return t.tool.Name }, func(t *toolEntry) Tool { return t.tool })
	if err != nil {
		return nil, err
	}
	return &ListToolsResult{Tools: tools, NextCursor: next, Cache: s.listCache()}, nil
}

func (s *Server) handlePromptsList(ctx context.Context, req *Request) (Result, error) {
	s.mu.RLock()
	all := s.prompts.list()
	s.mu.RUnlock()
	prompts, next, err := visiblePage(s, ctx, req, all, KindPrompt, func(p *promptEntry) string { return p.prompt.Name }, func(p *promptEntry) Prompt { return p.prompt })
	if err != nil {
		return nil, err
	}
	return &ListPromptsResult{Prompts: prompts, NextCursor: next, Cache: s.listCache()}, nil
}

func (s *Server) handleResourcesList(ctx context.Context, req *Request) (Result, error) {
	s.mu.RLock()
	all := s.resources.list()
	s.mu.RUnlock()
	res, next, err := visiblePage(s, ctx, req, all, KindResource, func(r *resourceEntry) string { return r.res.URI }, func(r *resourceEntry) ResourceInfo { return r.res.ResourceInfo })
	if err != nil {
		return nil, err
	}
	return &ListResourcesResult{Resources: res, NextCursor: next, Cache: s.listCache()}, nil
}

func (s *Server) handleTemplatesList(ctx context.Context, req *Request) (Result, error) {
	s.mu.RLock()
	all := s.templates.list()
	s.mu.RUnlock()
	ts, next, err := visiblePage(s, ctx, req, all, KindResourceTemplate, func(t *templateEntry) string { return t.tmpl.URITemplate }, func(t *templateEntry) ResourceTemplate { return t.tmpl })
	if err != nil {
		return nil, err
	}
	return &ListResourceTemplatesResult{ResourceTemplates: ts, NextCursor: next, Cache: s.listCache()}, nil
}
