package weft

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/weftmcp/weft/exactjson"
)

type eventKind uint8

const (
	evToolsListChanged eventKind = iota + 1
	evPromptsListChanged
	evResourcesListChanged
	evResourceUpdated
)

type event struct {
	kind eventKind
	uri  string
}

// bus fans catalog events out to open subscriptions. Each subscriber keeps a
// coalescing set of pending events, so a slow subscriber never blocks
// publishers and never loses the fact that something changed.
type bus struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

type subscriber struct {
	mu      sync.Mutex
	pending map[event]struct{}
	order   []event
	wake    chan struct{}
}

func newBus() *bus { return &bus{subs: map[*subscriber]struct{}{}} }

func (b *bus) subscribe() *subscriber {
	s := &subscriber{pending: map[event]struct{}{}, wake: make(chan struct{}, 1)}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

func (b *bus) unsubscribe(s *subscriber) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
}

func (b *bus) publish(ev event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		s.mu.Lock()
		if _, dup := s.pending[ev]; !dup {
			s.pending[ev] = struct{}{}
			s.order = append(s.order, ev)
		}
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (s *subscriber) drain() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.order
	s.order = nil
	clear(s.pending)
	return out
}

// subscription filter accepted from subscriptions/listen.
type filter struct {
	tools, prompts, resources bool
	uris                      []string
}

func (f *filter) wants(ev event) bool {
	switch ev.kind {
	case evToolsListChanged:
		return f.tools
	case evPromptsListChanged:
		return f.prompts
	case evResourcesListChanged:
		return f.resources
	case evResourceUpdated:
		for _, u := range f.uris {
			if ev.uri == u || strings.HasPrefix(ev.uri, strings.TrimSuffix(u, "/")+"/") {
				return true
			}
		}
	}
	return false
}

func (s *Server) handleListen(ctx context.Context, req *Request, in *inbound) reply {
	if in.out == nil {
		return errReply(req.ID, InvalidParams("subscriptions/listen needs a streaming transport"))
	}
	nv, ok := req.Params.Get("notifications")
	if !ok || nv.Kind() != exactjson.KindObject {
		return errReply(req.ID, withStatus(InvalidParams("params.notifications must be an object"), http.StatusBadRequest))
	}
	var f filter
	boolOf := func(name string) (bool, *Error) {
		v, ok := nv.Get(name)
		if !ok {
			return false, nil
		}
		b, isBool := v.AsBool()
		if !isBool {
			return false, withStatus(InvalidParams("params.notifications."+name+" must be a boolean"), http.StatusBadRequest)
		}
		return b, nil
	}
	var e *Error
	if f.tools, e = boolOf("toolsListChanged"); e != nil {
		return errReply(req.ID, e)
	}
	if f.prompts, e = boolOf("promptsListChanged"); e != nil {
		return errReply(req.ID, e)
	}
	if f.resources, e = boolOf("resourcesListChanged"); e != nil {
		return errReply(req.ID, e)
	}
	if rs, ok := nv.Get("resourceSubscriptions"); ok {
		if rs.Kind() != exactjson.KindArray || rs.Len() > s.limits.MaxResourceSubscriptions {
			return errReply(req.ID, withStatus(InvalidParams("params.notifications.resourceSubscriptions must be an array of at most "+itoa(s.limits.MaxResourceSubscriptions)+" URIs"), http.StatusBadRequest))
		}
		for u := range rs.Values() {
			us, ok := u.AsString()
			if !ok || us == "" || len(us) > s.limits.MaxURIBytes {
				return errReply(req.ID, withStatus(InvalidParams("resource subscriptions must be non-empty URI strings"), http.StatusBadRequest))
			}
			f.uris = append(f.uris, us)
		}
	}
	s.mu.RLock()
	nt, np, nr := s.tools.len(), s.prompts.len(), s.resources.len()+s.templates.len()
	s.mu.RUnlock()
	// Honour only what this server delivers.
	f.tools = f.tools && nt > 0
	f.prompts = f.prompts && np > 0
	f.resources = f.resources && nr > 0
	if nr == 0 {
		f.uris = nil
	}
	accepted := []exactjson.Member{}
	if f.tools {
		accepted = append(accepted, exactjson.Field("toolsListChanged", exactjson.Bool(true)))
	}
	if f.prompts {
		accepted = append(accepted, exactjson.Field("promptsListChanged", exactjson.Bool(true)))
	}
	if f.resources {
		accepted = append(accepted, exactjson.Field("resourcesListChanged", exactjson.Bool(true)))
	}
	if len(f.uris) > 0 {
		accepted = append(accepted, exactjson.Field("resourceSubscriptions", stringArray(f.uris)))
	}
	subMeta := exactjson.Object(exactjson.Field(metaSubscriptionID, req.ID.v))
	sub := s.bus.subscribe()
	defer s.bus.unsubscribe(sub)
	if err := in.out.notify("notifications/subscriptions/acknowledged", exactjson.Object(
		exactjson.Field("notifications", exactjson.Object(accepted...)),
		exactjson.Field("_meta", subMeta))); err != nil {
		return reply{none: true}
	}
	for {
		select {
		case <-ctx.Done():
			return reply{none: true} // the client went away: nothing more is sent
		case <-s.done:
			return s.resultReply("complete", nil, nil, subMeta)
		case <-sub.wake:
			for _, ev := range sub.drain() {
				if !f.wants(ev) {
					continue
				}
				var method string
				params := []exactjson.Member{}
				switch ev.kind {
				case evToolsListChanged:
					method = "notifications/tools/list_changed"
				case evPromptsListChanged:
					method = "notifications/prompts/list_changed"
				case evResourcesListChanged:
					method = "notifications/resources/list_changed"
				case evResourceUpdated:
					method = "notifications/resources/updated"
					params = append(params, exactjson.Field("uri", exactjson.String(ev.uri)))
				}
				params = append(params, exactjson.Field("_meta", subMeta))
				if err := in.out.notify(method, exactjson.Object(params...)); err != nil {
					return reply{none: true}
				}
			}
		}
	}
}

func itoa(i int) string {
	b := []byte{}
	if i == 0 {
		return "0"
	}
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
