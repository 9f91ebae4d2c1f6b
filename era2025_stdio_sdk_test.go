package weft

import (
	"testing"

	"github.com/weftmcp/weft/internal/sdkclients"
)

// TestLegacyStdioSDKClients runs the official Go SDK and TypeScript SDK v2
// clients in their 2025-11-25 mode over stdio against weft-conformance
// -stdio: each subscribes, the server changes the resource, the tool list and
// the prompt list, and the clients' handlers fire; after unsubscribe no
// update arrives.
func TestLegacyStdioSDKClients(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the fixture server and runs SDK clients")
	}
	bin := buildFixtureServer(t)
	t.Run("go-sdk", func(t *testing.T) {
		sdkclients.GoSDK(t, sdkclients.Conformance(), bin, "-stdio").Check(t, sdkclients.Conformance())
	})
	t.Run("typescript-sdk-v2", func(t *testing.T) {
		sdkclients.TypeScript(t, sdkclients.Conformance(), bin, "-stdio").Check(t, sdkclients.Conformance())
	})
}
