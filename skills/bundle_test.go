package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/weftmcp/weft/exactjson"
)

const pdfSkill = `---
name: pdf-processing
description: Extract, fill, and assemble PDF documents
license: Apache-2.0
metadata:
  version: "2.1.0"
---

# PDF processing

See [the forms guide](references/FORMS.md).
`

func pdfFiles() map[string][]byte {
	return map[string][]byte{
		"SKILL.md":             []byte(pdfSkill),
		"references/FORMS.md":  []byte("# Forms\n"),
		"scripts/extract.py":   []byte("print('hi')\n"),
		"templates/my form.md": []byte("form\n"),
		"assets/logo.png":      {0x89, 'P', 'N', 'G', 0, 1, 2},
	}
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestFromFiles(t *testing.T) {
	files := pdfFiles()
	b, err := FromFiles(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "pdf-processing" || b.Description() != "Extract, fill, and assemble PDF documents" ||
		b.Path() != "pdf-processing" || b.URI() != "skill://pdf-processing/SKILL.md" {
		t.Fatalf("got %q %q %q %q", b.Name(), b.Description(), b.Path(), b.URI())
	}
	want := []File{
		{"SKILL.md", "skill://pdf-processing/SKILL.md", "text/markdown", int64(len(pdfSkill)), digest([]byte(pdfSkill))},
		{"assets/logo.png", "skill://pdf-processing/assets/logo.png", "image/png", 7, digest(files["assets/logo.png"])},
		{"references/FORMS.md", "skill://pdf-processing/references/FORMS.md", "text/markdown", 8, digest(files["references/FORMS.md"])},
		{"scripts/extract.py", "skill://pdf-processing/scripts/extract.py", "text/x-python", 12, digest(files["scripts/extract.py"])},
		{"templates/my form.md", "skill://pdf-processing/templates/my%20form.md", "text/markdown", 5, digest(files["templates/my form.md"])},
	}
	got := b.Files()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files:\n got %v\nwant %v", got, want)
	}
	fm := `{"name":"pdf-processing","description":"Extract, fill, and assemble PDF documents","license":"Apache-2.0","metadata":{"version":"2.1.0"}}`
	if s := b.Frontmatter().String(); s != fm {
		t.Fatalf("frontmatter %s", s)
	}
	entry := b.Entry()
	if u, _ := entry.Get("uri"); u.String() != `"skill://pdf-processing/SKILL.md"` {
		t.Fatalf("entry uri %s", u)
	}
	res, _ := entry.Get("resources")
	if res.Len() != 5 || res.Index(0).String() != fmt.Sprintf(`{"uri":"skill://pdf-processing/SKILL.md","digest":"%s","size":%d}`, digest([]byte(pdfSkill)), len(pdfSkill)) {
		t.Fatalf("entry resources %s", res)
	}
	// The contents were copied.
	files["references/FORMS.md"][0] = 'X'
	if b.b.files[2].text != "# Forms\n" {
		t.Fatal("the bundle aliases the caller's bytes")
	}
	if !b.b.files[1].blob || b.b.files[2].blob {
		t.Fatal("logo.png should be a blob, FORMS.md text")
	}
}

func TestFromFilesPrefix(t *testing.T) {
	b, err := FromFiles(map[string][]byte{"SKILL.md": []byte("---\nname: refunds\ndescription: Refunds.\n---\n")}, &LoadOptions{Prefix: "acme/billing"})
	if err != nil {
		t.Fatal(err)
	}
	if b.URI() != "skill://acme/billing/refunds/SKILL.md" || b.Path() != "acme/billing/refunds" {
		t.Fatalf("got %s", b.URI())
	}
	for _, p := range []string{"Acme", "acme/", "/acme", "acme//x", "acme/../x", "a b", ".", "é", strings.Repeat("a", 256)} {
		if _, err := FromFiles(map[string][]byte{"SKILL.md": []byte(pdfSkill)}, &LoadOptions{Prefix: p}); err == nil {
			t.Errorf("prefix %q accepted", p)
		}
	}
}

func skillMD(fm string) []byte { return []byte("---\n" + fm + "\n---\nbody\n") }

func TestValidation(t *testing.T) {
	ok := "name: s\ndescription: d"
	cases := []struct {
		name  string
		files map[string][]byte
		opts  *LoadOptions
		why   string
	}{
		{"no SKILL.md", map[string][]byte{"README.md": nil}, nil, "no SKILL.md"},
		{"SKILL.md in a subdirectory only", map[string][]byte{"x/SKILL.md": skillMD(ok)}, nil, "no SKILL.md"},
		{"no front matter", map[string][]byte{"SKILL.md": []byte("# title\n")}, nil, "front matter"},
		{"bad YAML", map[string][]byte{"SKILL.md": skillMD("name: [")}, nil, "front matter line 1"},
		{"no name", map[string][]byte{"SKILL.md": skillMD("description: d")}, nil, `no "name"`},
		{"no description", map[string][]byte{"SKILL.md": skillMD("name: s")}, nil, `no "description"`},
		{"name not a string", map[string][]byte{"SKILL.md": skillMD("name: 12\ndescription: d")}, nil, "must be a string"},
		{"upper-case name", map[string][]byte{"SKILL.md": skillMD("name: Pdf\ndescription: d")}, nil, "skill name"},
		{"leading hyphen", map[string][]byte{"SKILL.md": skillMD("name: -pdf\ndescription: d")}, nil, "skill name"},
		{"trailing hyphen", map[string][]byte{"SKILL.md": skillMD("name: pdf-\ndescription: d")}, nil, "skill name"},
		{"double hyphen", map[string][]byte{"SKILL.md": skillMD("name: a--b\ndescription: d")}, nil, "skill name"},
		{"underscore", map[string][]byte{"SKILL.md": skillMD("name: a_b\ndescription: d")}, nil, "skill name"},
		{"long name", map[string][]byte{"SKILL.md": skillMD("name: " + strings.Repeat("a", 65) + "\ndescription: d")}, nil, "1-64"},
		{"empty description", map[string][]byte{"SKILL.md": skillMD("name: s\ndescription: ''")}, nil, "1-1024"},
		{"blank description", map[string][]byte{"SKILL.md": skillMD("name: s\ndescription: '  '")}, nil, "blank"},
		{"long description", map[string][]byte{"SKILL.md": skillMD("name: s\ndescription: " + strings.Repeat("é", 1025))}, nil, "1-1024"},
		{"long compatibility", map[string][]byte{"SKILL.md": skillMD(ok + "\ncompatibility: " + strings.Repeat("x", 501))}, nil, "1-500"},
		{"license not a string", map[string][]byte{"SKILL.md": skillMD(ok + "\nlicense: [MIT]")}, nil, `"license" must be a string`},
		{"metadata not a mapping", map[string][]byte{"SKILL.md": skillMD(ok + "\nmetadata: x")}, nil, "must be a mapping"},
		{"metadata number", map[string][]byte{"SKILL.md": skillMD(ok + "\nmetadata:\n  version: 1.0")}, nil, "must be a string"},
		{"reserved metadata key", map[string][]byte{"SKILL.md": skillMD(ok + "\nmetadata:\n  io.modelcontextprotocol/x: y")}, nil, "reserved"},
		{"parent path", map[string][]byte{"SKILL.md": skillMD(ok), "../x": nil}, nil, "clean relative path"},
		{"absolute path", map[string][]byte{"SKILL.md": skillMD(ok), "/x": nil}, nil, "clean relative path"},
		{"empty segment", map[string][]byte{"SKILL.md": skillMD(ok), "a//x": nil}, nil, "clean relative path"},
		{"backslash", map[string][]byte{"SKILL.md": skillMD(ok), `a\x`: nil}, nil, "backslash"},
		{"control character", map[string][]byte{"SKILL.md": skillMD(ok), "a\nb": nil}, nil, "control character"},
		{"invalid UTF-8", map[string][]byte{"SKILL.md": skillMD(ok), "a\xffb": nil}, nil, "clean relative path"},
		{"file and directory", map[string][]byte{"SKILL.md": skillMD(ok), "a": nil, "a/b": nil}, nil, "both a file and a directory"},
		{"too many files", map[string][]byte{"SKILL.md": skillMD(ok), "a": nil, "b": nil}, &LoadOptions{Limits: Limits{MaxFiles: 2}}, "more than the limit of 2"},
		{"too large", map[string][]byte{"SKILL.md": skillMD(ok), "a": make([]byte, 100)}, &LoadOptions{Limits: Limits{MaxTotalBytes: 100}}, "more than the limit of 100 bytes"},
		{"path too long", map[string][]byte{"SKILL.md": skillMD(ok), strings.Repeat("a", 40): nil}, &LoadOptions{Limits: Limits{MaxPathBytes: 32}}, "longer than the limit"},
		{"path too deep", map[string][]byte{"SKILL.md": skillMD(ok), "a/b/c/d": nil}, &LoadOptions{Limits: Limits{MaxPathDepth: 3}}, "deeper than the limit"},
		{"front matter too large", map[string][]byte{"SKILL.md": skillMD(ok + "\nx: " + strings.Repeat("y", 100))}, &LoadOptions{Limits: Limits{MaxFrontmatterBytes: 64}}, "more than the limit of 64"},
		{"front matter too deep", map[string][]byte{"SKILL.md": skillMD(ok + "\nx:\n  y:\n    z: 1")}, &LoadOptions{Limits: Limits{MaxFrontmatterDepth: 2}}, "nesting deeper than 2"},
		{"limit above the SEP's", map[string][]byte{"SKILL.md": skillMD(ok)}, &LoadOptions{Limits: Limits{MaxFiles: 513}}, "MaxFiles"},
		{"total above the SEP's", map[string][]byte{"SKILL.md": skillMD(ok)}, &LoadOptions{Limits: Limits{MaxTotalBytes: 16<<20 + 1}}, "MaxTotalBytes"},
		{"negative limit", map[string][]byte{"SKILL.md": skillMD(ok)}, &LoadOptions{Limits: Limits{MaxPathDepth: -1}}, "MaxPathDepth"},
	}
	for _, c := range cases {
		_, err := FromFiles(c.files, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: got %v, want an error mentioning %q", c.name, err, c.why)
		}
	}
	// At the limits is fine.
	files := map[string][]byte{"SKILL.md": skillMD(ok)}
	for i := range DefaultMaxFiles - 1 {
		files[fmt.Sprintf("f/%03d.txt", i)] = []byte("x")
	}
	if _, err := FromFiles(files, nil); err != nil {
		t.Errorf("512 files: %v", err)
	}
	files["one-more"] = nil
	if _, err := FromFiles(files, nil); err == nil {
		t.Error("513 files accepted")
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"a", "pdf-processing", "a1-b2", strings.Repeat("x", 64), "9"} {
		if !ValidName(n) {
			t.Errorf("%q rejected", n)
		}
	}
	for _, n := range []string{"", "-a", "a-", "a--b", "A", "a_b", "a.b", "é", strings.Repeat("x", 65), "a b"} {
		if ValidName(n) {
			t.Errorf("%q accepted", n)
		}
	}
}

func TestFromFS(t *testing.T) {
	fsys := fstest.MapFS{}
	for p, b := range pdfFiles() {
		fsys[p] = &fstest.MapFile{Data: b}
	}
	b, err := FromFS(fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := FromFiles(pdfFiles(), nil)
	if !exactjson.Equal(b.Entry(), ref.Entry()) {
		t.Fatalf("FromFS and FromFiles differ:\n%s\n%s", b.Entry(), ref.Entry())
	}
	fsys["link"] = &fstest.MapFile{Mode: fs.ModeSymlink, Data: []byte("SKILL.md")}
	if _, err := FromFS(fsys, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("symlink: %v", err)
	}
	delete(fsys, "link")
	fsys["big"] = &fstest.MapFile{Data: make([]byte, 1000)}
	if _, err := FromFS(fsys, &LoadOptions{Limits: Limits{MaxTotalBytes: 1000}}); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Errorf("size limit: %v", err)
	}
	if _, err := FromFS(fsys, &LoadOptions{Limits: Limits{MaxFiles: 3}}); err == nil || !strings.Contains(err.Error(), "more than the limit of 3 files") {
		t.Errorf("file limit: %v", err)
	}
}

func TestLoadAll(t *testing.T) {
	md := func(name string) *fstest.MapFile {
		return &fstest.MapFile{Data: skillMD("name: " + name + "\ndescription: The " + name + " skill.")}
	}
	fsys := fstest.MapFS{
		"git-workflow/SKILL.md":                 md("git-workflow"),
		"acme/billing/refunds/SKILL.md":         md("refunds"),
		"acme/billing/refunds/examples/mail.md": {Data: []byte("mail")},
		"acme/billing/refunds/partial/SKILL.md": md("partial"),
		"README.md":                             {Data: []byte("not a skill")},
	}
	bs, err := LoadAll(fsys, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bs {
		got = append(got, fmt.Sprintf("%s(%d)", b.URI(), len(b.Files())))
	}
	want := "[skill://acme/billing/refunds/SKILL.md(3) skill://acme/billing/refunds/partial/SKILL.md(1) skill://git-workflow/SKILL.md(1)]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v\nwant %s", got, want)
	}
	if bs, err = LoadAll(fsys, &LoadOptions{Prefix: "org"}); err != nil || bs[2].URI() != "skill://org/git-workflow/SKILL.md" {
		t.Fatalf("prefixed: %v %v", err, bs)
	}

	fsys["other/SKILL.md"] = md("mismatch")
	if _, err := LoadAll(fsys, nil); err == nil || !strings.Contains(err.Error(), `differs from the skill name "mismatch"`) {
		t.Errorf("name mismatch: %v", err)
	}
	delete(fsys, "other/SKILL.md")
	fsys["SKILL.md"] = md("root")
	if _, err := LoadAll(fsys, nil); err == nil || !strings.Contains(err.Error(), "at the root") {
		t.Errorf("root SKILL.md: %v", err)
	}
	delete(fsys, "SKILL.md")
	fsys["Upper/SKILL.md"] = md("upper")
	if _, err := LoadAll(fsys, nil); err == nil {
		t.Error("an upper-case prefix segment was accepted")
	}
}

func TestEscapePath(t *testing.T) {
	for in, want := range map[string]string{
		"a/b.md":       "a/b.md",
		"my form.md":   "my%20form.md",
		"é/x?y#z%.txt": "%C3%A9/x%3Fy%23z%25.txt",
		"a~b_c-d.e":    "a~b_c-d.e",
	} {
		if got := escapePath(in); got != want {
			t.Errorf("escapePath(%q) = %q, want %q", in, got, want)
		}
	}
}
