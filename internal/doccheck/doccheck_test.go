package doccheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
)

// demoAddr is the address the documented servers listen on; the check
// rewrites it to a free port so that runs never collide.
const demoAddr = "127.0.0.1:8080"

// directive is what the HTML comment before a code block asks for.
type directive struct {
	Run   string `json:"run"`   // build (default), http, stdio, test
	Path  string `json:"path"`  // the MCP endpoint's path for run http (default /mcp)
	Calls []call `json:"calls"` // tools to call once the server answers
}

// call is one tools/call the check makes against a documented server.
type call struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	// Want must appear in the result's text or structured content.
	Want string `json:"want"`
	// Form, when set, accepts every form elicitation with this content.
	Form json.RawMessage `json:"form"`
	// Sample, when set, answers every sampling request with this text.
	Sample string `json:"sample"`
	// Roots, when set, answers every roots request with these file URIs.
	Roots []string `json:"roots"`
	// IsError is the result's expected isError.
	IsError bool `json:"isError"`
}

// block is one Go code block of a Markdown file.
type block struct {
	file string // relative to the module root
	line int    // of the opening fence
	src  string
	dir  directive
	slug string
}

var directiveRE = regexp.MustCompile(`^<!--\s*doccheck\s+(\{.*\})\s*-->\s*$`)

// documents are the Markdown files whose Go blocks must be complete and
// compile: the README and every guide.
func documents(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	guides, err := filepath.Glob(filepath.Join(root, "docs", "guides", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range guides {
		rel, err := filepath.Rel(root, g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rel)
	}
	return files
}

// extract returns the Go blocks of one Markdown text.
func extract(file string, text []byte) ([]block, error) {
	var (
		out     []block
		sc      = bufio.NewScanner(bytes.NewReader(text))
		prev    string
		inGo    bool
		cur     block
		body    strings.Builder
		lineNum int
	)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		lineNum++
		line := sc.Text()
		switch {
		case !inGo && strings.TrimSpace(line) == "```go":
			inGo = true
			cur = block{file: file, line: lineNum}
			body.Reset()
			if m := directiveRE.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				if err := json.Unmarshal([]byte(m[1]), &cur.dir); err != nil {
					return nil, fmt.Errorf("%s:%d: doccheck directive: %w", file, lineNum-1, err)
				}
			} else if strings.Contains(prev, "doccheck") {
				return nil, fmt.Errorf("%s:%d: malformed doccheck directive %q", file, lineNum-1, prev)
			}
		case inGo && strings.TrimSpace(line) == "```":
			inGo = false
			cur.src = body.String()
			cur.slug = fmt.Sprintf("%s_%d", slugOf(file), cur.line)
			out = append(out, cur)
		case inGo:
			body.WriteString(line)
			body.WriteByte('\n')
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if inGo {
		return nil, fmt.Errorf("%s:%d: unterminated code block", file, cur.line)
	}
	return out, nil
}

func slugOf(file string) string {
	s := strings.TrimSuffix(file, filepath.Ext(file))
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// packageName returns the package clause of a complete Go file.
func packageName(src string) (string, bool) {
	for _, l := range strings.Split(src, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		if name, ok := strings.CutPrefix(l, "package "); ok {
			return strings.TrimSpace(name), true
		}
		return "", false
	}
	return "", false
}

func TestExtract(t *testing.T) {
	md := "# T\n\n<!-- doccheck {\"run\":\"http\",\"calls\":[{\"tool\":\"x\",\"want\":\"y\"}]} -->\n```go\npackage main\n```\n\ntext\n\n```go\npackage p\n```\n```sh\necho\n```\n"
	bs, err := extract("docs/guides/a-b.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 {
		t.Fatalf("got %d blocks, want 2", len(bs))
	}
	if bs[0].dir.Run != "http" || len(bs[0].dir.Calls) != 1 || bs[0].dir.Calls[0].Tool != "x" || bs[0].line != 4 {
		t.Errorf("first block: %+v", bs[0])
	}
	if bs[1].dir.Run != "" || bs[1].src != "package p\n" || bs[1].slug != "docs_guides_a_b_10" {
		t.Errorf("second block: %+v", bs[1])
	}
	for _, bad := range []string{
		"<!-- doccheck {run} -->\n```go\npackage main\n```\n",
		"<!-- doccheck -->\n```go\npackage main\n```\n",
		"```go\npackage main\n",
	} {
		if _, err := extract("x.md", []byte(bad)); err == nil {
			t.Errorf("extract(%q) succeeded", bad)
		}
	}
	if name, ok := packageName("// c\n\npackage main_test\n"); !ok || name != "main_test" {
		t.Errorf("packageName = %q, %v", name, ok)
	}
	if _, ok := packageName("s := weft.NewServer()\n"); ok {
		t.Error("a fragment was taken for a file")
	}
}

// TestDocs compiles every Go block of the README and the guides, runs the
// marked ones, and calls the documented servers' tools.
func TestDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every documented program")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	for _, f := range documents(t, root) {
		text, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		bs, err := extract(f, text)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) == 0 {
		t.Fatal("no Go code blocks found")
	}
	goBin := goCommand(t)
	// The blocks are built as packages of a throwaway module beside the
	// tree (never inside it), which requires this checkout of Weft.
	mod := t.TempDir()
	goMod := fmt.Sprintf("module doccheck.example/docs\n\ngo 1.26\n\nrequire github.com/weftmcp/weft v0.0.0\n\nreplace github.com/weftmcp/weft => %s\n", root)
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(goMod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	bins := t.TempDir()
	type prepared struct {
		block
		pkg  string // ./slug, relative to the throwaway module
		addr string
	}
	var all []prepared
	for _, b := range blocks {
		name, ok := packageName(b.src)
		if !ok {
			t.Errorf("%s:%d: a Go block in the README or a guide must be a complete file starting with a package clause", b.file, b.line)
			continue
		}
		p := prepared{block: b, pkg: "./" + b.slug}
		src := b.src
		fileName := "main.go"
		switch b.dir.Run {
		case "", "build":
		case "http", "stdio":
			if name != "main" {
				t.Errorf("%s:%d: run %s needs package main, got %q", b.file, b.line, b.dir.Run, name)
				continue
			}
			if b.dir.Run == "http" {
				if !strings.Contains(src, demoAddr) {
					t.Errorf("%s:%d: run http, but the program does not listen on %s", b.file, b.line, demoAddr)
					continue
				}
				p.addr = freeAddr(t)
				src = strings.ReplaceAll(src, demoAddr, p.addr)
			}
		case "test":
			if !strings.HasSuffix(name, "_test") {
				t.Errorf("%s:%d: run test needs a _test package, got %q", b.file, b.line, name)
				continue
			}
			fileName = "doc_test.go"
		default:
			t.Errorf("%s:%d: unknown run %q", b.file, b.line, b.dir.Run)
			continue
		}
		dir := filepath.Join(mod, b.slug)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fileName), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		all = append(all, p)
	}
	if t.Failed() {
		return
	}
	// go vet type-checks every block, test files included, and reports
	// what a reviewer would flag; -mod=mod lets the throwaway go.mod take
	// Weft's requirements.
	goRun(t, mod, goBin, "vet", "-mod=mod", "./...")
	if t.Failed() {
		return
	}
	for _, p := range all {
		t.Run(p.slug, func(t *testing.T) {
			switch p.dir.Run {
			case "", "build":
				goRun(t, mod, goBin, "build", "-mod=mod", "-o", filepath.Join(bins, p.slug), p.pkg)
			case "test":
				goRun(t, mod, goBin, "test", "-mod=mod", "-count=1", p.pkg)
			case "http", "stdio":
				bin := filepath.Join(bins, p.slug)
				goRun(t, mod, goBin, "build", "-mod=mod", "-o", bin, p.pkg)
				if t.Failed() {
					return
				}
				runServer(t, p.block, bin, p.addr)
			}
		})
	}
}

func goCommand(t *testing.T) string {
	t.Helper()
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("no go command: ", err)
	}
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func goRun(t *testing.T, dir, goBin string, args ...string) {
	t.Helper()
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// runServer starts a documented server, makes its calls with the Weft
// client and stops it.
func runServer(t *testing.T, b block, bin, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(bin)
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var tr client.Transport
	switch b.dir.Run {
	case "http":
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer stop(t, cmd, &stderr)
		if err := waitListening(ctx, addr); err != nil {
			t.Fatalf("%s:%d: the server never listened on %s: %v\n%s", b.file, b.line, addr, err, stderr.String())
		}
		path := b.dir.Path
		if path == "" {
			path = "/mcp"
		}
		tr = client.NewHTTPTransport("http://"+addr+path, nil)
	case "stdio":
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer stop(t, cmd, &stderr)
		tr = client.NewStdioTransport(out, in, nil)
	}
	for _, c := range b.dir.Calls {
		var opts client.Options
		if len(c.Form) > 0 {
			content, err := exactjson.Parse(c.Form, exactjson.Limits{})
			if err != nil {
				t.Fatalf("%s:%d: form: %v", b.file, b.line, err)
			}
			opts.Handlers.Elicit = func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
				return exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", content)), nil
			}
		}
		if c.Sample != "" {
			reply := exactjson.Object(
				exactjson.Field("role", exactjson.String("assistant")),
				exactjson.Field("content", exactjson.Object(exactjson.Field("type", exactjson.String("text")), exactjson.Field("text", exactjson.String(c.Sample)))),
				exactjson.Field("model", exactjson.String("doccheck")))
			opts.Handlers.Sample = func(ctx context.Context, params exactjson.Value) (exactjson.Value, error) { return reply, nil }
		}
		if c.Roots != nil {
			roots := make([]exactjson.Value, len(c.Roots))
			for i, u := range c.Roots {
				roots[i] = exactjson.Object(exactjson.Field("uri", exactjson.String(u)))
			}
			list := exactjson.Object(exactjson.Field("roots", exactjson.Array(roots...)))
			opts.Handlers.Roots = func(ctx context.Context) (exactjson.Value, error) { return list, nil }
		}
		cl := client.New(tr, &opts)
		var args any
		if len(c.Args) > 0 {
			args = c.Args
		}
		res, err := cl.CallTool(ctx, c.Tool, args)
		if err != nil {
			t.Fatalf("%s:%d: tools/call %s: %v\n%s", b.file, b.line, c.Tool, err, stderr.String())
		}
		got := res.Text() + " " + res.StructuredContent.String()
		if !strings.Contains(got, c.Want) {
			t.Errorf("%s:%d: tools/call %s = %q, want it to contain %q", b.file, b.line, c.Tool, got, c.Want)
		}
		if res.IsError != c.IsError {
			t.Errorf("%s:%d: tools/call %s: isError %v, want %v", b.file, b.line, c.Tool, res.IsError, c.IsError)
		}
	}
	if err := tr.Close(); err != nil && !errors.Is(err, client.ErrClosed) {
		t.Logf("closing the transport: %v", err)
	}
}

func waitListening(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop interrupts the server and waits for it; a server that does not
// exit on SIGINT within ten seconds is killed and reported.
func stop(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer) {
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("the server did not exit on SIGINT within 10 s\n%s", stderr.String())
	}
}
