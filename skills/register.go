package skills

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// Serving defaults.
const (
	// DefaultPageSize is the number of entries per skills/list or
	// resources/directory/read page.
	DefaultPageSize = 64
	// MaxPageSize is the largest accepted Config.PageSize.
	MaxPageSize = 1024
	// DefaultTTLMillis is the default freshness hint of skills/list,
	// skills/get and reads of skill files (5 minutes).
	DefaultTTLMillis = 300_000
	// maxCursorBytes bounds a cursor a client sends back.
	maxCursorBytes = 128
)

// Config configures [Config.Register]. The zero value is the default.
type Config struct {
	// Cache is the caching hint of skills/list, skills/get and reads of
	// skill files. Default: DefaultTTLMillis, public (bundles are static);
	// the scope is private for requests whose identity has a partition.
	Cache *weft.CachePolicy
	// PageSize is the number of entries per page. Default DefaultPageSize.
	PageSize int
	// NoDirectoryRead leaves resources/directory/read out (and
	// directoryRead out of the capability).
	NoDirectoryRead bool
}

type resolvedConfig struct {
	cache    weft.CachePolicy
	pageSize int
	dirRead  bool
}

func (c Config) resolve() (resolvedConfig, error) {
	r := resolvedConfig{cache: weft.CachePolicy{TTLMillis: DefaultTTLMillis, Public: true}, pageSize: c.PageSize, dirRead: !c.NoDirectoryRead}
	if c.Cache != nil {
		r.cache = *c.Cache
	}
	switch {
	case r.pageSize == 0:
		r.pageSize = DefaultPageSize
	case r.pageSize < 0 || r.pageSize > MaxPageSize:
		return r, fmt.Errorf("skills: Config.PageSize must be between 1 and %d", MaxPageSize)
	}
	if r.cache.TTLMillis < 0 {
		return r, errors.New("skills: Config.Cache.TTLMillis must not be negative")
	}
	return r, nil
}

// Register serves bundles on s with the default Config. See [Config.Register].
func Register(s *weft.Server, bundles ...Bundle) error {
	return Config{}.Register(s, bundles...)
}

// Register serves bundles on s: it declares the extension, registers
// skills/list, skills/get and (unless NoDirectoryRead) resources/directory/read
// with s.HandleMethod, and adds every file of every bundle as a resource.
//
// It may be called again for the same server to add skills; the Config of
// the first call stays in force and a later call with a different one
// fails. It fails, changing nothing, when a skill URI is already served,
// when two skills serve different content at one URI (a nested skill and
// its enclosing skill share identical files), or when a URI would be both
// a file and a directory.
//
// [Config.AddSource] serves skills relayed from elsewhere beside these.
//
// weft.Options.Visible hides skills per request everywhere: it is asked
// (with weft.KindResource) about every URI the extension shows. A skill whose
// SKILL.md URI it hides is left out of skills/list and unknown to skills/get;
// a directory read answers only for a visible directory and lists only
// visible children (files and directories by their URI), and skill files are
// ordinary resources, filtered in resources/list and resources/read. A filter
// that hides by URI prefix ("skill://internal/") hides a whole skill.
func (c Config) Register(s *weft.Server, bundles ...Bundle) error {
	if s == nil {
		return errors.New("skills: Register: nil server")
	}
	cfg, err := c.resolve()
	if err != nil {
		return err
	}
	if len(bundles) == 0 {
		return errors.New("skills: Register needs at least one bundle (a server declaring the extension serves resources)")
	}
	for _, b := range bundles {
		if b.b == nil {
			return errors.New("skills: Register: zero Bundle (load bundles with FromFS, FromFiles or LoadAll)")
		}
	}
	cat := catalogFor(s, cfg)
	cat.mu.Lock()
	defer cat.mu.Unlock()
	if !cat.adopt(cfg) {
		return errors.New("skills: Register: the server's skills were registered with a different Config")
	}
	plan, err := cat.plan(bundles)
	if err != nil {
		return err
	}
	if err := cat.ensure(s); err != nil {
		return err
	}
	for _, f := range plan.newFiles {
		if err := s.AddResource(weft.Resource{ResourceInfo: f.info, Cache: cfg.cache}, f.handler()); err != nil {
			return fmt.Errorf("skills: %w", err)
		}
	}
	cat.commit(plan)
	return nil
}

// catalogKey is the key of a server's catalog in its ExtensionState.
type catalogKey struct{}

// catalogFor returns s's catalog, created with cfg on first use.
func catalogFor(s *weft.Server, cfg resolvedConfig) *catalog {
	return s.ExtensionState(catalogKey{}, func() any {
		return &catalog{cfg: cfg, byURI: map[string]*bundle{}, files: map[string]*served{}, dirs: map[string]*dir{}}
	}).(*catalog)
}

// catalog is what one server serves.
type catalog struct {
	srv *weft.Server // for Visible; set by ensure
	mu  sync.RWMutex
	cfg resolvedConfig
	// withdraw removes the methods and the extension from the server: nil
	// while they are not served (before the first Register or AddSource,
	// and once the last source of a server without skills of its own went).
	withdraw []func()
	skills   []*bundle          // registration order
	byURI    map[string]*bundle // by SKILL.md URI
	files    map[string]*served // by file URI
	dirs     map[string]*dir    // by directory URI
	sources  []*Source          // AddSource order (source.go)
}

// served is one file resource.
type served struct {
	f    *file
	info weft.ResourceInfo
}

func (sv *served) handler() weft.ResourceHandler {
	f := sv.f
	return func(ctx context.Context, req *weft.Request) (*weft.ReadResourceResult, error) {
		c := weft.BlobResource(f.URI, f.MimeType, f.data)
		if !f.blob {
			c = weft.TextResource(f.URI, f.MimeType, f.text)
		}
		return &weft.ReadResourceResult{Contents: []weft.ResourceContents{c}}, nil
	}
}

// dir is a directory resource: its children by URI, and sorted.
type dir struct {
	children map[string]exactjson.Value
	sorted   []exactjson.Value
}

type plan struct {
	skills   []*bundle
	newFiles []*served
	dirs     map[string]map[string]exactjson.Value // new children per directory URI
}

// plan checks bundles against the catalog (held locked) and against each
// other, and lists what registering them adds.
func (c *catalog) plan(bundles []Bundle) (*plan, error) {
	p := &plan{dirs: map[string]map[string]exactjson.Value{}}
	files := map[string]*served{}
	lookupFile := func(uri string) *served {
		if sv, ok := files[uri]; ok {
			return sv
		}
		return c.files[uri]
	}
	isDir := func(uri string) bool {
		_, ok := c.dirs[uri]
		_, ok2 := p.dirs[uri]
		return ok || ok2
	}
	seen := map[string]bool{}
	for _, bd := range bundles {
		b := bd.b
		uri := SkillURI(b.skillPath)
		if _, ok := c.byURI[uri]; ok || seen[uri] {
			return nil, fmt.Errorf("skills: %s is already served", uri)
		}
		seen[uri] = true
		p.skills = append(p.skills, b)
		for _, f := range b.files {
			sv := &served{f: f, info: weft.ResourceInfo{URI: f.URI, Name: path.Base(f.Path), MimeType: f.MimeType, Size: f.Size}}
			if f.Path == SkillFile {
				sv.info.Name, sv.info.Description = b.name, b.description
			}
			if old := lookupFile(f.URI); old != nil {
				if old.f.Digest != f.Digest {
					return nil, fmt.Errorf("skills: %s is served by two skills with different content", f.URI)
				}
				if f.Path != SkillFile {
					continue // the same file, already planned or served
				}
			}
			if isDir(f.URI) {
				return nil, fmt.Errorf("skills: %s is both a file and a directory", f.URI)
			}
			files[f.URI] = sv
			// Every directory from the authority down to the file's parent.
			child := resourceJSON(sv.info)
			full := b.skillPath + "/" + f.Path
			for {
				parent := path.Dir(full)
				childURI := Scheme + "://" + escapePath(full)
				if lookupFile(Scheme+"://"+escapePath(parent)) != nil {
					return nil, fmt.Errorf("skills: %s://%s is both a file and a directory", Scheme, parent)
				}
				if p.dirs[Scheme+"://"+escapePath(parent)] == nil {
					p.dirs[Scheme+"://"+escapePath(parent)] = map[string]exactjson.Value{}
				}
				p.dirs[Scheme+"://"+escapePath(parent)][childURI] = child
				if !strings.Contains(parent, "/") {
					break
				}
				full = parent
				child = exactjson.Object(
					exactjson.Field("uri", exactjson.String(Scheme+"://"+escapePath(full))),
					exactjson.Field("name", exactjson.String(path.Base(full))),
					exactjson.Field("mimeType", exactjson.String(DirectoryMimeType)))
			}
		}
	}
	for uri, sv := range files {
		if c.files[uri] == nil || sv.f.Path == SkillFile {
			p.newFiles = append(p.newFiles, sv)
		}
	}
	sort.Slice(p.newFiles, func(i, j int) bool { return p.newFiles[i].info.URI < p.newFiles[j].info.URI })
	return p, nil
}

// resourceJSON renders a file's Resource metadata for directory listings,
// as resources/list does.
func resourceJSON(info weft.ResourceInfo) exactjson.Value {
	ms := []exactjson.Member{
		exactjson.Field("uri", exactjson.String(info.URI)),
		exactjson.Field("name", exactjson.String(info.Name)),
	}
	if info.Description != "" {
		ms = append(ms, exactjson.Field("description", exactjson.String(info.Description)))
	}
	ms = append(ms, exactjson.Field("mimeType", exactjson.String(info.MimeType)))
	if info.Size > 0 {
		ms = append(ms, exactjson.Field("size", exactjson.Int(info.Size)))
	}
	return exactjson.Object(ms...)
}

// commit applies a plan (catalog held locked).
func (c *catalog) commit(p *plan) {
	for _, b := range p.skills {
		c.skills = append(c.skills, b)
		c.byURI[SkillURI(b.skillPath)] = b
	}
	for _, sv := range p.newFiles {
		c.files[sv.info.URI] = sv
	}
	for uri, kids := range p.dirs {
		d := c.dirs[uri]
		if d == nil {
			d = &dir{children: map[string]exactjson.Value{}}
			c.dirs[uri] = d
		}
		for k, v := range kids {
			if _, ok := d.children[k]; !ok || v.Has("description") {
				d.children[k] = v
			}
		}
		keys := make([]string, 0, len(d.children))
		for k := range d.children {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d.sorted = d.sorted[:0]
		for _, k := range keys {
			d.sorted = append(d.sorted, d.children[k])
		}
	}
}

// ensure serves the methods and declares the extension on s, unless they
// are served (catalog locked). On failure it leaves nothing registered.
func (c *catalog) ensure(s *weft.Server) error {
	if c.withdraw != nil {
		return nil
	}
	var undo []func()
	handle := func(method string, h weft.MethodHandler) error {
		remove, err := s.HandleMethod(method, weft.MethodOptions{}, h)
		if err != nil {
			for _, f := range undo {
				f()
			}
			return fmt.Errorf("skills: %w", err)
		}
		undo = append(undo, remove)
		return nil
	}
	c.srv = s
	if err := handle(MethodList, c.list); err != nil {
		return err
	}
	if err := handle(MethodGet, c.get); err != nil {
		return err
	}
	settings := exactjson.Object()
	if c.cfg.dirRead {
		if err := handle(MethodDirectoryRead, c.readDir); err != nil {
			return err
		}
		settings = exactjson.Object(exactjson.Field("directoryRead", exactjson.Bool(true)))
	}
	c.withdraw = append(undo, s.EnableExtension(ExtensionID, settings))
	return nil
}

// withdrawAll removes the methods and the extension from the server
// (catalog locked): a client gets "Method not found" as before any
// Register or AddSource, and a later one may use another Config.
func (c *catalog) withdrawAll() {
	for _, f := range c.withdraw {
		f()
	}
	c.withdraw = nil
}

// adopt makes cfg the catalog's Config (catalog locked), which it can only
// be while nothing is served.
func (c *catalog) adopt(cfg resolvedConfig) bool {
	if c.cfg == cfg {
		return true
	}
	if c.withdraw != nil {
		return false
	}
	c.cfg = cfg
	return true
}

// cache returns the caching hint for req.
func (c *catalog) cache(req *weft.Request) *weft.CachePolicy {
	p := c.cfg.cache
	c.mu.RLock()
	relays := len(c.sources) > 0
	c.mu.RUnlock()
	if req.Identity.Partition != "" || relays {
		p.Public = false // relayed skills may be listed per caller
	}
	return &p
}

// cursor encodes a page offset bound to a listing (kind).
func cursor(kind string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + strconv.Itoa(offset)))
}

// offset decodes params.cursor for a listing; absent means 0.
func offset(req *weft.Request, kind string, n int) (int, error) {
	v, ok := req.Params.Get("cursor")
	if !ok || v.IsNull() {
		return 0, nil
	}
	s, isStr := v.AsString()
	if !isStr || len(s) > maxCursorBytes {
		return 0, weft.InvalidParams("Invalid cursor")
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	rest, ok := strings.CutPrefix(string(raw), kind+":")
	if err != nil || !ok {
		return 0, weft.InvalidParams("Invalid cursor")
	}
	off, err := strconv.Atoi(rest)
	if err != nil || off <= 0 || off > n || strconv.Itoa(off) != rest {
		return 0, weft.InvalidParams("Invalid cursor")
	}
	return off, nil
}

// page returns the items of one page and the next cursor.
func page(items []exactjson.Value, start, size int, kind string) ([]exactjson.Value, string) {
	end := min(start+size, len(items))
	if end < len(items) {
		return items[start:end], cursor(kind, end)
	}
	return items[start:end], ""
}

func listBody(member string, items []exactjson.Value, next string) exactjson.Value {
	ms := []exactjson.Member{exactjson.Field(member, exactjson.Array(items...))}
	if next != "" {
		ms = append(ms, exactjson.Field("nextCursor", exactjson.String(next)))
	}
	return exactjson.Object(ms...)
}

func (c *catalog) list(ctx context.Context, req *weft.Request) (*weft.MethodResult, error) {
	c.mu.RLock()
	skills := slices.Clone(c.skills)
	c.mu.RUnlock()
	entries := make([]exactjson.Value, 0, len(skills))
	for _, b := range skills {
		if c.srv.Visible(ctx, req, weft.KindResource, SkillURI(b.skillPath)) {
			entries = append(entries, b.entry)
		}
	}
	relayed, err := c.sourceEntries(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, e := range relayed {
		if c.srv.Visible(ctx, req, weft.KindResource, str(e, "uri")) {
			entries = append(entries, e)
		}
	}
	start, err := offset(req, "skills", len(entries))
	if err != nil {
		return nil, err
	}
	items, next := page(entries, start, c.cfg.pageSize, "skills")
	return &weft.MethodResult{Body: listBody("skills", items, next), Cache: c.cache(req)}, nil
}

// uriParam returns params.uri.
func uriParam(req *weft.Request) (string, error) {
	v, _ := req.Params.Get("uri")
	s, ok := v.AsString()
	if !ok {
		return "", weft.InvalidParams("params.uri must be a string")
	}
	return s, nil
}

// quote shortens a client-supplied URI for an error message.
func quote(uri string) string {
	if len(uri) > 256 {
		return strconv.Quote(uri[:256]) + "..."
	}
	return uri
}

func (c *catalog) get(ctx context.Context, req *weft.Request) (*weft.MethodResult, error) {
	uri, err := uriParam(req)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	b := c.byURI[uri]
	c.mu.RUnlock()
	var entry exactjson.Value
	if b != nil {
		entry = b.entry
	} else {
		e, ok, err := c.sourceSkill(ctx, req, uri)
		if err != nil {
			return nil, err
		}
		if ok {
			entry = e
		}
	}
	if entry.IsNull() || !c.srv.Visible(ctx, req, weft.KindResource, uri) {
		return nil, weft.InvalidParams("No skill is served at " + quote(uri))
	}
	return &weft.MethodResult{Body: exactjson.Object(exactjson.Field("skill", entry)), Cache: c.cache(req)}, nil
}

func (c *catalog) readDir(ctx context.Context, req *weft.Request) (*weft.MethodResult, error) {
	uri, err := uriParam(req)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	d := c.dirs[uri]
	var all []exactjson.Value
	if d != nil {
		all = append(all, d.sorted...)
	}
	_, isFile := c.files[uri]
	c.mu.RUnlock()
	found := d != nil
	if !isFile {
		merged, ok, err := c.sourceDirectory(ctx, req, uri, all)
		if err != nil {
			return nil, err
		}
		if ok {
			all, found = merged, true
		}
	}
	if !c.srv.Visible(ctx, req, weft.KindResource, uri) {
		found, isFile = false, false // hidden: indistinguishable from absent
	}
	kids := all[:0]
	for _, k := range all {
		u, _ := k.Get("uri")
		if s, _ := u.AsString(); c.srv.Visible(ctx, req, weft.KindResource, s) {
			kids = append(kids, k)
		}
	}
	if !found {
		if isFile {
			return nil, weft.InvalidParams(quote(uri) + " is not a directory resource")
		}
		return nil, weft.InvalidParams("No directory resource at " + quote(uri))
	}
	h := fnv.New32a()
	h.Write([]byte(uri))
	kind := "dir." + strconv.FormatUint(uint64(h.Sum32()), 36)
	start, err := offset(req, kind, len(kids))
	if err != nil {
		return nil, err
	}
	items, next := page(kids, start, c.cfg.pageSize, kind)
	return &weft.MethodResult{Body: listBody("resources", items, next)}, nil
}
