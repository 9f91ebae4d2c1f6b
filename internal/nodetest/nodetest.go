// Package nodetest runs Node.js scripts against Weft servers in tests, with
// npm packages installed once into a cache directory. When Node or npm is
// missing, a test fails in CI (env CI set) and is skipped elsewhere.
package nodetest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Node returns the path of a node binary (NODE env, then PATH, then the
// conformance runner's cached Node 22), or fails/skips.
func Node(t testing.TB) string {
	t.Helper()
	if n := os.Getenv("NODE"); n != "" {
		return n
	}
	if n, err := exec.LookPath("node"); err == nil {
		return n
	}
	home, _ := os.UserHomeDir()
	matches, _ := filepath.Glob(filepath.Join(home, ".cache/mcp-conformance/node-*/node_modules/node-linux-*/bin/node"))
	if len(matches) > 0 {
		return matches[len(matches)-1]
	}
	missing(t, "node")
	return ""
}

func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is required in CI but was not found", what)
	}
	t.Skipf("%s not found", what)
}

// Install copies the package.json and scripts of srcDir into a cache
// directory keyed by the package.json contents, runs `npm install` there once,
// and returns the directory to run scripts in.
func Install(t testing.TB, srcDir string) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		missing(t, "npm")
	}
	pkg, err := os.ReadFile(filepath.Join(srcDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pkg)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "weft-nodetest", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(srcDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".weft-installed")); err != nil {
		cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm install in %s: %v\n%s", dir, err, out)
		}
		if err := os.WriteFile(filepath.Join(dir, "node_modules", ".weft-installed"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
