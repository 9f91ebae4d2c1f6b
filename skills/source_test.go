package skills_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/skills"
	"github.com/weftmcp/weft/wefttest"
)

// relayed is a Source serving the entries of bundles under skill://far/
// (as a gateway relays another server's skills), answering directory reads
// of skill://far and skill://acme (which the server's own skills use too).
type relayed struct{ entries []exactjson.Value }

func (r relayed) Skills(context.Context, *weft.Request) ([]exactjson.Value, error) {
	return r.entries, nil
}

func (r relayed) Skill(_ context.Context, _ *weft.Request, uri string) (exactjson.Value, bool, error) {
	for _, e := range r.entries {
		if get(e, "uri").String() == `"`+uri+`"` {
			return e, true, nil
		}
	}
	return exactjson.Value{}, false, nil
}

func (r relayed) Directory(_ context.Context, _ *weft.Request, uri string) ([]exactjson.Value, bool, error) {
	dir := func(u string) exactjson.Value {
		return exactjson.Object(exactjson.Field("uri", exactjson.String(u)), exactjson.Field("mimeType", exactjson.String(skills.DirectoryMimeType)))
	}
	switch uri {
	case "skill://far":
		return []exactjson.Value{dir("skill://far/one"), dir("skill://far/two")}, true, nil
	case "skill://acme":
		return []exactjson.Value{dir("skill://acme/zeta")}, true, nil
	}
	return nil, false, nil
}

func farEntry(name string) exactjson.Value {
	return exactjson.Object(exactjson.Field("uri", exactjson.String("skill://far/"+name+"/SKILL.md")),
		exactjson.Field("frontmatter", exactjson.Object(exactjson.Field("name", exactjson.String(name)))),
		exactjson.Field("resources", exactjson.Array()))
}

func skillURIs(t *testing.T, res exactjson.Value) []string {
	t.Helper()
	var out []string
	for _, e := range get(res, "skills").Elements() {
		s, _ := get(e, "uri").AsString()
		out = append(out, s)
	}
	return out
}

// A source's skills are listed after the server's own (paginated across
// both), found by skills/get, merged into directory reads, filtered by
// Visible, listed privately, and gone once removed.
func TestAddSource(t *testing.T) {
	opts := &weft.Options{Visible: func(_ context.Context, _ *weft.Request, kind weft.ItemKind, name string) bool {
		return !strings.HasPrefix(name, "skill://far/hidden/")
	}}
	srv, c := newServer(t, opts, skills.Config{PageSize: 2}, testSkills(t)...)
	remove, err := skills.Config{PageSize: 2}.AddSource(srv, relayed{entries: []exactjson.Value{farEntry("one"), farEntry("hidden"), farEntry("two")}})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	params := exactjson.Object()
	for range 5 {
		res := call(t, c, skills.MethodList, params)
		if scope := get(res, "cacheScope").String(); scope != `"private"` {
			t.Errorf("cacheScope %s with a source", scope)
		}
		all = append(all, skillURIs(t, res)...)
		cur, ok := get(res, "nextCursor").AsString()
		if !ok {
			break
		}
		params = exactjson.Object(exactjson.Field("cursor", exactjson.String(cur)))
	}
	want := []string{"skill://acme/billing/refunds/SKILL.md", "skill://pdf-processing/SKILL.md", "skill://far/one/SKILL.md", "skill://far/two/SKILL.md"}
	if !slices.Equal(all, want) {
		t.Errorf("listed %v, want %v", all, want)
	}
	if s, _ := get(call(t, c, skills.MethodGet, uriParams("skill://far/two/SKILL.md")), "skill", "uri").AsString(); s != "skill://far/two/SKILL.md" {
		t.Errorf("skills/get of a relayed skill: %q", s)
	}
	callErr(t, c, skills.MethodGet, uriParams("skill://far/hidden/SKILL.md"))
	callErr(t, c, skills.MethodGet, uriParams("skill://far/three/SKILL.md"))

	dir := func(uri string) []string {
		var out []string
		for _, k := range get(call(t, c, skills.MethodDirectoryRead, exactjson.Object(exactjson.Field("uri", exactjson.String(uri)),
			exactjson.Field("_meta", exactjson.Object()))), "resources").Elements() {
			s, _ := get(k, "uri").AsString()
			out = append(out, s)
		}
		return out
	}
	if got, want := dir("skill://far"), []string{"skill://far/one", "skill://far/two"}; !slices.Equal(got, want) {
		t.Errorf("relayed directory: %v, want %v", got, want)
	}
	if got, want := dir("skill://acme"), []string{"skill://acme/billing", "skill://acme/zeta"}; !slices.Equal(got, want) {
		t.Errorf("merged directory: %v, want %v", got, want)
	}
	if _, err := (skills.Config{PageSize: 3}).AddSource(srv, relayed{}); err == nil {
		t.Error("AddSource with another Config succeeded")
	}

	remove()
	if got := skillURIs(t, call(t, c, skills.MethodList, exactjson.Object())); len(got) != 2 {
		t.Errorf("after remove: %v", got)
	}
	callErr(t, c, skills.MethodGet, uriParams("skill://far/one/SKILL.md"))
	callErr(t, c, skills.MethodDirectoryRead, uriParams("skill://far"))

	// A server with a source and no bundle of its own declares the
	// extension and lists the source's skills.
	bare, err := weft.NewServer(weft.Implementation{Name: "bare"}, &weft.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := skills.AddSource(bare, relayed{entries: []exactjson.Value{farEntry("one")}}); err != nil {
		t.Fatal(err)
	}
	bc := wefttest.NewClient(t, bare, nil)
	d, err := bc.Discover(context.Background())
	if err != nil || !get(d.Capabilities, "extensions").Has(skills.ExtensionID) {
		t.Fatalf("discover with a source only: %+v %v", d, err)
	}
	if got := skillURIs(t, call(t, bc, skills.MethodList, exactjson.Object())); !slices.Equal(got, []string{"skill://far/one/SKILL.md"}) {
		t.Errorf("a source only: %v", got)
	}
}

// Removing the last source of a server without skills of its own withdraws
// the extension and its methods: clients get "Method not found" as before
// any source, and a later source may bring another Config. A server with
// skills of its own keeps serving them.
func TestRemoveLastSource(t *testing.T) {
	methods := []struct {
		name   string
		params exactjson.Value
	}{
		{skills.MethodList, exactjson.Object()},
		{skills.MethodGet, uriParams("skill://far/one/SKILL.md")},
		{skills.MethodDirectoryRead, uriParams("skill://far")},
	}
	tests := []struct {
		name    string
		own     bool // the server registers skills of its own
		sources int
	}{
		{"one source", false, 1},
		{"two sources", false, 2},
		{"own skills", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := weft.NewServer(weft.Implementation{Name: "skills-test"}, &weft.Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if tt.own {
				if err := skills.Register(s, testSkills(t)...); err != nil {
					t.Fatal(err)
				}
			}
			c := wefttest.NewClient(t, s, nil)
			served := func(what string, want bool) {
				t.Helper()
				d, err := c.Discover(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if got := get(d.Capabilities, "extensions").Has(skills.ExtensionID); got != want {
					t.Errorf("%s: extension advertised %v, want %v", what, got, want)
				}
				for _, m := range methods {
					res, err := c.Call(context.Background(), m.name, m.params)
					var rerr *client.RPCError
					if err != nil && !errors.As(err, &rerr) {
						t.Fatal(err)
					}
					if unknown := rerr != nil && weft.Code(rerr.Code) == weft.CodeMethodNotFound; unknown == want {
						t.Errorf("%s: %s answered %v %s; want served %v", what, m.name, err, res, want)
					}
				}
			}
			served("before any source", tt.own)
			var removes []func()
			for range tt.sources {
				remove, err := skills.AddSource(s, relayed{entries: []exactjson.Value{farEntry("one")}})
				if err != nil {
					t.Fatal(err)
				}
				removes = append(removes, remove)
			}
			served("with sources", true)
			for i, remove := range removes {
				remove()
				served(fmt.Sprintf("after removing %d of %d sources", i+1, tt.sources), tt.own || i+1 < tt.sources)
			}
			removes[0]() // again: nothing changes
			served("after a removal again", tt.own)
			if tt.own {
				return
			}
			// Nothing served: a new source may bring another Config.
			remove, err := skills.Config{PageSize: 3, NoDirectoryRead: true}.AddSource(s, relayed{entries: []exactjson.Value{farEntry("one")}})
			if err != nil {
				t.Fatalf("AddSource with another Config once nothing is served: %v", err)
			}
			if got := skillURIs(t, call(t, c, skills.MethodList, exactjson.Object())); !slices.Equal(got, []string{"skill://far/one/SKILL.md"}) {
				t.Errorf("the new source: %v", got)
			}
			if e := callErr(t, c, skills.MethodDirectoryRead, uriParams("skill://far")); weft.Code(e.Code) != weft.CodeMethodNotFound {
				t.Errorf("directory read without it in the new Config: %v", e)
			}
			remove()
		})
	}
}
