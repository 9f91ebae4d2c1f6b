// Package partners starts, for tests, the MCP servers Weft did not write:
// npm packages (server-everything, server-filesystem, server-memory and
// others, listed in npm/package.json) and servers built on the official Go
// SDK (gosdkserver) and on mcp-go (mcpgoserver), each its own module here,
// and a TypeScript SDK v2 server (tsserver).
// npm packages are installed once per machine (internal/nodetest) and Go
// servers built once per machine, into the user's cache directory keyed by
// their sources. When a tool is missing, a test fails in CI (env CI set)
// and is skipped elsewhere.
package partners

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/nodetest"
	"github.com/weftmcp/weft/internal/syncbuf"
)

// dir is this package's source directory: the partners' sources live
// beside it, wherever the test runs from.
func dir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("partners: cannot locate the package's sources")
	}
	return filepath.Dir(file)
}

// NPM returns the node binary and the entry script of the installed npm
// package pkg (script relative to the package, as its package.json "bin"
// names it).
func NPM(t testing.TB, pkg, script string) (node, entry string) {
	t.Helper()
	node = nodetest.Node(t)
	d := nodetest.Install(t, filepath.Join(dir(t), "npm"))
	entry = filepath.Join(d, "node_modules", pkg, script)
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("%s: %v", pkg, err)
	}
	return node, entry
}

// Everything returns the command line of server-everything over stdio,
// a server speaking only the 2025 era.
func Everything(t testing.TB) []string {
	t.Helper()
	node, entry := NPM(t, "@modelcontextprotocol/server-everything", "dist/index.js")
	return []string{node, entry, "stdio"}
}

// EverythingHTTP starts server-everything's Streamable HTTP mode on a free
// port and returns its MCP endpoint; it stops at the test's end. (It
// listens on every interface: traffic goes to 127.0.0.1 only.)
func EverythingHTTP(t testing.TB) string {
	t.Helper()
	node, entry := NPM(t, "@modelcontextprotocol/server-everything", "dist/index.js")
	port := FreePort(t)
	cmd := exec.Command(node, entry, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	addr := "127.0.0.1:" + strconv.Itoa(port)
	Start(t, cmd, addr)
	return "http://" + addr + "/mcp"
}

var builds sync.Map // source dir → *build

type build struct {
	once sync.Once
	path string
	err  error
}

// TSServer returns the command line of the TypeScript SDK v2 partner
// server (tsserver/server.mjs, both eras, an echo tool) over stdio.
func TSServer(t testing.TB) []string {
	t.Helper()
	node := nodetest.Node(t)
	d := nodetest.Install(t, filepath.Join(dir(t), "tsserver"))
	return []string{node, filepath.Join(d, "server.mjs")}
}

// TSServerHTTP starts the TypeScript SDK v2 partner server over
// Streamable HTTP on a free loopback port and returns its MCP endpoint;
// it stops at the test's end.
func TSServerHTTP(t testing.TB) string {
	t.Helper()
	argv := TSServer(t)
	addr := "127.0.0.1:" + strconv.Itoa(FreePort(t))
	Start(t, exec.Command(argv[0], argv[1], "-http", addr), addr)
	return "http://" + addr + "/mcp"
}

// GoServer returns the binary of the Go partner server in directory name
// (gosdkserver, mcpgoserver), built once per machine.
func GoServer(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join(dir(t), name)
	v, _ := builds.LoadOrStore(src, &build{})
	b := v.(*build)
	b.once.Do(func() { b.path, b.err = buildGo(src, name) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// buildGo builds the module in src into the cache, keyed by its sources.
func buildGo(src, name string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(data))
		h.Write(data)
	}
	io.WriteString(h, runtime.Version())
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	out := filepath.Join(cache, "weft-partners", name+"-"+hex.EncodeToString(h.Sum(nil)[:8]))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	tmp := out + ".tmp" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, ".")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, b)
	}
	return out, os.Rename(tmp, out)
}

// GoServerHTTP starts the Go partner server name over Streamable HTTP on
// a free loopback port and returns its MCP endpoint; it stops at the
// test's end.
func GoServerHTTP(t testing.TB, name string) string {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(FreePort(t))
	Start(t, exec.Command(GoServer(t, name), "-http", addr), addr)
	return "http://" + addr + "/mcp"
}

// Start runs cmd until the test ends and waits for addr to accept
// connections. Its standard error is in the failure message of a command
// that exits or never listens, and logged when the test fails.
func Start(t testing.TB, cmd *exec.Cmd, addr string) {
	t.Helper()
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s stderr:\n%s", cmd.Path, stderr)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before listening on %s: %s", cmd.Path, addr, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s after 30s: %s", cmd.Path, addr, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FreePort returns a port free on 127.0.0.1 and on every interface.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
