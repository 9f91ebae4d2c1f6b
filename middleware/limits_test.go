package middleware_test

import (
	"slices"
	"testing"

	"github.com/weftmcp/weft/internal/limitsdoc"
	"github.com/weftmcp/weft/middleware"
)

// TestLimitsDoc holds the response cache's limits to their section of
// docs/limits.md, both ways, and fails when a constant of the package named
// like a limit is in no row.
func TestLimitsDoc(t *testing.T) {
	limits := []limitsdoc.Limit{
		{Doc: "cached results", Names: []string{"CacheOptions.MaxEntries", "DefaultCacheEntries"},
			Default: limitsdoc.Num(middleware.DefaultCacheEntries), Past: []string{"least recently used"}},
		{Doc: "time a result is kept", Names: []string{"CacheOptions.MaxEntryTTL"},
			Default: limitsdoc.None(), Past: []string{"dropped"}},
	}
	all, err := limitsdoc.Parse("../docs/limits.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := limitsdoc.InSections(all, "Response cache")
	if len(rows) == 0 {
		t.Fatal("docs/limits.md has no Response cache section")
	}
	for _, e := range limitsdoc.Check(rows, limits) {
		t.Error(e)
	}
	consts, err := limitsdoc.Constants(".", limitsdoc.LimitName)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range consts {
		if !slices.ContainsFunc(limits, func(l limitsdoc.Limit) bool { return slices.Contains(l.Names, c) }) {
			t.Errorf("constant %s names a limit that docs/limits.md (Response cache) lacks", c)
		}
	}
}
