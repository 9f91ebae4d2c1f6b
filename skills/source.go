package skills

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// Source serves skills that a server relays from elsewhere (the skills of
// a gateway's upstream, or of a mounted server) beside its own bundles.
// Entries and directory children are JSON as the extension sends them; a
// source maps the URIs it relays to the ones its server exposes. Its
// methods are called concurrently.
type Source interface {
	// Skills returns the entries of the source's skills, in a stable
	// order (skills/list pages through them after the server's own).
	Skills(ctx context.Context, req *weft.Request) ([]exactjson.Value, error)
	// Skill returns the entry of the skill whose SKILL.md is at uri, or
	// ok false when the source does not serve that skill.
	Skill(ctx context.Context, req *weft.Request, uri string) (entry exactjson.Value, ok bool, err error)
	// Directory returns every child of the directory resource at uri, or
	// ok false when the source serves no directory there.
	Directory(ctx context.Context, req *weft.Request, uri string) (children []exactjson.Value, ok bool, err error)
}

// AddSource serves src's skills on s with the default Config. See
// [Config.AddSource].
func AddSource(s *weft.Server, src Source) (remove func(), err error) {
	return Config{}.AddSource(s, src)
}

// AddSource serves src's skills on s beside the bundles of [Config.Register]
// and other sources: it declares the extension and registers the methods
// if Register has not, with this Config (which a later Register must
// share). skills/list lists the server's own skills, then each source's in
// the order they were added; skills/get and resources/directory/read ask
// the sources for a URI the server does not serve itself, and a directory
// both serve lists the children of both. weft.Options.Visible (and the
// server's visibility filters) apply to what sources return as to the
// server's own skills; skills/list and skills/get are cached privately
// while a source is set (relayed skills may be listed per caller). The
// returned function removes the source; removing the last source of a
// server without skills of its own (no Register) withdraws the extension
// and its methods, which clients then find unknown ("Method not found") as
// before any source, and a later AddSource may use another Config.
func (c Config) AddSource(s *weft.Server, src Source) (remove func(), err error) {
	if s == nil || src == nil {
		return nil, errors.New("skills: AddSource: nil server or source")
	}
	cfg, err := c.resolve()
	if err != nil {
		return nil, err
	}
	cat := catalogFor(s, cfg)
	cat.mu.Lock()
	defer cat.mu.Unlock()
	if !cat.adopt(cfg) {
		return nil, errors.New("skills: AddSource: the server's skills were registered with a different Config")
	}
	if err := cat.ensure(s); err != nil {
		return nil, err
	}
	h := &src
	cat.sources = append(cat.sources, h)
	return func() {
		cat.mu.Lock()
		defer cat.mu.Unlock()
		cat.sources = slices.DeleteFunc(cat.sources, func(x *Source) bool { return x == h })
		if len(cat.sources) == 0 && len(cat.skills) == 0 {
			cat.withdrawAll() // nothing left to serve: as before any source
		}
	}, nil
}

// sourceList returns the sources (catalog not locked).
func (c *catalog) sourceList() []Source {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Source, len(c.sources))
	for i, h := range c.sources {
		out[i] = *h
	}
	return out
}

// sourceEntries returns the sources' entries (after the server's own).
func (c *catalog) sourceEntries(ctx context.Context, req *weft.Request) ([]exactjson.Value, error) {
	var out []exactjson.Value
	for _, src := range c.sourceList() {
		es, err := src.Skills(ctx, req)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// sourceSkill asks the sources for the skill at uri.
func (c *catalog) sourceSkill(ctx context.Context, req *weft.Request, uri string) (exactjson.Value, bool, error) {
	for _, src := range c.sourceList() {
		e, ok, err := src.Skill(ctx, req, uri)
		if err != nil || ok {
			return e, ok, err
		}
	}
	return exactjson.Value{}, false, nil
}

// sourceDirectory merges the sources' children of the directory at uri
// into own (sorted by URI, the server's own first for a URI both list).
func (c *catalog) sourceDirectory(ctx context.Context, req *weft.Request, uri string, own []exactjson.Value) ([]exactjson.Value, bool, error) {
	found := false
	seen := map[string]bool{}
	for _, k := range own {
		seen[str(k, "uri")] = true
	}
	all := own
	for _, src := range c.sourceList() {
		kids, ok, err := src.Directory(ctx, req, uri)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			continue
		}
		found = true
		for _, k := range kids {
			if u := str(k, "uri"); u != "" && !seen[u] {
				seen[u] = true
				all = append(all, k)
			}
		}
	}
	if found {
		all = slices.Clone(all)
		sort.SliceStable(all, func(i, j int) bool { return str(all[i], "uri") < str(all[j], "uri") })
	}
	return all, found, nil
}

func str(v exactjson.Value, name string) string {
	m, _ := v.Get(name)
	s, _ := m.AsString()
	return s
}
