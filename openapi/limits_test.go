package openapi

import (
	"testing"

	"github.com/weftmcp/weft/internal/limitsdoc"
)

// openapiLimits are the package's limits, in the order of its section of
// docs/limits.md; consts names unexported constants a row documents.
var notLimits = map[string]string{"DefaultResourceScheme": "a URI scheme, not a bound"}

var openapiLimits = []struct {
	limitsdoc.Limit
	consts []string
}{
	{Limit: limitsdoc.Limit{Doc: "OpenAPI document", Names: []string{"Options.MaxDocumentBytes", "DefaultMaxDocumentBytes"},
		Default: limitsdoc.Num(DefaultMaxDocumentBytes), Past: []string{"refused"}}},
	{Limit: limitsdoc.Limit{Doc: "nesting of the document's flow collections (`{…}`, `[…]`; all of a JSON document's nesting), checked by one pass over the bytes before any parser",
		Names: []string{"Options.MaxDocumentDepth", "DefaultMaxDocumentDepth"}, Default: limitsdoc.Num(DefaultMaxDocumentDepth), Past: []string{"refused"}}},
	{Limit: limitsdoc.Limit{Doc: "nodes one operation's schemas copy", Names: []string{"Options.MaxSchemaNodes", "DefaultMaxSchemaNodes"},
		Default: limitsdoc.Num(DefaultMaxSchemaNodes), Past: []string{"left out", "Strict"}}},
	{Limit: limitsdoc.Limit{Doc: "bytes (about) one tool schema copies before references not yet copied are summarised (their type, and the schema resource that holds them)",
		Names: []string{"Options.MaxInlineSchemaBytes", "DefaultMaxInlineSchemaBytes"}, Default: limitsdoc.Num(DefaultMaxInlineSchemaBytes), Past: []string{"summarised"}}},
	{Limit: limitsdoc.Limit{Doc: "nesting in one converted schema", Default: limitsdoc.Num(maxDepth), Past: []string{"left out"}}, consts: []string{"maxDepth"}},
	{Limit: limitsdoc.Limit{Doc: "schema references followed one inside the other", Default: limitsdoc.Num(maxChain), Past: []string{"left out"}}, consts: []string{"maxChain"}},
	{Limit: limitsdoc.Limit{Doc: "one upstream request, body included", Names: []string{"Options.Timeout", "DefaultTimeout"},
		Default: limitsdoc.Dur(DefaultTimeout), Past: []string{"tool error"}}},
	{Limit: limitsdoc.Limit{Doc: "upstream response body", Names: []string{"Options.MaxResponseBytes", "DefaultMaxResponseBytes"},
		Default: limitsdoc.Num(DefaultMaxResponseBytes), Past: []string{"tool error"}}},
	{Limit: limitsdoc.Limit{Doc: "body excerpt in a tool error", Names: []string{"Options.MaxErrorBytes", "DefaultMaxErrorBytes"},
		Default: limitsdoc.Num(DefaultMaxErrorBytes), Past: []string{"cut"}}},
}

// TestLimitsDoc holds the package's limits to its section of
// docs/limits.md, both ways.
func TestLimitsDoc(t *testing.T) {
	var limits []limitsdoc.Limit
	var also []string
	for _, l := range openapiLimits {
		limits = append(limits, l.Limit)
		also = append(also, l.consts...)
	}
	errs, err := limitsdoc.CheckSection("../docs/limits.md", "OpenAPI", ".", limits, also, notLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
}
