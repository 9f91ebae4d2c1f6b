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
	errs, err := limitsdoc.CheckSection("../docs/limits.md", "Response cache", ".", limits, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
}
