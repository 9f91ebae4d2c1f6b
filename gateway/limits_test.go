package gateway

import (
	"fmt"
	"testing"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway/usertoken"
	"github.com/weftmcp/weft/internal/limitsdoc"
	"github.com/weftmcp/weft/quota"
)

// gatewayLimits are the gateway's limits, in the order of its section of
// docs/limits.md. consts names the package's unexported constants a row
// documents (the doc names exported identifiers only).
var gatewayLimits = []struct {
	limitsdoc.Limit
	consts []string
}{
	{Limit: limitsdoc.Limit{Doc: "processes of a 2025-era command upstream", Names: []string{"UpstreamConfig.MaxProcesses", "DefaultMaxProcesses", "MaxProcessesCeiling"},
		Default: limitsdoc.Num(DefaultMaxProcesses), Ceiling: limitsdoc.Num(MaxProcessesCeiling), Past: []string{"-31050"}}},
	{Limit: limitsdoc.Limit{Doc: "processes one caller's calls run or wait on, of a 2025-era command upstream", Names: []string{"UpstreamConfig.MaxCallsPerCaller", "DefaultMaxCallsPerCaller"},
		Default: limitsdoc.Num(DefaultMaxCallsPerCaller), Past: []string{"-31050", "callTimeout"}}},
	{Limit: limitsdoc.Limit{Doc: "parked calls of an upstream on one instance", Names: []string{"UpstreamConfig.MaxParkedCalls", "DefaultMaxParkedCalls", "MaxParkedCeiling"},
		Default: limitsdoc.Num(DefaultMaxParkedCalls), Ceiling: limitsdoc.Num(MaxParkedCeiling), Past: []string{"-32603", "retry later"}}},
	{Limit: limitsdoc.Limit{Doc: "parked calls of one caller on an upstream on one instance", Names: []string{"UpstreamConfig.MaxParkedPerCaller", "DefaultMaxParkedPerCaller"},
		Default: limitsdoc.Num(DefaultMaxParkedPerCaller), Past: []string{"-32603", "waiting for input"}}},
	{Limit: limitsdoc.Limit{Doc: "upstream call time", Names: []string{"UpstreamConfig.CallTimeout", "DefaultCallTimeout"},
		Default: limitsdoc.Dur(DefaultCallTimeout), Past: []string{"-31050"}}},
	{Limit: limitsdoc.Limit{Doc: "upstream connect time", Names: []string{"UpstreamConfig.ConnectTimeout", "DefaultConnectTimeout"},
		Default: limitsdoc.Dur(DefaultConnectTimeout), Past: []string{"-31050"}}},
	{Limit: limitsdoc.Limit{Doc: "command stop, per stage", Names: []string{"UpstreamConfig.ShutdownTimeout", "DefaultShutdownTimeout"},
		Default: limitsdoc.Dur(DefaultShutdownTimeout), Past: []string{"SIGKILL"}}},
	{Limit: limitsdoc.Limit{Doc: "input rounds per parked call", Names: []string{"InputConfig.MaxRounds", "DefaultMaxRounds", "MaxRoundsCeiling"},
		Default: limitsdoc.Num(DefaultMaxRounds), Ceiling: limitsdoc.Num(MaxRoundsCeiling), Past: []string{"-32603"}}},
	{Limit: limitsdoc.Limit{Doc: "parked calls", Names: []string{"InputConfig.MaxParked", "DefaultMaxParked", "MaxParkedCeiling"},
		Default: limitsdoc.Num(DefaultMaxParked), Ceiling: limitsdoc.Num(MaxParkedCeiling), Past: []string{"-32603", "retry later"}}},
	{Limit: limitsdoc.Limit{Doc: "parked calls per partition", Names: []string{"InputConfig.MaxParkedPerPartition", "DefaultMaxParkedPerPartition", "MaxParkedCeiling"},
		Default: limitsdoc.Num(DefaultMaxParkedPerPartition), Ceiling: limitsdoc.Num(MaxParkedCeiling), Past: []string{"-32603", "retry later"}}},
	{Limit: limitsdoc.Limit{Doc: "parked call lifetime", Names: []string{"InputConfig.Lifetime", "DefaultLifetime", "MaxLifetime"},
		Default: limitsdoc.Dur(DefaultLifetime), Ceiling: limitsdoc.Dur(MaxLifetime), Past: []string{"cancelled upstream", "-32602"}}},
	{Limit: limitsdoc.Limit{Doc: "parked call lease", Names: []string{"InputConfig.Lease", "DefaultLease", "MaxLease"},
		Default: limitsdoc.Dur(DefaultLease), Ceiling: limitsdoc.Dur(MaxLease), Past: []string{"-32602"}}},
	{Limit: limitsdoc.Limit{Doc: "an upstream's requests unanswered at once (of one call over HTTP, of one process over stdio)", Names: []string{"client.MaxServerRequests"},
		Default: limitsdoc.Num(client.MaxServerRequests), Past: []string{"-31050", "broke the protocol", "connection to it broke"}}},
	{Limit: limitsdoc.Limit{Doc: "configuration document", Default: limitsdoc.Num(maxConfigBytes), Past: []string{"configuration error"}},
		consts: []string{"maxConfigBytes"}},
	{Limit: limitsdoc.Limit{Doc: "upstream message (stdio line, HTTP body or SSE event)", Names: []string{"exactjson.MaxInputBytesCeiling"},
		Default: limitsdoc.Num(exactjson.MaxInputBytesCeiling), Past: []string{"-31050"}}},
	{Limit: limitsdoc.Limit{Doc: "auto-detection probe", Default: limitsdoc.Dur(autoDetectTimeout), Past: []string{"initialize"}},
		consts: []string{"autoDetectTimeout"}},
	{Limit: limitsdoc.Limit{Doc: "closing a 2025 HTTP session", Names: []string{"client.DeleteSessionTimeout"}, Default: limitsdoc.Dur(client.DeleteSessionTimeout), Past: []string{"abandoned"}}},
	{Limit: limitsdoc.Limit{Doc: "resource subscriptions per upstream", Default: limitsdoc.Num(maxResourceSubscriptions), Past: []string{"not relayed"}},
		consts: []string{"maxResourceSubscriptions"}},
	{Limit: limitsdoc.Limit{Doc: "pages of a relayed directory read", Default: limitsdoc.Num(maxDirectoryPages), Past: []string{"-31050"}},
		consts: []string{"maxDirectoryPages"}},
	{Limit: limitsdoc.Limit{Doc: "URL interactions of a relayed -32042", Default: limitsdoc.Num(maxURLElicitations), Past: []string{"untranslated"}},
		consts: []string{"maxURLElicitations"}},
	{Limit: limitsdoc.Limit{Doc: "callers' cached views of a mount", Default: limitsdoc.Num(maxCallerViews), Past: []string{"dropped"}},
		consts: []string{"maxCallerViews"}},
	{Limit: limitsdoc.Limit{Doc: "tasks of a 2025-era upstream known to one instance", Default: limitsdoc.Num(maxLegacyTasks), Past: []string{"-32603", "retry later"}},
		consts: []string{"maxLegacyTasks", "legacyTaskKeep"}},
	{Limit: limitsdoc.Limit{Doc: "polling of a 2025-era upstream's task", Default: limitsdoc.Dur(defaultLegacyPoll), Ceiling: limitsdoc.Dur(maxLegacyPoll), Past: []string{"pollInterval"}},
		consts: []string{"defaultLegacyPoll", "minLegacyPoll", "maxLegacyPoll"}},
	{Limit: limitsdoc.Limit{Doc: "an upstream's oauth token file", Names: []string{"MaxTokenFileBytes"}, Default: limitsdoc.Num(MaxTokenFileBytes), Past: []string{"-31050"}}},
	{Limit: limitsdoc.Limit{Doc: "per-user connections to one upstream (`oauth.perUser`)", Names: []string{"UserAuthorization.MaxConnections", "DefaultMaxUserConnections"},
		Default: limitsdoc.Num(DefaultMaxUserConnections), Past: []string{"least recently used"}}},
	{Limit: limitsdoc.Limit{Doc: "per-user authorization link and started flow", Names: []string{"UserAuthorization.LinkLifetime", "DefaultAuthorizationLinkLifetime", "MaxAuthorizationLinkLifetime"},
		Default: limitsdoc.Dur(DefaultAuthorizationLinkLifetime), Ceiling: limitsdoc.Dur(MaxAuthorizationLinkLifetime), Past: []string{"expired"}}},
	{Limit: limitsdoc.Limit{Doc: "a browser's sign-in at the gateway's authorization pages", Names: []string{"UserAuthorization.SignIn.SessionLifetime", "DefaultSignInLifetime", "MaxSignInLifetime"},
		Default: limitsdoc.Dur(DefaultSignInLifetime), Ceiling: limitsdoc.Dur(MaxSignInLifetime), Past: []string{"sign in again"}}},
	{Limit: limitsdoc.Limit{Doc: "one user's used authorization links at one upstream, until they expire", Names: []string{"usertoken.MaxClaims"},
		Default: limitsdoc.Num(usertoken.MaxClaims), Past: []string{"could not be started"}}},
	{Limit: limitsdoc.Limit{Doc: "users' upstream tokens in a memory store", Names: []string{"usertoken.NewMemory", "usertoken.DefaultMaxMemoryRecords"},
		Default: limitsdoc.Num(usertoken.DefaultMaxMemoryRecords), Past: []string{"-31050", "usertoken.ErrFull"}}},
	{Limit: limitsdoc.Limit{Doc: "policy rules", Names: []string{"Config.Policy", "MaxPolicyRules"}, Ceiling: limitsdoc.Num(MaxPolicyRules), Past: []string{"configuration error"}}},
	{Limit: limitsdoc.Limit{Doc: "quotas", Names: []string{"Config.Limits", "MaxLimitRules"}, Ceiling: limitsdoc.Num(MaxLimitRules), Past: []string{"configuration error"}}},
	{Limit: limitsdoc.Limit{Doc: "callers counted by an instance's quotas in memory", Names: []string{"quota.NewMemory", "quota.DefaultMaxMemoryKeys"},
		Default: limitsdoc.Num(quota.DefaultMaxMemoryKeys), Past: []string{"-31999"}}},
	{Limit: limitsdoc.Limit{Doc: "quota key", Names: []string{"quota.MaxKeyBytes"}, Default: limitsdoc.Num(quota.MaxKeyBytes), Past: []string{"-32603"}}},
}

// notLimits are the package's constants named like limits that bound
// nothing a client or an upstream makes large.
var notLimits = map[string]string{
	"maxIdleConnsPerUpstream": "the idle connections kept for reuse; more are opened and closed as needed",
	"callerListTTL":           "how long a caller's view of a mount is reused, a freshness window",
	"failTimeout":             "a kind of failure, not a bound",
}

// TestLimitsDoc holds the gateway's limits to its section of
// docs/limits.md, both ways, and fails when a constant of the package named
// like a limit is in no row (nor in notLimits).
func TestLimitsDoc(t *testing.T) {
	var limits []limitsdoc.Limit
	var also []string
	for _, l := range gatewayLimits {
		limits = append(limits, l.Limit)
		also = append(also, l.consts...)
	}
	errs, err := limitsdoc.CheckSection("../docs/limits.md", "Gateway", ".", limits, also, notLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
}

// TestConfigCeilings: each configured bound is accepted at its ceiling and
// refused one past it (and below zero).
func TestConfigCeilings(t *testing.T) {
	base := func() Config {
		return Config{Upstreams: []UpstreamConfig{{Name: "up", Command: "true"}}}
	}
	tests := []struct {
		name    string
		set     func(c *Config, v int)
		ceiling int
	}{
		{"maxProcesses", func(c *Config, v int) { c.Upstreams[0].MaxProcesses = v }, MaxProcessesCeiling},
		{"input.maxRounds", func(c *Config, v int) { c.Input.MaxRounds = v }, MaxRoundsCeiling},
		{"input.maxParked", func(c *Config, v int) { c.Input.MaxParked = v }, MaxParkedCeiling},
		{"input.maxParkedPerPartition", func(c *Config, v int) { c.Input.MaxParkedPerPartition = v }, MaxParkedCeiling},
		{"input.lifetime (minutes)", func(c *Config, v int) { c.Input.Lifetime = Duration(time.Duration(v) * time.Minute) }, int(MaxLifetime / time.Minute)},
	}
	for _, tc := range tests {
		for _, v := range []int{tc.ceiling, tc.ceiling + 1, -1} {
			t.Run(fmt.Sprintf("%s=%d", tc.name, v), func(t *testing.T) {
				c := base()
				tc.set(&c, v)
				err := c.Validate()
				if want := v >= 0 && v <= tc.ceiling; (err == nil) != want {
					t.Errorf("Validate = %v, want accepted %v", err, want)
				}
			})
		}
	}
}
