package oauth_test

import (
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/client/oauth"
	"github.com/weftmcp/weft/internal/limitsdoc"
)

// TestLimitsDoc holds the Go client's section of docs/limits.md to the
// constants of client and client/oauth.
func TestLimitsDoc(t *testing.T) {
	limits := []limitsdoc.Limit{
		{Doc: "SSE stream resumptions per request (2025 era)", Names: []string{"client.MaxSSEResumes"},
			Default: limitsdoc.Num(client.MaxSSEResumes), Past: []string{"ended before the response"}},
		{Doc: "wait before resuming a stream without a retry field", Names: []string{"client.DefaultSSERetry"},
			Default: limitsdoc.Dur(client.DefaultSSERetry)},
		{Doc: "wait a server's retry field can impose", Names: []string{"client.MaxSSERetry"},
			Default: limitsdoc.Dur(client.MaxSSERetry), Past: []string{"capped"}},
		{Doc: "reopenings of a 2025-era session's GET stream", Names: []string{"client.DefaultSSERetry", "client.MaxSSERetry"},
			Default: limitsdoc.None()},
		{Doc: "closing a 2025-era session (DELETE)", Names: []string{"client.DeleteSessionTimeout"},
			Default: limitsdoc.Dur(client.DeleteSessionTimeout), Past: []string{"abandoned"}},
		{Doc: "wait for the `server/discover` probe of an unpinned client", Names: []string{"client.Options.ProbeTimeout", "client.DefaultProbeTimeout"},
			Default: limitsdoc.Dur(client.DefaultProbeTimeout), Past: []string{"initialize"}},
		{Doc: "posting `notifications/cancelled` for a cancelled 2025-era request over HTTP", Default: limitsdoc.Dur(5 * time.Second), Past: []string{"abandoned"}},
		{Doc: "WWW-Authenticate values of one response", Names: []string{"oauth.MaxChallengeBytes"},
			Default: limitsdoc.Num(oauth.MaxChallengeBytes), Past: []string{"refused"}},
		{Doc: "metadata document, registration or token response", Names: []string{"oauth.MaxMetadataBytes"},
			Default: limitsdoc.Num(oauth.MaxMetadataBytes), Past: []string{"fails"}},
		{Doc: "request body buffered to resend after authorizing (bodies without `GetBody`)", Names: []string{"oauth.MaxRetainedBody"},
			Default: limitsdoc.Num(oauth.MaxRetainedBody), Past: []string{"fails"}},
		{Doc: "step-up authorizations per request on 403 `insufficient_scope`", Names: []string{"oauth.Config.MaxStepUps", "DefaultMaxStepUps"},
			Default: limitsdoc.Num(oauth.DefaultMaxStepUps), Past: []string{"403"}},
		{Doc: "time `weft call --login` waits for the browser", Default: limitsdoc.Dur(5 * time.Minute), Past: []string{"fails"}},
		{Doc: "size of the `mcp.json` a `weft` client command reads", Default: limitsdoc.Num(1 << 20), Past: []string{"larger than"}},
		{Doc: "time a `weft` client command waits for the server (`--timeout`)", Default: limitsdoc.Dur(time.Minute), Past: []string{"fails"}},
	}
	errs, err := limitsdoc.CheckSection("../../docs/limits.md", "Go client", ".", limits,
		[]string{"MaxChallengeBytes", "MaxMetadataBytes", "MaxRetainedBody"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
}
