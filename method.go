package weft

import (
	"context"
	"fmt"
	"strings"

	"github.com/weftmcp/weft/exactjson"
)

// MethodHandler handles a custom or extension method registered with
// [Server.HandleMethod]. It returns the result's members; the framework adds
// resultType and _meta serverInfo. Errors follow the rules of [ToolHandler]
// (an *Error is sent as is, anything else as "Internal error").
type MethodHandler func(ctx context.Context, req *Request) (*MethodResult, error)

// MethodResult is the result of a [MethodHandler].
type MethodResult struct {
	// Body holds the result members: a JSON object (null means none).
	Body exactjson.Value
	// Cache adds ttlMs and cacheScope (for cacheable results).
	Cache *CachePolicy
	// Meta is merged into the result's _meta.
	Meta exactjson.Value
}

type customMethod struct {
	handler Handler // the MethodHandler, adapted and wrapped in the middleware
	opts    MethodOptions
}

// MethodOptions describe a custom method.
type MethodOptions struct {
	// NameParam names the params member that the Mcp-Name header mirrors
	// (for example "uri"); empty means the method has no Mcp-Name.
	NameParam string
}

// HandleMethod registers a handler for a method that is not built in, such as
// an extension's (for example "skills/list"). The request passes the same
// validation, admission and observer as built-in methods. Built-in and
// reserved methods (notifications/*, tasks/*) cannot be registered.
// Registering a method again replaces its handler. The returned function
// removes the method, so that requests for it are answered with "Method not
// found" as before it was registered; it does nothing once the method was
// registered again (the later registration stays).
func (s *Server) HandleMethod(method string, opts MethodOptions, h MethodHandler) (remove func(), err error) {
	if h == nil {
		return nil, fmt.Errorf("weft: method %q: nil handler", method)
	}
	if method == "" || strings.HasPrefix(method, "notifications/") || strings.HasPrefix(method, "tasks/") {
		return nil, fmt.Errorf("weft: method %q cannot be registered", method)
	}
	if removedIn2026(method) {
		return nil, fmt.Errorf("weft: method %q is reserved", method)
	}
	switch method {
	case "server/discover", "subscriptions/listen", "tools/list", "tools/call", "prompts/list", "prompts/get",
		"resources/list", "resources/templates/list", "resources/read", "completion/complete":
		return nil, fmt.Errorf("weft: method %q is built in", method)
	}
	m := &customMethod{handler: s.wrap(func(ctx context.Context, req *Request) (Result, error) {
		return operationResult(h(ctx, req))
	}), opts: opts}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.custom == nil {
		s.custom = map[string]*customMethod{}
	}
	s.custom[method] = m
	return func() { // idempotent: only m itself is ever deleted
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.custom[method] == m {
			delete(s.custom, method)
		}
	}, nil
}

func (s *Server) customMethod(method string) (customMethod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.custom[method]
	if !ok {
		return customMethod{}, false
	}
	return *m, true
}
