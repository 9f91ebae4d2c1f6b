package weft

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryFuzzTargetHasSeedCorpus: every `func FuzzX` of the module has
// seed files in its package's testdata/fuzz/FuzzX/ (go test's corpus
// format), so that a plain `go test` replays them and CI fuzzes from them.
func TestEveryFuzzTargetHasSeedCorpus(t *testing.T) {
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9_]*)\(`)
	targets := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			if path != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module (bench/)
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllSubmatch(src, -1) {
			targets++
			dir := filepath.Join(filepath.Dir(path), "testdata", "fuzz", string(m[1]))
			entries, err := os.ReadDir(dir)
			seeds := 0
			for _, e := range entries {
				b, rerr := os.ReadFile(filepath.Join(dir, e.Name()))
				if rerr == nil && bytes.HasPrefix(b, []byte("go test fuzz v1\n")) {
					seeds++
				}
			}
			if err != nil || seeds == 0 {
				t.Errorf("%s (%s) has no seed corpus in %s", m[1], path, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if targets < 15 {
		t.Fatalf("found only %d fuzz targets; is the walk broken?", targets)
	}
}
