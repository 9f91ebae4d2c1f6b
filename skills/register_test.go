package skills_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/skills"
	"github.com/weftmcp/weft/wefttest"
)

func skillMD(name, desc string) []byte {
	return []byte("---\nname: " + name + "\ndescription: " + desc + "\n---\n\n# " + name + "\n")
}

// testSkills is a small namespace: a top-level skill with subdirectories,
// and a prefixed skill.
func testSkills(t *testing.T) []skills.Bundle {
	t.Helper()
	bs, err := skills.LoadAll(fstest.MapFS{
		"pdf-processing/SKILL.md":                 {Data: skillMD("pdf-processing", "Extract, fill, and assemble PDF documents")},
		"pdf-processing/references/FORMS.md":      {Data: []byte("# Forms\n")},
		"pdf-processing/templates/invoice.md":     {Data: []byte("invoice\n")},
		"pdf-processing/templates/regional/eu.md": {Data: []byte("eu\n")},
		"pdf-processing/assets/logo.png":          {Data: []byte{0x89, 'P', 'N', 'G', 0}},
		"acme/billing/refunds/SKILL.md":           {Data: skillMD("refunds", "Process customer refund requests")},
		"acme/billing/refunds/examples/email.md":  {Data: []byte("Dear customer,\n")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

func newServer(t *testing.T, opts *weft.Options, cfg skills.Config, bs ...skills.Bundle) (*weft.Server, *client.Client) {
	t.Helper()
	if opts == nil {
		opts = &weft.Options{}
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	s, err := weft.NewServer(weft.Implementation{Name: "skills-test"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Register(s, bs...); err != nil {
		t.Fatal(err)
	}
	return s, wefttest.NewClient(t, s, nil)
}

func call(t *testing.T, c *client.Client, method string, params exactjson.Value) exactjson.Value {
	t.Helper()
	res, err := c.Call(context.Background(), method, params)
	if err != nil {
		t.Fatalf("%s %s: %v", method, params, err)
	}
	return res
}

func callErr(t *testing.T, c *client.Client, method string, params exactjson.Value) *client.RPCError {
	t.Helper()
	res, err := c.Call(context.Background(), method, params)
	var rerr *client.RPCError
	if !errors.As(err, &rerr) {
		t.Fatalf("%s %s: want an error response, got %s, %v", method, params, res, err)
	}
	return rerr
}

func uriParams(uri string) exactjson.Value {
	return exactjson.Object(exactjson.Field("uri", exactjson.String(uri)))
}

func get(v exactjson.Value, path ...string) exactjson.Value {
	for _, p := range path {
		v, _ = v.Get(p)
	}
	return v
}

func TestDiscover(t *testing.T) {
	_, c := newServer(t, nil, skills.Config{}, testSkills(t)...)
	d, err := c.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s := get(d.Capabilities, "extensions", skills.ExtensionID).String(); s != `{"directoryRead":true}` {
		t.Errorf("extension settings %s", s)
	}
	if !d.Capabilities.Has("resources") {
		t.Error("no resources capability")
	}

	_, c = newServer(t, nil, skills.Config{NoDirectoryRead: true}, testSkills(t)...)
	d, _ = c.Discover(context.Background())
	if s := get(d.Capabilities, "extensions", skills.ExtensionID).String(); s != `{}` {
		t.Errorf("extension settings without directory reads %s", s)
	}
	if e := callErr(t, c, skills.MethodDirectoryRead, uriParams("skill://pdf-processing")); weft.Code(e.Code) != weft.CodeMethodNotFound {
		t.Errorf("directory read when not declared: %v", e)
	}
}

func TestList(t *testing.T) {
	bs := testSkills(t)
	_, c := newServer(t, nil, skills.Config{}, bs...)
	res := call(t, c, skills.MethodList, exactjson.Object())
	if rt := get(res, "resultType").String(); rt != `"complete"` {
		t.Errorf("resultType %s", rt)
	}
	if ttl, scope := get(res, "ttlMs").String(), get(res, "cacheScope").String(); ttl != "300000" || scope != `"public"` {
		t.Errorf("cache hints %s %s", ttl, scope)
	}
	if res.Has("nextCursor") {
		t.Error("one page has a nextCursor")
	}
	list := get(res, "skills")
	if list.Len() != 2 {
		t.Fatalf("skills %s", list)
	}
	for i, b := range bs {
		if !exactjson.Equal(list.Index(i), b.Entry()) {
			t.Errorf("entry %d: %s, want %s", i, list.Index(i), b.Entry())
		}
	}
	e := list.Index(0)
	if get(e, "uri").String() != `"skill://acme/billing/refunds/SKILL.md"` ||
		get(e, "frontmatter").String() != `{"name":"refunds","description":"Process customer refund requests"}` ||
		get(e, "resources").Len() != 2 {
		t.Errorf("entry %s", e)
	}
	for r := range get(list.Index(1), "resources").Values() {
		d, _ := get(r, "digest").AsString()
		if len(d) != 71 || !strings.HasPrefix(d, "sha256:") || strings.ToLower(d) != d {
			t.Errorf("digest %q", d)
		}
	}
}

func TestListPagination(t *testing.T) {
	var bs []skills.Bundle
	for i := range 5 {
		b, err := skills.FromFiles(map[string][]byte{"SKILL.md": skillMD(fmt.Sprintf("s%d", i), "A skill.")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	_, c := newServer(t, nil, skills.Config{PageSize: 2}, bs...)
	var uris []string
	params := exactjson.Object()
	pages := 0
	for {
		res := call(t, c, skills.MethodList, params)
		pages++
		page := get(res, "skills")
		if page.Len() > 2 {
			t.Fatalf("page of %d", page.Len())
		}
		for e := range page.Values() {
			u, _ := get(e, "uri").AsString()
			uris = append(uris, u)
		}
		next, ok := get(res, "nextCursor").AsString()
		if !ok {
			break
		}
		params = exactjson.Object(exactjson.Field("cursor", exactjson.String(next)))
	}
	if pages != 3 || len(uris) != 5 || uris[4] != "skill://s4/SKILL.md" {
		t.Fatalf("%d pages: %v", pages, uris)
	}
	for _, bad := range []exactjson.Value{
		exactjson.String("nope"), exactjson.Int(2),
		exactjson.String(base64.RawURLEncoding.EncodeToString([]byte("skills:99"))),
		exactjson.String(base64.RawURLEncoding.EncodeToString([]byte("skills:-1"))),
		exactjson.String(base64.RawURLEncoding.EncodeToString([]byte("skills:02"))),
		exactjson.String(base64.RawURLEncoding.EncodeToString([]byte("dir.x:2"))),
	} {
		if e := callErr(t, c, skills.MethodList, exactjson.Object(exactjson.Field("cursor", bad))); weft.Code(e.Code) != weft.CodeInvalidParams {
			t.Errorf("cursor %s: %v", bad, e)
		}
	}
}

func TestGet(t *testing.T) {
	bs := testSkills(t)
	_, c := newServer(t, nil, skills.Config{Cache: &weft.CachePolicy{TTLMillis: 1000}}, bs...)
	res := call(t, c, skills.MethodGet, uriParams("skill://pdf-processing/SKILL.md"))
	if !exactjson.Equal(get(res, "skill"), bs[1].Entry()) {
		t.Errorf("skill %s", get(res, "skill"))
	}
	if res.Has("nextCursor") || get(res, "ttlMs").String() != "1000" || get(res, "cacheScope").String() != `"private"` {
		t.Errorf("result %s", res)
	}
	for _, p := range []exactjson.Value{
		uriParams("skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md"),
		uriParams("skill://pdf-processing/references/FORMS.md"), // a file, not a skill
		uriParams("skill://pdf-processing"),
		exactjson.Object(exactjson.Field("uri", exactjson.Int(1))),
		exactjson.Object(),
	} {
		if e := callErr(t, c, skills.MethodGet, p); weft.Code(e.Code) != weft.CodeInvalidParams {
			t.Errorf("%s: %v", p, e)
		}
	}
}

func TestReadSkillFiles(t *testing.T) {
	_, c := newServer(t, nil, skills.Config{}, testSkills(t)...)
	ctx := context.Background()
	r, err := c.ReadResource(ctx, "skill://pdf-processing/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Contents) != 1 || r.Contents[0].MimeType != "text/markdown" || r.Contents[0].Text != string(skillMD("pdf-processing", "Extract, fill, and assemble PDF documents")) {
		t.Errorf("SKILL.md contents %+v", r.Contents)
	}
	if r.TTLMillis != skills.DefaultTTLMillis || r.CacheScope != "public" {
		t.Errorf("cache %d %s", r.TTLMillis, r.CacheScope)
	}
	r, err = c.ReadResource(ctx, "skill://pdf-processing/assets/logo.png")
	if err != nil {
		t.Fatal(err)
	}
	if r.Contents[0].MimeType != "image/png" || r.Contents[0].Blob != base64.StdEncoding.EncodeToString([]byte("\x89PNG\x00")) {
		t.Errorf("logo contents %+v", r.Contents)
	}
	if _, err := c.ReadResource(ctx, "skill://pdf-processing/nope.md"); err == nil {
		t.Error("an unknown file was read")
	}

	list, err := c.ListResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var md exactjson.Value
	for _, r := range list {
		if get(r, "uri").String() == `"skill://pdf-processing/SKILL.md"` {
			md = r
		}
	}
	want := fmt.Sprintf(`{"uri":"skill://pdf-processing/SKILL.md","name":"pdf-processing","description":"Extract, fill, and assemble PDF documents","mimeType":"text/markdown","size":%d}`,
		len(skillMD("pdf-processing", "Extract, fill, and assemble PDF documents")))
	if md.String() != want {
		t.Errorf("SKILL.md in resources/list: %s\nwant %s", md, want)
	}
	if len(list) != 7 {
		t.Errorf("%d resources listed, want 7", len(list))
	}
}

func TestDirectoryRead(t *testing.T) {
	_, c := newServer(t, nil, skills.Config{}, testSkills(t)...)
	names := func(res exactjson.Value) string {
		var out []string
		for r := range get(res, "resources").Values() {
			n, _ := get(r, "name").AsString()
			m, _ := get(r, "mimeType").AsString()
			if m == skills.DirectoryMimeType {
				n += "/"
			}
			out = append(out, n)
		}
		return strings.Join(out, " ")
	}
	for uri, want := range map[string]string{
		"skill://pdf-processing":                    "pdf-processing assets/ references/ templates/",
		"skill://pdf-processing/templates":          "invoice.md regional/",
		"skill://pdf-processing/templates/regional": "eu.md",
		"skill://acme":                              "billing/",
		"skill://acme/billing":                      "refunds/",
		"skill://acme/billing/refunds":              "refunds examples/",
	} {
		res := call(t, c, skills.MethodDirectoryRead, uriParams(uri))
		if got := names(res); got != want {
			t.Errorf("%s: %s, want %s", uri, got, want)
		}
		if res.Has("nextCursor") || get(res, "resultType").String() != `"complete"` {
			t.Errorf("%s: %s", uri, res)
		}
	}
	root := call(t, c, skills.MethodDirectoryRead, uriParams("skill://pdf-processing"))
	first := get(root, "resources").Index(0)
	if get(first, "uri").String() != `"skill://pdf-processing/SKILL.md"` || get(first, "mimeType").String() != `"text/markdown"` || !first.Has("size") {
		t.Errorf("SKILL.md child %s", first)
	}
	sub := get(root, "resources").Index(1)
	if sub.String() != `{"uri":"skill://pdf-processing/assets","name":"assets","mimeType":"inode/directory"}` {
		t.Errorf("subdirectory child %s", sub)
	}
	for uri, msg := range map[string]string{
		"skill://pdf-processing/SKILL.md": "is not a directory resource",
		"skill://pdf-processing/":         "No directory resource",
		"skill://nope":                    "No directory resource",
		"":                                "No directory resource",
	} {
		e := callErr(t, c, skills.MethodDirectoryRead, uriParams(uri))
		if weft.Code(e.Code) != weft.CodeInvalidParams || !strings.Contains(e.Message, msg) {
			t.Errorf("%q: %v", uri, e)
		}
	}

	// Pagination, with cursors bound to their directory.
	_, c = newServer(t, nil, skills.Config{PageSize: 2}, testSkills(t)...)
	res := call(t, c, skills.MethodDirectoryRead, uriParams("skill://pdf-processing"))
	next, ok := get(res, "nextCursor").AsString()
	if !ok || get(res, "resources").Len() != 2 {
		t.Fatalf("first page %s", res)
	}
	res = call(t, c, skills.MethodDirectoryRead, exactjson.Object(
		exactjson.Field("uri", exactjson.String("skill://pdf-processing")), exactjson.Field("cursor", exactjson.String(next))))
	if names(res) != "references/ templates/" || res.Has("nextCursor") {
		t.Errorf("second page %s", res)
	}
	e := callErr(t, c, skills.MethodDirectoryRead, exactjson.Object(
		exactjson.Field("uri", exactjson.String("skill://acme/billing/refunds")), exactjson.Field("cursor", exactjson.String(next))))
	if weft.Code(e.Code) != weft.CodeInvalidParams {
		t.Errorf("a cursor of another directory: %v", e)
	}
}

func TestRegisterAgain(t *testing.T) {
	bs := testSkills(t)
	s, c := newServer(t, nil, skills.Config{}, bs[0])
	if err := skills.Register(s, bs[1]); err != nil {
		t.Fatal(err)
	}
	if n := get(call(t, c, skills.MethodList, exactjson.Object()), "skills").Len(); n != 2 {
		t.Errorf("%d skills after two Register calls", n)
	}
	if err := skills.Register(s, bs[0]); err == nil || !strings.Contains(err.Error(), "already served") {
		t.Errorf("registering a skill twice: %v", err)
	}
	if err := (skills.Config{PageSize: 3}).Register(s, bs[0]); err == nil || !strings.Contains(err.Error(), "different Config") {
		t.Errorf("another Config: %v", err)
	}
	if err := skills.Register(s); err == nil {
		t.Error("Register without bundles succeeded")
	}
	if err := skills.Register(s, skills.Bundle{}); err == nil {
		t.Error("Register of a zero Bundle succeeded")
	}
	if err := (skills.Config{PageSize: -1}).Register(bareServer(t), bs[0]); err == nil {
		t.Error("a negative PageSize was accepted")
	}
}

func TestRegisterConflicts(t *testing.T) {
	enclosing, err := skills.FromFiles(map[string][]byte{
		"SKILL.md":         skillMD("outer", "The outer skill."),
		"inner/SKILL.md":   skillMD("inner", "The inner skill."),
		"inner/helper.txt": []byte("help"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nested, err := skills.FromFiles(map[string][]byte{
		"SKILL.md":   skillMD("inner", "The inner skill."),
		"helper.txt": []byte("help"),
	}, &skills.LoadOptions{Prefix: "outer"})
	if err != nil {
		t.Fatal(err)
	}
	s, c := newServer(t, nil, skills.Config{}, enclosing, nested)
	res := call(t, c, skills.MethodGet, uriParams("skill://outer/inner/SKILL.md"))
	if get(res, "skill", "frontmatter", "name").String() != `"inner"` {
		t.Errorf("nested skill %s", res)
	}
	dir := call(t, c, skills.MethodDirectoryRead, uriParams("skill://outer/inner"))
	want := fmt.Sprintf(`{"uri":"skill://outer/inner/SKILL.md","name":"inner","description":"The inner skill.","mimeType":"text/markdown","size":%d}`,
		len(skillMD("inner", "The inner skill.")))
	if get(dir, "resources").Index(0).String() != want {
		t.Errorf("nested SKILL.md child %s", get(dir, "resources").Index(0))
	}

	changed, _ := skills.FromFiles(map[string][]byte{"SKILL.md": skillMD("other", "x"), "x.txt": []byte("a")}, &skills.LoadOptions{Prefix: "outer/inner"})
	if err := skills.Register(s, changed); err != nil {
		t.Errorf("a skill below a nested one: %v", err)
	}
	clash, _ := skills.FromFiles(map[string][]byte{"SKILL.md": skillMD("inner", "The inner skill."), "helper.txt": []byte("other")}, &skills.LoadOptions{Prefix: "outer"})
	if err := skills.Register(bareServer(t), enclosing, clash); err == nil || !strings.Contains(err.Error(), "different content") {
		t.Errorf("different content at one URI: %v", err)
	}
	fileDir, _ := skills.FromFiles(map[string][]byte{"SKILL.md": skillMD("x", "x"), "y": []byte("file")}, nil)
	dirFile, _ := skills.FromFiles(map[string][]byte{"SKILL.md": skillMD("y", "y")}, &skills.LoadOptions{Prefix: "x"})
	for _, order := range [][]skills.Bundle{{fileDir, dirFile}, {dirFile, fileDir}} {
		if err := skills.Register(bareServer(t), order...); err == nil || !strings.Contains(err.Error(), "both a file and a directory") {
			t.Errorf("file/directory clash: %v", err)
		}
	}
}

func TestPartitionedCacheIsPrivate(t *testing.T) {
	opts := &weft.Options{Admission: func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
		return weft.Identity{Principal: "u", Partition: "tenant-1"}, nil
	}}
	_, c := newServer(t, opts, skills.Config{}, testSkills(t)...)
	for _, m := range []string{skills.MethodList, skills.MethodGet} {
		res := call(t, c, m, uriParams("skill://pdf-processing/SKILL.md"))
		if get(res, "cacheScope").String() != `"private"` {
			t.Errorf("%s: %s", m, res)
		}
	}
}

// TestConcurrentRegister reads the catalog while skills are added.
func TestConcurrentRegister(t *testing.T) {
	first, _ := skills.FromFiles(map[string][]byte{"SKILL.md": skillMD("first", "The first skill.")}, nil)
	s, c := newServer(t, nil, skills.Config{}, first)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20 {
			b, err := skills.FromFiles(map[string][]byte{"SKILL.md": skillMD(fmt.Sprintf("s%d", i), "A skill."), "a/b.txt": []byte("x")}, nil)
			if err == nil {
				err = skills.Register(s, b)
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 20 {
		call(t, c, skills.MethodList, exactjson.Object())
		call(t, c, skills.MethodDirectoryRead, uriParams("skill://first"))
	}
	<-done
	if n := get(call(t, c, skills.MethodList, exactjson.Object()), "skills").Len(); n != 21 {
		t.Errorf("%d skills", n)
	}
}

// TestVisibleHidesSkills: one Options.Visible filter hides a skill from
// skills/list, skills/get, directory reads and the resource methods alike,
// per request.
func TestVisibleHidesSkills(t *testing.T) {
	opts := &weft.Options{
		Admission: func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
			return weft.Identity{Principal: r.Header.Get("X-User")}, nil
		},
		Visible: func(ctx context.Context, req *weft.Request, kind weft.ItemKind, name string) bool {
			if req.Identity.Principal == "admin" {
				return true
			}
			return !strings.HasPrefix(name, "skill://acme/") && name != "skill://acme" &&
				name != "skill://pdf-processing/templates/invoice.md"
		},
	}
	s, _ := newServer(t, opts, skills.Config{}, testSkills(t)...)
	guest := wefttest.NewClient(t, s, &wefttest.Options{Header: http.Header{"X-User": {"guest"}}})
	admin := wefttest.NewClient(t, s, &wefttest.Options{Header: http.Header{"X-User": {"admin"}}})
	skillNames := func(c *client.Client) string {
		var out []string
		for e := range get(call(t, c, skills.MethodList, exactjson.Object()), "skills").Values() {
			n, _ := get(e, "frontmatter", "name").AsString()
			out = append(out, n)
		}
		return strings.Join(out, " ")
	}
	if got := skillNames(guest); got != "pdf-processing" {
		t.Errorf("guest skills/list: %s", got)
	}
	if got := skillNames(admin); got != "refunds pdf-processing" {
		t.Errorf("admin skills/list: %s", got)
	}
	refunds := uriParams("skill://acme/billing/refunds/SKILL.md")
	if e := callErr(t, guest, skills.MethodGet, refunds); !strings.Contains(e.Message, "No skill is served") {
		t.Errorf("guest skills/get of a hidden skill: %v", e)
	}
	call(t, admin, skills.MethodGet, refunds)
	for _, uri := range []string{"skill://acme", "skill://acme/billing", "skill://acme/billing/refunds"} {
		if e := callErr(t, guest, skills.MethodDirectoryRead, uriParams(uri)); !strings.Contains(e.Message, "No directory resource") {
			t.Errorf("guest directory read of %s: %v", uri, e)
		}
		call(t, admin, skills.MethodDirectoryRead, uriParams(uri))
	}
	children := func(c *client.Client, uri string) string {
		var out []string
		for r := range get(call(t, c, skills.MethodDirectoryRead, uriParams(uri)), "resources").Values() {
			n, _ := get(r, "name").AsString()
			out = append(out, n)
		}
		return strings.Join(out, " ")
	}
	if got := children(guest, "skill://pdf-processing/templates"); got != "regional" {
		t.Errorf("guest templates/: %s", got)
	}
	if got := children(admin, "skill://pdf-processing/templates"); got != "invoice.md regional" {
		t.Errorf("admin templates/: %s", got)
	}
	// The files are resources, filtered by the same function.
	email := uriParams("skill://acme/billing/refunds/examples/email.md")
	if e := callErr(t, guest, "resources/read", email); weft.Code(e.Code) != weft.CodeInvalidParams {
		t.Errorf("guest read of a hidden skill file: %v", e)
	}
	call(t, admin, "resources/read", email)
}

// bareServer is a server with the default options, for registrations that
// must fail.
func bareServer(t *testing.T) *weft.Server {
	t.Helper()
	s, err := weft.NewServer(weft.Implementation{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
