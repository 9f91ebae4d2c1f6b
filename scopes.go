package weft

import "slices"

// declaredScopes returns the scopes the registration a request targets
// declares: the tool of tools/call, the prompt of prompts/get, the resource
// (or first matching template) of resources/read.
func (s *Server) declaredScopes(method, target string) []string {
	if target == "" {
		return nil
	}
	switch method {
	case "tools/call":
		s.mu.RLock()
		defer s.mu.RUnlock()
		if t, ok := s.tools.get(target); ok {
			return t.tool.Scopes
		}
	case "prompts/get":
		s.mu.RLock()
		defer s.mu.RUnlock()
		if p, ok := s.prompts.get(target); ok {
			return p.prompt.Scopes
		}
	case "resources/read":
		if len(target) > s.limits.MaxURIBytes {
			return nil
		}
		s.mu.RLock()
		defer s.mu.RUnlock()
		if r, ok := s.resources.get(target); ok {
			return r.res.Scopes
		}
		for _, t := range s.templates.list() {
			if _, ok := t.parsed.Match(target); ok {
				return t.tmpl.Scopes
			}
		}
	}
	return nil
}

// scopesShow reports whether a listed item's declared scopes are all among
// the caller's. Without admission every item shows (no identity carries
// scopes); with it, list results are private to the caller already.
func (s *Server) scopesShow(req *Request, kind ItemKind, name string) bool {
	if s.opts.Admission == nil || req == nil {
		return true
	}
	var need []string
	s.mu.RLock()
	switch kind {
	case KindTool:
		if t, ok := s.tools.get(name); ok {
			need = t.tool.Scopes
		}
	case KindPrompt:
		if p, ok := s.prompts.get(name); ok {
			need = p.prompt.Scopes
		}
	case KindResource:
		if r, ok := s.resources.get(name); ok {
			need = r.res.Scopes
		}
	case KindResourceTemplate:
		if t, ok := s.templates.get(name); ok {
			need = t.tmpl.Scopes
		}
	}
	s.mu.RUnlock()
	for _, sc := range need {
		if !slices.Contains(req.Identity.Scopes, sc) {
			return false
		}
	}
	return true
}
