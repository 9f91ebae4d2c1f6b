package middleware_test

import (
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
	errs, err := limitsdoc.Uncovered(".", limits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
}
