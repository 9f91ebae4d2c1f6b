package weft

import (
	"context"
	"fmt"
	"strings"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/uritemplate"
)

// ResourceInfo describes a resource in lists and resource links.
type ResourceInfo struct {
	URI         string
	Name        string
	Title       string
	Description string
	MimeType    string
	Size        int64
	Annotations *Annotations
	Meta        exactjson.Value
}

func (r *ResourceInfo) encodeFields(e *enc) {
	e.str("uri", r.URI)
	e.str("name", r.Name)
	e.strOpt("title", r.Title)
	e.strOpt("description", r.Description)
	e.strOpt("mimeType", r.MimeType)
	if r.Size > 0 {
		e.integer("size", r.Size)
	}
	if r.Annotations != nil {
		e.name("annotations")
		r.Annotations.encode(e)
	}
	e.valueOpt("_meta", r.Meta)
}

// Resource describes a directly listed resource.
type Resource struct {
	ResourceInfo
	// Cache is the caching hint of reads.
	Cache CachePolicy
	// Inputs declares the client requests the read handler may emit.
	Inputs []Input
	// StateMode selects the protection of retry state.
	StateMode StateMode
	// Scopes are the OAuth scopes a caller needs, as [Tool].Scopes.
	Scopes []string
}

// ResourceHandler handles resources/read. Return [ResourceNotFound] for an
// unknown URI; it may return an [*InputRequired] like a tool handler.
type ResourceHandler func(ctx context.Context, req *Request) (*ReadResourceResult, error)

type resourceEntry struct {
	res     Resource
	op      *operation
	handler ResourceHandler
}

// AddResource registers (or replaces) a resource.
func (s *Server) AddResource(r Resource, h ResourceHandler) error {
	if h == nil {
		return fmt.Errorf("weft: resource %q: nil handler", r.URI)
	}
	if r.URI == "" || strings.TrimSpace(r.Name) == "" {
		return fmt.Errorf("weft: resource needs a URI and a name")
	}
	op, err := s.newOperation(KindResource, r.URI, r.Inputs, r.StateMode)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.resources.put(r.URI, &resourceEntry{res: r, op: op, handler: h})
	s.mu.Unlock()
	warnOversize(s, KindResource, r.URI, op, r.ResourceInfo)
	s.bus.publish(event{kind: evResourcesListChanged})
	return nil
}

// RemoveResource removes a resource; it reports whether it existed.
func (s *Server) RemoveResource(uri string) bool {
	s.mu.Lock()
	ok := s.resources.remove(uri)
	s.mu.Unlock()
	if ok {
		s.bus.publish(event{kind: evResourcesListChanged})
	}
	return ok
}

// ResourceTemplate describes a family of resources by an RFC 6570 URI template.
type ResourceTemplate struct {
	URITemplate string
	Name        string
	Title       string
	Description string
	MimeType    string
	Annotations *Annotations
	Meta        exactjson.Value
	// Cache is the caching hint of reads.
	Cache CachePolicy
	// Inputs declares the client requests the read handler may emit.
	Inputs []Input
	// StateMode selects the protection of retry state.
	StateMode StateMode
	// Complete offers completions for template variables.
	Complete CompletionHandler
	// Scopes are the OAuth scopes a caller needs to read the template's
	// resources, as [Tool].Scopes.
	Scopes []string
}

type templateEntry struct {
	tmpl    ResourceTemplate
	parsed  *uritemplate.Template
	op      *operation
	handler ResourceHandler
}

// AddResourceTemplate registers (or replaces) a resource template. Reads of
// URIs that match it (and are not direct resources) go to h, with the
// matched variables in [Request.URIParams].
func (s *Server) AddResourceTemplate(t ResourceTemplate, h ResourceHandler) error {
	if h == nil {
		return fmt.Errorf("weft: resource template %q: nil handler", t.URITemplate)
	}
	if strings.TrimSpace(t.Name) == "" {
		return fmt.Errorf("weft: resource template %q needs a name", t.URITemplate)
	}
	p, err := uritemplate.Parse(t.URITemplate)
	if err != nil {
		return fmt.Errorf("weft: resource template: %w", err)
	}
	if !p.Matchable() {
		return fmt.Errorf("weft: resource template %q repeats a variable, so URIs cannot be matched to it", t.URITemplate)
	}
	op, err := s.newOperation(KindResourceTemplate, t.URITemplate, t.Inputs, t.StateMode)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.templates.put(t.URITemplate, &templateEntry{tmpl: t, parsed: p, op: op, handler: h})
	s.mu.Unlock()
	warnOversize(s, KindResourceTemplate, t.URITemplate, op, t)
	s.bus.publish(event{kind: evResourcesListChanged})
	return nil
}

// RemoveResourceTemplate removes the resource template registered under
// uriTemplate (the exact [ResourceTemplate.URITemplate] string); it reports
// whether it existed. Like [Server.RemoveResource] it notifies
// notifications/resources/list_changed when it removes one.
func (s *Server) RemoveResourceTemplate(uriTemplate string) bool {
	s.mu.Lock()
	ok := s.templates.remove(uriTemplate)
	s.mu.Unlock()
	if ok {
		s.bus.publish(event{kind: evResourcesListChanged})
	}
	return ok
}

// findResource resolves a URI to a direct resource or a matching template.
func (s *Server) findResource(uri string) (*operation, ResourceHandler, CachePolicy, map[string]string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if r, ok := s.resources.get(uri); ok {
		return r.op, r.handler, r.res.Cache, nil, true
	}
	for _, t := range s.templates.list() {
		if vars, ok := t.parsed.Match(uri); ok {
			return t.op, t.handler, t.tmpl.Cache, vars, true
		}
	}
	return nil, nil, CachePolicy{}, nil, false
}

func (t *ResourceTemplate) encode(e *enc) {
	e.open()
	e.str("uriTemplate", t.URITemplate)
	e.str("name", t.Name)
	e.strOpt("title", t.Title)
	e.strOpt("description", t.Description)
	e.strOpt("mimeType", t.MimeType)
	if t.Annotations != nil {
		e.name("annotations")
		t.Annotations.encode(e)
	}
	e.valueOpt("_meta", t.Meta)
	e.close()
}
