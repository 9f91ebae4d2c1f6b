package weft

// The limits inventory (issue #8, item 1): every bound a client can push on
// is a row of invLimits below, naming its constants, its default and its
// ceiling. Four tests walk the table:
//
//   - TestLimitsInventoryMatchesDoc parses the tables of docs/limits.md and
//     fails when a documented limit is missing from the inventory or the
//     other way round, when the constants a row names differ, or when a
//     documented default, ceiling or "past it" outcome differs from the code.
//   - TestLimitsInventoryDefaultsAndCeilings checks the defaults a zero
//     configuration gets and that ceiling+1 (and negative values) are
//     configuration errors reported by NewServer(...).Err().
//   - TestLimitsInventoryBoundaries runs each row's check: a request exactly
//     at the limit passes and one past it fails with the documented status
//     and code, over real HTTP (httptest.NewServer) where the bound is
//     HTTP-visible, with small configured limits where the default is too
//     big to exercise quickly (and at the default where it is cheap).
//   - TestLimitsInventoryConstants fails when a constant of the package named
//     like a limit (limitsdoc.LimitName) is in no row, nor in invNotLimits.
//   - TestLimitsInventoryGaps lists what the issue asks for and the code does
//     not have yet (a bound without a named constant, a documented value the
//     code does not enforce exactly); it fails while the list is not empty.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/internal/hdr"
	"github.com/weftmcp/weft/internal/limitsdoc"
	"github.com/weftmcp/weft/internal/uritemplate"
	"github.com/weftmcp/weft/seal"
	"github.com/weftmcp/weft/sessionstore"
	"github.com/weftmcp/weft/task"
)

// invVal is a default or ceiling: none, a number, a duration, or a
// reference to another limit.
type invVal = limitsdoc.Value

func invNone() invVal                     { return limitsdoc.None() }
func invNum(n int64) invVal               { return limitsdoc.Num(n) }
func invDur(d time.Duration) invVal       { return limitsdoc.Dur(d) }
func invRef(name string) invVal           { return limitsdoc.Ref(name) }
func invNumI[T ~int | ~int64](n T) invVal { return invNum(int64(n)) }

// invLimit is one row of the inventory.
type invLimit struct {
	doc   string   // the "limit" column of docs/limits.md, verbatim
	names []string // every backticked identifier of the row's field/default/ceiling/value columns
	// consts are the package's further constants the row documents (its
	// default and ceiling when the doc names only the field, unexported
	// bounds): with names, they cover every constant named like a limit.
	consts []string
	def    invVal   // the default in effect (from the code's constants or a default server)
	ceil   invVal   // the hard ceiling (none when there is none)
	past   []string // substrings the doc's "past it" column must contain
	// gap says what the issue asks for and the code lacks; empty when none.
	gap string
	// check exercises the bound; nil only where documented as not testable.
	check func(t *testing.T)
	// why explains a nil check.
	why string
}

// invDefaults is a server with a zero configuration, for effective defaults
// that have no named constant.
var invDefaults = func() *Server {
	s, err := NewServer(Implementation{}, nil)
	if err != nil {
		panic(err)
	}
	return s
}()

// invLimits is the inventory. Keep it in the order of docs/limits.md.
var invLimits = []invLimit{
	// Transport and pipeline.
	{doc: "HTTP request body / stdio line", consts: []string{"defaultMaxBodyBytes", "maxBodyBytesCeiling"}, names: []string{"Limits.MaxBodyBytes"},
		def: invNumI(defaultMaxBodyBytes), ceil: invNumI(maxBodyBytesCeiling), past: []string{"413", "-32700"}, check: checkBodyBytes},
	{doc: "response size", names: []string{"Limits.MaxOutputBytes"}, consts: []string{"defaultMaxOutputBytes", "maxOutputBytesCeiling"},
		def: invNumI(defaultMaxOutputBytes), ceil: invNumI(maxOutputBytesCeiling), past: []string{"-32603"}, check: checkOutputBytes},
	{doc: "header fields", names: []string{"Limits.MaxHeaderCount"}, consts: []string{"defaultMaxHeaderCount", "maxHeaderCountCeiling"},
		def: invNumI(defaultMaxHeaderCount), ceil: invNumI(maxHeaderCountCeiling), past: []string{"431"}, check: checkHeaderCount},
	{doc: "header bytes", consts: []string{"defaultMaxHeaderBytes"}, names: []string{"NewHTTPServer", "MaxHeaderBytes"},
		def: invNumI(defaultMaxHeaderBytes), past: []string{"431"}, check: checkHeaderBytes},
	{doc: "pagination cursor", names: []string{"Limits.MaxCursorBytes"}, consts: []string{"defaultMaxCursorBytes", "maxCursorBytesCeiling"},
		def: invNumI(defaultMaxCursorBytes), ceil: invNumI(maxCursorBytesCeiling), past: []string{"-32602"}, check: checkCursorBytes},
	{doc: "resource URI", names: []string{"Limits.MaxURIBytes", "hdr.MaxDecodedValueBytes"}, consts: []string{"defaultMaxURIBytes", "maxURIBytesCeiling"},
		def: invNumI(defaultMaxURIBytes), ceil: invNumI(maxURIBytesCeiling), past: []string{"-32602"}, check: checkURIBytes},
	{doc: "input responses per retry / input requests per result", names: []string{"Limits.MaxInputResponses"},
		consts: []string{"defaultMaxInputResponses", "maxInputResponsesCeiling"},
		def:    invNumI(defaultMaxInputResponses), ceil: invNumI(maxInputResponsesCeiling), past: []string{"-32602", "-32603"}, check: checkInputResponses},
	{doc: "URIs per `subscriptions/listen`", names: []string{"Limits.MaxResourceSubscriptions"},
		consts: []string{"defaultMaxResourceSubscriptions", "maxResourceSubscriptionsCeiling"},
		def:    invNumI(defaultMaxResourceSubscriptions), ceil: invNumI(maxResourceSubscriptionsCeiling), past: []string{"-32602"}, check: checkResourceSubscriptions},
	{doc: "body read time", consts: []string{"defaultBodyTimeout", "maxTimeoutCeiling"}, names: []string{"Options.BodyTimeout"},
		def: invDur(defaultBodyTimeout), ceil: invDur(maxTimeoutCeiling), past: []string{"400"}, check: checkBodyTimeout},
	{doc: "header read time", consts: []string{"defaultReadHeaderTimeout"}, names: []string{"NewHTTPServer", "ReadHeaderTimeout"},
		def: invDur(defaultReadHeaderTimeout), past: []string{"connection closed"}, check: checkReadHeaderTimeout},
	{doc: "SSE keep-alive", consts: []string{"defaultKeepAlive"}, names: []string{"Options.KeepAlive"},
		def: invDur(defaultKeepAlive), check: checkKeepAlive},
	{doc: "response write time", consts: []string{"defaultWriteTimeout"}, names: []string{"Options.WriteTimeout"},
		def: invDur(defaultWriteTimeout), ceil: invDur(maxTimeoutCeiling), past: []string{"cut"}, check: checkWriteTimeout},
	{doc: "list page size", consts: []string{"defaultPageSize"}, names: []string{"Options.PageSize"},
		def: invNumI(defaultPageSize), check: checkPageSize},
	{doc: "authorization partition", consts: []string{"maxPartitionBytes"}, names: []string{"Identity.Partition"},
		ceil: invNumI(maxPartitionBytes), past: []string{"-32603"}, check: checkPartition},
	{doc: "completion values", consts: []string{"maxCompletionValues"}, def: invNumI(maxCompletionValues), past: []string{"hasMore"}, check: checkCompletionValues},
	{doc: "tool search results", names: []string{"ToolSearch.MaxResults", "DefaultToolSearchResults", "MaxToolSearchResults"},
		def: invNumI(DefaultToolSearchResults), ceil: invNumI(MaxToolSearchResults), past: []string{"more", "configuration error of `NewServer`"}, check: checkToolSearchResults},
	{doc: "listen streams per partition", names: []string{"Limits.MaxSubscriptionsPerPartition"},
		consts: []string{"defaultMaxSubscriptionsPerPartition", "maxSubscriptionsPerPartitionCeiling"},
		def:    invNumI(defaultMaxSubscriptionsPerPartition), ceil: invNumI(maxSubscriptionsPerPartitionCeiling), past: []string{"-31999", "Retry-After"}, check: checkSubscriptionsPerPartition},
	{doc: "listen streams per caller", consts: []string{"defaultMaxSubscriptionsPerIdentity", "maxSubscriptionsPerIdentityCeiling"}, names: []string{"Limits.MaxSubscriptionsPerIdentity"},
		def: invNumI(defaultMaxSubscriptionsPerIdentity), ceil: invNumI(maxSubscriptionsPerIdentityCeiling), past: []string{"-31999", "Retry-After"}, check: checkSubscriptionsPerIdentity},
	{doc: "listen streams", consts: []string{"defaultMaxSubscriptions", "maxSubscriptionsCeiling"}, names: []string{"Limits.MaxSubscriptions"},
		def: invNumI(defaultMaxSubscriptions), ceil: invNumI(maxSubscriptionsCeiling), past: []string{"-31999", "Retry-After"}, check: checkSubscriptions},
	{doc: "task ids per listen stream", consts: []string{"maxTaskSubscriptions"},
		def: invNumI(maxTaskSubscriptions), past: []string{"-32602"}, check: checkTaskSubscriptions},
	{doc: "concurrent handlers", consts: []string{"defaultMaxConcurrent", "maxConcurrentCeiling"}, names: []string{"Options.MaxConcurrent"},
		def: invNumI(defaultMaxConcurrent), ceil: invNumI(maxConcurrentCeiling), past: []string{"queued"}, check: checkGate},
	{doc: "queued requests", consts: []string{"defaultMaxQueue", "maxQueueCeiling"}, names: []string{"Options.MaxQueue"},
		def: invNumI(defaultMaxQueue), ceil: invNumI(maxQueueCeiling), past: []string{"503", "Retry-After"}, check: checkGate},
	{doc: "concurrent handlers per caller", consts: []string{"defaultMaxConcurrentPerIdentity"}, names: []string{"Options.MaxConcurrentPerIdentity", "Options.MaxConcurrent"},
		def: invNumI(defaultMaxConcurrentPerIdentity), ceil: invRef("Options.MaxConcurrent"), past: []string{"queued"}, check: checkGatePerIdentity},
	{doc: "queued requests per caller", consts: []string{"defaultMaxQueuePerIdentity"}, names: []string{"Options.MaxQueuePerIdentity", "Options.MaxQueue"},
		def: invNumI(defaultMaxQueuePerIdentity), ceil: invRef("Options.MaxQueue"), past: []string{"503", "Retry-After"}, check: checkGatePerIdentity},
	{doc: "time in the queue", consts: []string{"defaultQueueTimeout"}, names: []string{"Options.QueueTimeout"},
		def: invDur(defaultQueueTimeout), ceil: invDur(maxTimeoutCeiling), past: []string{"503", "Retry-After"}, check: checkQueueTimeout},
	{doc: "request deadline", consts: []string{"defaultRequestTimeout"}, names: []string{"Options.RequestTimeout"},
		def: invDur(defaultRequestTimeout), ceil: invDur(maxTimeoutCeiling), past: []string{"504"}, check: checkRequestTimeout},
	{doc: "rate", names: []string{"Options.RateLimiter", "NewTokenBucket"},
		past: []string{"429", "-31999", "Retry-After"}, check: checkRateLimit},
	{doc: "rate-limit buckets", consts: []string{"defaultTokenBucketMaxKeys"}, names: []string{"TokenBucket.MaxKeys"},
		def: invNumI(defaultTokenBucketMaxKeys), past: []string{"dropped"}, why: "eviction is internal; the constant is checked against the doc"},
	{doc: "readiness check", consts: []string{"readinessTimeout"}, names: []string{"ReadinessHandler", "Options.ReadinessCheck"},
		def: invDur(readinessTimeout), past: []string{"503", "unavailable"}, check: checkReadinessTimeout},
	{doc: "`traceparent` in `_meta`", def: invNum(maxTraceparentBytes), past: []string{"ignored"}, consts: []string{"maxTraceparentBytes"},
		why: "a longer value is ignored (a new trace): TestTracingBoundsAndTransportLink (telemetry_trace_test.go)"},
	{doc: "`tracestate` in `_meta`", def: invNum(maxTracestateBytes), past: []string{"ignored"}, consts: []string{"maxTracestateBytes"},
		why: "read like traceparent, by the same loop of telemetry.extract; not boundary-tested"},
	{doc: "`baggage` in `_meta`", def: invNum(maxBaggageBytes), past: []string{"ignored"}, consts: []string{"maxBaggageBytes"},
		why: "read like traceparent, by the same loop of telemetry.extract; TestTracingBoundsAndTransportLink sends 12,000 bytes"},
	{doc: "bytes a client sends on a detached listen stream", def: invNum(maxIgnoredListenBytes), past: []string{"closed"}, consts: []string{"maxIgnoredListenBytes"},
		why: "pipelined bytes on an HTTP/1.1 connection whose stream is detached; not boundary-tested"},
	{doc: "integer exponent spelled out in input answers", def: invNum(maxPlainExponent), past: []string{"exponent form"}, consts: []string{"maxPlainExponent"},
		why: "bounds the digits 1E+N becomes for an integer field; not boundary-tested"},

	// JSON.
	{doc: "input bytes", names: []string{"MaxInputBytes", "Limits.MaxBodyBytes"},
		def: invRef("Limits.MaxBodyBytes"), ceil: invNumI(exactjson.MaxInputBytesCeiling), past: []string{"-32700"}, check: checkJSONInputBytes},
	{doc: "nesting depth", names: []string{"MaxDepth"},
		def: invNumI(exactjson.DefaultMaxDepth), ceil: invNumI(exactjson.MaxDepthCeiling), past: []string{"-32700"}, check: checkJSONDepth},
	{doc: "values (nodes)", names: []string{"MaxNodes"},
		def: invNumI(exactjson.DefaultMaxNodes), ceil: invNumI(exactjson.MaxNodesCeiling), past: []string{"-32700"}, check: checkJSONNodes},
	{doc: "number token length", names: []string{"MaxNumberLength"},
		def: invNumI(exactjson.DefaultMaxNumberLength), ceil: invNumI(exactjson.MaxNumberLengthCeiling), past: []string{"-32700"}, check: checkJSONNumberLength},
	{doc: "number exponent (adjusted)", names: []string{"MaxExponent"},
		def: invNumI(exactjson.DefaultMaxExponent), ceil: invNumI(exactjson.MaxExponentCeiling), past: []string{"-32700"}, check: checkJSONExponent},
	{doc: "decoded string", names: []string{"MaxStringBytes"},
		def: invNumI(exactjson.DefaultMaxStringBytes), ceil: invNumI(exactjson.MaxStringBytesCeiling), past: []string{"-32700"}, check: checkJSONStringBytes},
	{doc: "encoded output", names: []string{"exactjson.DefaultMaxOutputBytes"},
		def: invNumI(exactjson.DefaultMaxOutputBytes), past: []string{"encoding error"}, check: checkJSONOutput},

	// Request state.
	{doc: "encoded `requestState`", names: []string{"StateLimits.MaxEncodedBytes"}, consts: []string{"stateMaxEncodedBytesCeiling", "defaultStateMaxEncodedBytes"},
		def: invNumI(defaultStateMaxEncodedBytes), ceil: invNumI(stateMaxEncodedBytesCeiling), past: []string{"-32602", "-32603"}, check: checkStateEncoded},
	{doc: "sealed plaintext", names: []string{"StateLimits.MaxDecodedBytes"}, consts: []string{"defaultStateMaxDecodedBytes"},
		def: invNumI(defaultStateMaxDecodedBytes), past: []string{"same"}, check: checkStateDecoded},
	{doc: "lifetime from first emission", names: []string{"StateLimits.Lifetime"}, consts: []string{"stateLifetimeCeiling", "defaultStateLifetime"},
		def: invDur(defaultStateLifetime), ceil: invDur(stateLifetimeCeiling), past: []string{"same"}, check: checkStateLifetime},
	{doc: "emitted rounds", names: []string{"StateLimits.Rounds"}, consts: []string{"stateRoundsCeiling", "defaultStateRounds"},
		def: invNumI(defaultStateRounds), ceil: invNumI(stateRoundsCeiling), past: []string{"same"}, check: checkStateRounds},
	{doc: "application-protected state", consts: []string{"maxApplicationStateBytes"}, names: []string{"StateApplication"},
		def: invNumI(maxApplicationStateBytes), past: []string{"-32602", "-32603"}, check: checkApplicationState},
	{doc: "seal token (package seal)", names: []string{"seal.ManagerOptions.MaxTokenBytes"},
		def: invNumI(seal.DefaultMaxTokenBytes), past: []string{"invalid state"}, check: checkSealTokenBytes},
	{doc: "key id", names: []string{"seal.MaxKeyIDLength"},
		def: invNumI(seal.MaxKeyIDLength), past: []string{"error"}, check: checkKeyID},
	{doc: "key secret", names: []string{"seal.MinKeyBytes"},
		def: invNumI(seal.MinKeyBytes), past: []string{"error"}, check: checkKeySecret},
	{doc: "seals per key", def: invNum(1 << 32), past: []string{"ErrKeyExhausted"},
		why: "2^32 seals; the counter (seal.maxSealsPerKey) is unexported and tested in package seal"},

	// Headers and templates.
	{doc: "decoded `Mcp-Name` / `Mcp-Param-*` value", names: []string{"hdr.MaxDecodedValueBytes"},
		def: invNumI(hdr.MaxDecodedValueBytes), past: []string{"-32020"}, check: checkHeaderValue},
	{doc: "URI template length", def: invNumI(uritemplate.MaxTemplateBytes), past: []string{"registration error"}, check: checkTemplateLength},
	{doc: "template variables", def: invNumI(uritemplate.MaxVariables), past: []string{"registration error"}, check: checkTemplateVariables},
	{doc: "variable name", def: invNumI(uritemplate.MaxVariableNameBytes), past: []string{"registration error"}, check: checkTemplateVarName},
	{doc: "template match work", def: invNumI(uritemplate.MaxMatchSteps), past: []string{"-32602"}, check: checkTemplateMatchWork},

	// 2025-11-25 sessions.
	{doc: "sessions (per store, so per fleet on PostgreSQL)", names: []string{"sessionstore.Limits.MaxSessions", "DefaultMaxSessions", "MaxSessionsCeiling"},
		def: invNumI(sessionstore.DefaultMaxSessions), ceil: invNumI(sessionstore.MaxSessionsCeiling), past: []string{"503", "Retry-After"}, check: checkLegacySessions},
	{doc: "sessions per identity", names: []string{"sessionstore.Limits.MaxPerIdentity", "DefaultMaxPerIdentity"},
		def: invNumI(sessionstore.DefaultMaxPerIdentity), ceil: invNumI(sessionstore.MaxSessionsCeiling), past: []string{"503"}, check: checkLegacySessionsPerIdentity},
	{doc: "sessions per partition", names: []string{"sessionstore.Limits.MaxPerPartition", "DefaultMaxPerPartition"},
		def: invNumI(sessionstore.DefaultMaxPerPartition), ceil: invNumI(sessionstore.MaxSessionsCeiling), past: []string{"503"}, check: checkLegacySessionsPerPartition},
	{doc: "pending client answers per session", names: []string{"sessionstore.Limits.MaxPendingAnswers"},
		def: invNumI(sessionstore.DefaultMaxPendingAnswers), ceil: invNumI(sessionstore.MaxPendingAnswersCeiling), past: []string{"-32603"}, check: checkLegacyPendingAnswers},
	{doc: "session id length", names: []string{"sessionstore.MaxIDBytes"},
		def: invNumI(sessionstore.MaxIDBytes), past: []string{"404"}, check: checkLegacySessionID},
	{doc: "idle lifetime", names: []string{"LegacyOptions.IdleTimeout", "MaxLifetime"}, consts: []string{"defaultLegacyIdleTimeout"},
		def: invDur(defaultLegacyIdleTimeout), ceil: invRef("MaxLifetime"), past: []string{"404"}, check: checkLegacyLifetimes},
	{doc: "absolute lifetime", names: []string{"LegacyOptions.MaxLifetime"}, consts: []string{"defaultLegacyMaxLifetime", "legacyMaxLifetimeCeiling"},
		def: invDur(defaultLegacyMaxLifetime), ceil: invDur(legacyMaxLifetimeCeiling), past: []string{"404"}, check: checkLegacyLifetimes},
	{doc: "input rounds per call", names: []string{"LegacyOptions.MaxRounds"}, consts: []string{"defaultLegacyMaxRounds", "legacyMaxRoundsCeiling"},
		def: invNumI(defaultLegacyMaxRounds), ceil: invNumI(legacyMaxRoundsCeiling), past: []string{"-32603"},
		why: "server-to-client rounds of a legacy session; exercised by TestLegacyBridgeLimits (era2025_bridge_test.go)"},
	{doc: "wait for one round of answers", names: []string{"LegacyOptions.InputTimeout"}, consts: []string{"defaultLegacyInputTimeout", "legacyInputTimeoutCeiling"},
		def: invDur(defaultLegacyInputTimeout), ceil: invDur(legacyInputTimeoutCeiling), past: []string{"-32603"},
		why: "server-to-client rounds of a legacy session; exercised by TestLegacyBridgeLimits (era2025_bridge_test.go)"},
}

// ---------------------------------------------------------------------------
// docs/limits.md

// invOtherSections are the sections of docs/limits.md whose limits other
// packages hold to it (TestLimitsDoc in middleware, task, gateway, openapi, client/oauth and authserver).
var invOtherSections = []string{"Response cache", "Gateway", "Tasks", "OpenAPI", "Go client", "Authorization server"}

func TestLimitsInventoryMatchesDoc(t *testing.T) {
	all, err := limitsdoc.Parse("docs/limits.md")
	if err != nil {
		t.Fatal(err)
	}
	other, doc := limitsdoc.InSections(all, invOtherSections...)
	if len(doc) < 30 || len(other) == 0 {
		t.Fatalf("docs/limits.md: only %d table rows found here and %d elsewhere; the parser is out of date", len(doc), len(other))
	}
	limits := make([]limitsdoc.Limit, len(invLimits))
	for i, l := range invLimits {
		limits[i] = limitsdoc.Limit{Doc: l.doc, Names: l.names, Default: l.def, Ceiling: l.ceil, Past: l.past}
	}
	for _, e := range limitsdoc.Check(doc, limits) {
		t.Error(e)
	}
}

// invNotLimits are the package's constants named like limits that bound
// nothing a client makes large.
var invNotLimits = map[string]string{
	"maxPooledScratch":      "the largest buffer kept for reuse; larger ones are allocated and dropped",
	"maxPooledWire":         "the largest response buffer kept for reuse; larger ones are allocated and dropped",
	"maxIdleTenants":        "the idle per-caller records the handler gate keeps for reuse; more are dropped",
	"DefaultToolSearchName": "the search tool's name, no bound",
}

func TestLimitsInventoryConstants(t *testing.T) {
	var limits []limitsdoc.Limit
	var also []string
	for _, l := range invLimits {
		limits = append(limits, limitsdoc.Limit{Names: l.names})
		also = append(also, l.consts...)
	}
	errs, err := limitsdoc.Uncovered(".", limits, also, invNotLimits)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
}

func TestLimitsInventoryGaps(t *testing.T) {
	for _, l := range invLimits {
		if l.check == nil && l.why == "" {
			t.Errorf("%q has neither a boundary check nor a reason why not", l.doc)
		}
		if l.gap != "" {
			t.Errorf("%s: %s", l.doc, l.gap)
		}
	}
}

func TestLimitsInventoryBoundaries(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range invLimits {
		if l.check == nil {
			continue
		}
		name := fmt.Sprintf("%p", l.check)
		if seen[name] {
			continue // one check covers several rows (the handler gate)
		}
		seen[name] = true
		t.Run(invSubtestName(l.doc), func(t *testing.T) { l.check(t) })
	}
}

func invSubtestName(s string) string {
	return strings.NewReplacer(" ", "_", "`", "", "/", "-").Replace(s)
}

// TestLimitsInventoryDefaultsAndCeilings: the defaults a zero configuration
// gets, and configuration errors at ceiling+1 and below zero.
func TestLimitsInventoryDefaultsAndCeilings(t *testing.T) {
	s, err := NewServer(Implementation{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := s.limits
	want := Limits{MaxBodyBytes: defaultMaxBodyBytes, MaxOutputBytes: defaultMaxOutputBytes, MaxHeaderCount: defaultMaxHeaderCount,
		MaxCursorBytes: defaultMaxCursorBytes, MaxURIBytes: defaultMaxURIBytes, MaxInputResponses: defaultMaxInputResponses,
		MaxResourceSubscriptions: defaultMaxResourceSubscriptions, MaxSubscriptionsPerPartition: defaultMaxSubscriptionsPerPartition,
		MaxSubscriptionsPerIdentity: defaultMaxSubscriptionsPerIdentity, MaxSubscriptions: defaultMaxSubscriptions,
		JSON: exactjson.Limits{MaxInputBytes: defaultMaxBodyBytes}}
	if got != want {
		t.Errorf("default Limits:\n got %+v\nwant %+v", got, want)
	}
	if s.state != (StateLimits{Lifetime: defaultStateLifetime, Rounds: defaultStateRounds,
		MaxEncodedBytes: defaultStateMaxEncodedBytes, MaxDecodedBytes: defaultStateMaxDecodedBytes}) {
		t.Errorf("default StateLimits: %+v", s.state)
	}
	if s.opts.MaxConcurrentPerIdentity != defaultMaxConcurrentPerIdentity || s.opts.MaxQueuePerIdentity != defaultMaxQueuePerIdentity {
		t.Errorf("default per-caller shares: %d %d", s.opts.MaxConcurrentPerIdentity, s.opts.MaxQueuePerIdentity)
	}
	if s.opts.MaxConcurrent != defaultMaxConcurrent || s.opts.MaxQueue != defaultMaxQueue ||
		s.opts.QueueTimeout != defaultQueueTimeout || s.opts.RequestTimeout != defaultRequestTimeout {
		t.Errorf("default overload options: %d %d %s %s", s.opts.MaxConcurrent, s.opts.MaxQueue, s.opts.QueueTimeout, s.opts.RequestTimeout)
	}
	if hs := NewHTTPServer("127.0.0.1:0", nil); hs.MaxHeaderBytes != defaultMaxHeaderBytes {
		t.Errorf("NewHTTPServer MaxHeaderBytes = %d", hs.MaxHeaderBytes)
	}
	// A configured JSON.MaxInputBytes is always replaced by MaxBodyBytes.
	s2, err := NewServer(Implementation{}, &Options{Limits: Limits{MaxBodyBytes: 4096, JSON: exactjson.Limits{MaxInputBytes: 99}}})
	if err != nil {
		t.Fatal(err)
	}
	if s2.limits.JSON.MaxInputBytes != 4096 {
		t.Errorf("JSON.MaxInputBytes = %d, want MaxBodyBytes 4096", s2.limits.JSON.MaxInputBytes)
	}

	type field struct {
		name    string
		set     func(l *Limits, v int)
		ceiling int
	}
	fields := []field{
		{"MaxBodyBytes", func(l *Limits, v int) { l.MaxBodyBytes = v }, maxBodyBytesCeiling},
		{"MaxOutputBytes", func(l *Limits, v int) { l.MaxOutputBytes = v }, maxOutputBytesCeiling},
		{"MaxHeaderCount", func(l *Limits, v int) { l.MaxHeaderCount = v }, maxHeaderCountCeiling},
		{"MaxCursorBytes", func(l *Limits, v int) { l.MaxCursorBytes = v }, maxCursorBytesCeiling},
		{"MaxURIBytes", func(l *Limits, v int) { l.MaxURIBytes = v }, maxURIBytesCeiling},
		{"MaxInputResponses", func(l *Limits, v int) { l.MaxInputResponses = v }, maxInputResponsesCeiling},
		{"MaxResourceSubscriptions", func(l *Limits, v int) { l.MaxResourceSubscriptions = v }, maxResourceSubscriptionsCeiling},
		{"MaxSubscriptionsPerPartition", func(l *Limits, v int) { l.MaxSubscriptionsPerPartition = v }, maxSubscriptionsPerPartitionCeiling},
		{"MaxSubscriptionsPerIdentity", func(l *Limits, v int) { l.MaxSubscriptionsPerIdentity = v }, maxSubscriptionsPerIdentityCeiling},
		{"MaxSubscriptions", func(l *Limits, v int) { l.MaxSubscriptions = v }, maxSubscriptionsCeiling},
		// JSON.MaxInputBytes is overwritten by MaxBodyBytes (checked above).
		{"MaxDepth", func(l *Limits, v int) { l.JSON.MaxDepth = v }, exactjson.MaxDepthCeiling},
		{"MaxNodes", func(l *Limits, v int) { l.JSON.MaxNodes = v }, exactjson.MaxNodesCeiling},
		{"MaxNumberLength", func(l *Limits, v int) { l.JSON.MaxNumberLength = v }, exactjson.MaxNumberLengthCeiling},
		{"MaxExponent", func(l *Limits, v int) { l.JSON.MaxExponent = v }, exactjson.MaxExponentCeiling},
		{"MaxStringBytes", func(l *Limits, v int) { l.JSON.MaxStringBytes = v }, exactjson.MaxStringBytesCeiling},
	}
	for _, f := range fields {
		t.Run(f.name, func(t *testing.T) {
			for _, c := range []struct {
				v  int
				ok bool
			}{{0, true}, {1, true}, {f.ceiling, true}, {f.ceiling + 1, false}, {-1, false}} {
				var l Limits
				f.set(&l, c.v)
				_, err := NewServer(Implementation{}, &Options{Limits: l})
				if c.ok && err != nil {
					t.Errorf("%s = %d: unexpected configuration error %v", f.name, c.v, err)
				}
				if !c.ok && (err == nil || !strings.Contains(err.Error(), f.name)) {
					t.Errorf("%s = %d: want a configuration error naming the field, got %v", f.name, c.v, err)
				}
			}
		})
	}
	// exactjson's own validation of MaxInputBytes (the package API).
	if err := (exactjson.Limits{MaxInputBytes: exactjson.MaxInputBytesCeiling + 1}).Validate(); err == nil {
		t.Error("exactjson.Limits.MaxInputBytes ceiling+1 validates")
	}
	if err := (exactjson.Limits{MaxInputBytes: exactjson.MaxInputBytesCeiling}).Validate(); err != nil {
		t.Errorf("exactjson.Limits.MaxInputBytes at the ceiling: %v", err)
	}
	// StateLimits: negative values and decoded > encoded are errors.
	for _, st := range []StateLimits{{Rounds: -1}, {Lifetime: -time.Second}, {MaxEncodedBytes: -1}, {MaxEncodedBytes: 100, MaxDecodedBytes: 101}} {
		if _, err := NewServer(Implementation{}, &Options{State: st}); err == nil {
			t.Errorf("StateLimits %+v: want a configuration error", st)
		}
	}
	if _, err := NewServer(Implementation{}, &Options{State: StateLimits{MaxEncodedBytes: 100, MaxDecodedBytes: 100}}); err != nil {
		t.Errorf("StateLimits decoded == encoded: %v", err)
	}
	// The overload controls and timeouts of Options.
	for _, c := range []struct {
		name          string
		set           func(o *Options, v int64)
		def, ceil, at int64
	}{
		{"MaxConcurrent", func(o *Options, v int64) { o.MaxConcurrent = int(v) }, defaultMaxConcurrent, maxConcurrentCeiling, int64(s.opts.MaxConcurrent)},
		{"MaxQueue", func(o *Options, v int64) { o.MaxQueue = int(v) }, defaultMaxQueue, maxQueueCeiling, int64(s.opts.MaxQueue)},
		{"QueueTimeout", func(o *Options, v int64) { o.QueueTimeout = time.Duration(v) }, int64(defaultQueueTimeout), int64(maxTimeoutCeiling), int64(s.opts.QueueTimeout)},
		{"RequestTimeout", func(o *Options, v int64) { o.RequestTimeout = time.Duration(v) }, int64(defaultRequestTimeout), int64(maxTimeoutCeiling), int64(s.opts.RequestTimeout)},
		{"BodyTimeout", func(o *Options, v int64) { o.BodyTimeout = time.Duration(v) }, int64(defaultBodyTimeout), int64(maxTimeoutCeiling), int64(s.opts.BodyTimeout)},
		{"WriteTimeout", func(o *Options, v int64) { o.WriteTimeout = time.Duration(v) }, int64(defaultWriteTimeout), int64(maxTimeoutCeiling), int64(s.opts.WriteTimeout)},
	} {
		if c.at != c.def {
			t.Errorf("Options.%s defaults to %d, want %d", c.name, c.at, c.def)
		}
		for _, v := range []struct {
			v  int64
			ok bool
		}{{c.ceil, true}, {c.ceil + 1, false}, {-1, false}} {
			var o Options
			c.set(&o, v.v)
			_, err := NewServer(Implementation{}, &o)
			if v.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.name)) {
				t.Errorf("Options.%s = %d: configuration error %v", c.name, v.v, err)
			}
		}
	}
	// The per-caller shares: at most the totals; the defaults follow them.
	for _, c := range []struct {
		o  Options
		ok bool
	}{
		{Options{MaxConcurrent: 10, MaxConcurrentPerIdentity: 10}, true},
		{Options{MaxConcurrent: 10, MaxConcurrentPerIdentity: 11}, false},
		{Options{MaxConcurrentPerIdentity: -1}, false},
		{Options{MaxQueue: 10, MaxQueuePerIdentity: 10}, true},
		{Options{MaxQueue: 10, MaxQueuePerIdentity: 11}, false},
		{Options{MaxQueuePerIdentity: -1}, false},
	} {
		if _, err := NewServer(Implementation{}, &c.o); c.ok != (err == nil) {
			t.Errorf("%+v: configuration error %v", c.o, err)
		}
	}
	if s, _ := NewServer(Implementation{}, &Options{MaxConcurrent: 10, MaxQueue: 40}); s.opts.MaxConcurrentPerIdentity != 5 || s.opts.MaxQueuePerIdentity != 10 {
		t.Errorf("shares of MaxConcurrent 10, MaxQueue 40: %d, %d; want 5, 10", s.opts.MaxConcurrentPerIdentity, s.opts.MaxQueuePerIdentity)
	}
	if s.opts.PageSize != defaultPageSize || s.opts.KeepAlive != defaultKeepAlive {
		t.Errorf("default PageSize %d, KeepAlive %s", s.opts.PageSize, s.opts.KeepAlive)
	}
	// The 2025-11-25 session limits.
	for _, c := range []struct {
		name string
		l    LegacyOptions
		ok   bool
	}{
		{"MaxLifetime at the ceiling", LegacyOptions{InMemorySessions: true, MaxLifetime: legacyMaxLifetimeCeiling}, true},
		{"MaxLifetime past the ceiling", LegacyOptions{InMemorySessions: true, MaxLifetime: legacyMaxLifetimeCeiling + 1}, false},
		{"IdleTimeout = MaxLifetime", LegacyOptions{InMemorySessions: true, IdleTimeout: time.Hour, MaxLifetime: time.Hour}, true},
		{"IdleTimeout past MaxLifetime", LegacyOptions{InMemorySessions: true, IdleTimeout: time.Hour + 1, MaxLifetime: time.Hour}, false},
		{"MaxRounds at the ceiling", LegacyOptions{InMemorySessions: true, MaxRounds: legacyMaxRoundsCeiling}, true},
		{"MaxRounds past the ceiling", LegacyOptions{InMemorySessions: true, MaxRounds: legacyMaxRoundsCeiling + 1}, false},
		{"InputTimeout at the ceiling", LegacyOptions{InMemorySessions: true, InputTimeout: legacyInputTimeoutCeiling}, true},
		{"InputTimeout past the ceiling", LegacyOptions{InMemorySessions: true, InputTimeout: legacyInputTimeoutCeiling + 1}, false},
		{"MaxSessions at the ceiling", LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxSessions: sessionstore.MaxSessionsCeiling}}, true},
		{"MaxSessions past the ceiling", LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxSessions: sessionstore.MaxSessionsCeiling + 1}}, false},
		{"MaxPerIdentity at the ceiling", LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxPerIdentity: sessionstore.MaxSessionsCeiling}}, true},
		{"MaxPerIdentity past the ceiling", LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxPerIdentity: sessionstore.MaxSessionsCeiling + 1}}, false},
		{"MaxPerPartition at the ceiling", LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxPerPartition: sessionstore.MaxSessionsCeiling}}, true},
		{"MaxPerPartition past the ceiling", LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxPerPartition: sessionstore.MaxSessionsCeiling + 1}}, false},
		{"MaxPendingAnswers at the ceiling", LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxPendingAnswers: sessionstore.MaxPendingAnswersCeiling}}, true},
		{"MaxPendingAnswers past the ceiling", LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxPendingAnswers: sessionstore.MaxPendingAnswersCeiling + 1}}, false},
	} {
		l := c.l
		if _, err := NewServer(Implementation{}, &Options{Legacy: l}); c.ok != (err == nil) {
			t.Errorf("LegacyOptions %s: configuration error %v", c.name, err)
		}
	}
}

// TestLimitsMisconfiguredServerRefused: a limit out of range is
// NewServer's error, naming the limit, and no server is made.
func TestLimitsMisconfiguredServerRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		l    Limits
	}{
		{"MaxBodyBytes", Limits{MaxBodyBytes: maxBodyBytesCeiling + 1}},
		{"MaxOutputBytes", Limits{MaxOutputBytes: maxOutputBytesCeiling + 1}},
		{"MaxHeaderCount", Limits{MaxHeaderCount: maxHeaderCountCeiling + 1}},
		{"MaxCursorBytes", Limits{MaxCursorBytes: maxCursorBytesCeiling + 1}},
		{"MaxSubscriptionsPerPartition", Limits{MaxSubscriptionsPerPartition: maxSubscriptionsPerPartitionCeiling + 1}},
		{"MaxDepth", Limits{JSON: exactjson.Limits{MaxDepth: exactjson.MaxDepthCeiling + 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewServer(Implementation{}, &Options{Limits: c.l, Logger: slog.New(slog.DiscardHandler)})
			if err == nil || s != nil {
				t.Fatalf("NewServer = %v, %v; want no server and a configuration error", s, err)
			}
			if !strings.Contains(err.Error(), c.name) {
				t.Errorf("error %q does not name %s", err, c.name)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// HTTP helpers (non-fatal, so they run in goroutines too)

var invIDs atomic.Int64

type invResp struct {
	status int
	header http.Header
	body   []byte
	msg    rpcMsg
	err    error
}

func (r invResp) String() string {
	b := r.body
	if len(b) > 300 {
		b = append(b[:300:300], "..."...)
	}
	if r.err != nil {
		return "error " + r.err.Error()
	}
	return fmt.Sprintf("HTTP %d %s", r.status, b)
}

// invBody encodes a request with a fresh integer id.
func invBody(t testing.TB, method string, p M) []byte {
	return body(t, invIDs.Add(1), method, p)
}

// invSend posts b with the conforming headers (edited by mods).
func invSend(ctx context.Context, url string, b []byte, mods ...func(http.Header)) invResp {
	return invSendWith(ctx, http.DefaultClient, url, b, mods...)
}

// invSendWith is invSend through client.
func invSendWith(ctx context.Context, client *http.Client, url string, b []byte, mods ...func(http.Header)) invResp {
	h := stdHeaders(b)
	for _, m := range mods {
		m(h)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return invResp{err: err}
	}
	req.Header = h
	res, err := client.Do(req)
	if err != nil {
		return invResp{err: err}
	}
	defer res.Body.Close()
	rb, err := io.ReadAll(res.Body)
	r := invResp{status: res.StatusCode, header: res.Header, body: rb, err: err}
	invDecode(&r)
	return r
}

func invDecode(r *invResp) {
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		for _, ev := range strings.Split(string(r.body), "\n\n") {
			for _, line := range strings.Split(ev, "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					var m rpcMsg
					if json.Unmarshal([]byte(d), &m) == nil && m.ID != nil {
						r.msg = m
					}
				}
			}
		}
		return
	}
	if len(r.body) > 0 && r.err == nil {
		if err := json.Unmarshal(r.body, &r.msg); err != nil {
			r.err = fmt.Errorf("response is not JSON-RPC: %w", err)
		}
	}
}

// invRec runs one request through h in process.
func invRec(t testing.TB, h http.Handler, b []byte, mods ...func(http.Header)) invResp {
	t.Helper()
	hd := stdHeaders(b)
	for _, m := range mods {
		m(hd)
	}
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", bytes.NewReader(b))
	req.Header = hd
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	r := invResp{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	invDecode(&r)
	return r
}

func invCall(t testing.TB, url, method string, p M, mods ...func(http.Header)) invResp {
	t.Helper()
	return invSend(context.Background(), url, invBody(t, method, p), mods...)
}

// invOK asserts a successful JSON-RPC result with HTTP 200.
func invOK(t testing.TB, what string, r invResp) {
	t.Helper()
	if r.err != nil || r.status != http.StatusOK || r.msg.Error != nil || r.msg.Result == nil {
		t.Fatalf("%s: want HTTP 200 with a result, got %s", what, r)
	}
}

// invFail asserts an error with the HTTP status and (when code != 0) the
// JSON-RPC code.
func invFail(t testing.TB, what string, r invResp, status int, code Code) {
	t.Helper()
	if r.err != nil || r.status != status {
		t.Fatalf("%s: want HTTP %d, got %s", what, status, r)
	}
	if code != 0 && (r.msg.Error == nil || r.msg.Error.Code != code) {
		t.Fatalf("%s: want error %d, got %s", what, code, r)
	}
}

// invServe starts s on a loopback HTTP server and returns its URL.
func invServe(t testing.TB, s *Server) string {
	t.Helper()
	return startHTTP(t, s).URL + "/mcp"
}

// invWithPad returns the body of msg with a top-level member "x" set to
// the raw JSON pad (members the envelope does not know are ignored).
func invWithPad(t testing.TB, method string, p M, pad string) []byte {
	t.Helper()
	b := body(t, 7, method, p) // a fixed id keeps lengths predictable
	return append(append(b[:len(b)-1:len(b)-1], `,"x":`+pad...), '}')
}

// invNodes counts the JSON values of b (member names are not values).
func invNodes(t testing.TB, b []byte) int {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var count func(any) int
	count = func(v any) int {
		n := 1
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				n += count(e)
			}
		case []any:
			for _, e := range x {
				n += count(e)
			}
		}
		return n
	}
	return count(v)
}

// invTool registers an untyped tool.
func invTool(t testing.TB, s *Server, tool Tool, h ToolHandler) {
	t.Helper()
	if tool.Description == "" {
		tool.Description = "inventory tool " + tool.Name
	}
	must(t, s.AddTool(tool, h))
}

var invFormCaps = M{"elicitation": M{"form": M{}}}

func invTasksCaps() M { return M{"extensions": M{TasksExtension: M{}}} }

// ---------------------------------------------------------------------------
// Transport and pipeline

func checkBodyBytes(t *testing.T) {
	// exact builds a tools/call body of exactly size bytes (a fixed id keeps
	// the length predictable).
	exact := func(t *testing.T, size int) []byte {
		b := body(t, 7, "tools/call", toolCall(nil, "t", M{"pad": ""}))
		return body(t, 7, "tools/call", toolCall(nil, "t", M{"pad": strings.Repeat("a", size-len(b))}))
	}
	// big builds a server/discover body of exactly size bytes whose pad is
	// an array of 512 KiB strings (under the default MaxStringBytes).
	big := func(t *testing.T, size int) []byte {
		need := size - (len(invWithPad(t, "server/discover", params(nil), `[]`)) - 2)
		chunk := `"` + strings.Repeat("a", 1<<19) + `"`
		var sb strings.Builder
		sb.WriteByte('[')
		for need-sb.Len() > len(chunk)+3 {
			if sb.Len() > 1 {
				sb.WriteByte(',')
			}
			sb.WriteString(chunk)
		}
		for sb.Len() < need-1 {
			sb.WriteByte(' ')
		}
		sb.WriteByte(']')
		return invWithPad(t, "server/discover", params(nil), sb.String())
	}
	t.Run("configured 512", func(t *testing.T) {
		s, _ := newServer(t, &Options{Limits: Limits{MaxBodyBytes: 512}})
		invTool(t, s, Tool{Name: "t"}, func(ctx context.Context, req *Request) (*CallToolResult, error) { return textResult("ok"), nil })
		url := invServe(t, s)
		at, past := exact(t, 512), exact(t, 513)
		if len(at) != 512 || len(past) != 513 {
			t.Fatalf("built %d and %d bytes", len(at), len(past))
		}
		invOK(t, "body at the limit", invSend(context.Background(), url, at))
		r := invSend(context.Background(), url, past)
		invFail(t, "body one byte past the limit", r, http.StatusRequestEntityTooLarge, CodeInvalidRequest)
		if r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("413 without Cache-Control: no-store")
		}
	})
	t.Run("default", func(t *testing.T) {
		s, _ := newServer(t, nil)
		url := invServe(t, s)
		at, past := big(t, defaultMaxBodyBytes), big(t, defaultMaxBodyBytes+1)
		if len(at) != defaultMaxBodyBytes || len(past) != defaultMaxBodyBytes+1 {
			t.Fatalf("built %d and %d bytes", len(at), len(past))
		}
		invOK(t, "body at the default limit", invSend(context.Background(), url, at))
		invFail(t, "body one byte past the default", invSend(context.Background(), url, past), http.StatusRequestEntityTooLarge, CodeInvalidRequest)
	})
	t.Run("stdio line", func(t *testing.T) {
		s, _ := newServer(t, &Options{Limits: Limits{MaxBodyBytes: 512}})
		line := func(n int) []byte {
			b := invWithPad(t, "server/discover", params(nil), `""`)
			return invWithPad(t, "server/discover", params(nil), `"`+strings.Repeat("a", n-len(b))+`"`)
		}
		at, past := line(512), line(513)
		if len(at) != 512 || len(past) != 513 {
			t.Fatalf("built %d and %d bytes", len(at), len(past))
		}
		var out bytes.Buffer
		in := bytes.NewReader(append(append(append(at, '\n'), past...), '\n'))
		if err := s.ServeStdio(context.Background(), in, &out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("want 2 responses, got %q", out.String())
		}
		var ok, tooLong int
		for _, l := range lines {
			var m rpcMsg
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("stdio response %q: %v", l, err)
			}
			switch {
			case m.Result != nil:
				ok++
			case m.Error != nil && m.Error.Code == CodeParseError:
				tooLong++
			}
		}
		if ok != 1 || tooLong != 1 {
			t.Fatalf("want one result (512 bytes) and one -32700 (513 bytes), got %q", out.String())
		}
	})
}

func checkOutputBytes(t *testing.T) {
	s, logs := newServer(t, &Options{Limits: Limits{MaxOutputBytes: 1024}})
	invTool(t, s, Tool{Name: "out"}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		nv, _ := req.Arguments().Get("n")
		n, _ := nv.AsNumber()
		i, _ := n.Int64()
		return textResult(strings.Repeat("a", int(i))), nil
	})
	url := invServe(t, s)
	probe := invCall(t, url, "tools/call", toolCall(nil, "out", M{"n": 0}))
	invOK(t, "probe", probe)
	n := 1024 - len(probe.msg.Result)
	at := invCall(t, url, "tools/call", toolCall(nil, "out", M{"n": n}))
	invOK(t, "result at the limit", at)
	if len(at.msg.Result) != 1024 {
		t.Fatalf("result of %d bytes, want 1024", len(at.msg.Result))
	}
	past := invCall(t, url, "tools/call", toolCall(nil, "out", M{"n": n + 1}))
	invFail(t, "result one byte past the limit", past, http.StatusInternalServerError, CodeInternalError)
	if logs.count(slog.LevelError, "MaxOutputBytes") == 0 {
		t.Errorf("the oversized result was not logged")
	}
}

func checkHeaderCount(t *testing.T) {
	for _, limit := range []int{10, 0} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			s, _ := newServer(t, &Options{Limits: Limits{MaxHeaderCount: limit}})
			var seen atomic.Int64
			ts := startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen.Store(int64(len(r.Header)))
				s.ServeHTTP(w, r)
			}))
			max := s.limits.MaxHeaderCount
			b := invBody(t, "server/discover", params(nil))
			invOK(t, "probe", invSend(context.Background(), ts.URL, b))
			base := int(seen.Load())
			pads := func(n int) func(http.Header) {
				return func(h http.Header) {
					for i := 0; i < n; i++ {
						h.Set("X-Pad-"+strconv.Itoa(i), "x")
					}
				}
			}
			r := invSend(context.Background(), ts.URL, b, pads(max-base))
			if int(seen.Load()) != max {
				t.Fatalf("sent %d header fields, want %d", seen.Load(), max)
			}
			invOK(t, "header fields at the limit", r)
			r = invSend(context.Background(), ts.URL, b, pads(max-base+1))
			invFail(t, "one header field past the limit", r, http.StatusRequestHeaderFieldsTooLarge, CodeInvalidRequest)
		})
	}
}

// invRaw sends raw bytes on a fresh connection and returns the status line
// (or the error).
func invRaw(t testing.TB, addr string, req []byte, bodyDelay time.Duration, bodyPart []byte) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(req); err != nil {
		return "", err
	}
	if bodyPart != nil {
		time.Sleep(bodyDelay)
		_, _ = c.Write(bodyPart)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

func checkHeaderBytes(t *testing.T) {
	s, _ := newServer(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	hs := NewHTTPServer("", s)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	block := func(total int) []byte {
		head := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 0\r\nX-Pad: "
		tail := "\r\n\r\n"
		return []byte(head + strings.Repeat("a", total-len(head)-len(tail)) + tail)
	}
	status := func(total int) string {
		line, err := invRaw(t, ln.Addr().String(), block(total), 0, nil)
		if err != nil {
			t.Fatalf("%d header bytes: %v", total, err)
		}
		return line
	}
	// The documented limit passes (an empty body then answers 400/-32700).
	if st := status(defaultMaxHeaderBytes); strings.Contains(st, "431") {
		t.Fatalf("a %d-byte header block: %s", defaultMaxHeaderBytes, st)
	}
	// net/http adds 4,096 bytes of read slop to MaxHeaderBytes: that is the
	// enforced boundary.
	enforced := defaultMaxHeaderBytes + 4096
	if st := status(enforced); strings.Contains(st, "431") {
		t.Fatalf("a %d-byte header block: %s", enforced, st)
	}
	if st := status(enforced + 1); !strings.Contains(st, "431") {
		t.Fatalf("a %d-byte header block: want 431, got %s", enforced+1, st)
	}
}

func invCursor(n int) string {
	// "o:" + zero-padded offset 1, so that the base64url form has n characters.
	raw := n * 3 / 4
	return base64.RawURLEncoding.EncodeToString([]byte("o:" + strings.Repeat("0", raw-3) + "1"))
}

func checkCursorBytes(t *testing.T) {
	for _, limit := range []int{66, 0} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			s, _ := newServer(t, &Options{PageSize: 1, Limits: Limits{MaxCursorBytes: limit}})
			addText(t, s, "a", "a")
			addText(t, s, "b", "b")
			url := invServe(t, s)
			max := s.limits.MaxCursorBytes
			first := invCall(t, url, "tools/list", params(nil))
			invOK(t, "first page", first)
			var page struct{ NextCursor string }
			must(t, json.Unmarshal(first.msg.Result, &page))
			if page.NextCursor == "" {
				t.Fatal("PageSize 1 with two tools gave no nextCursor")
			}
			at := invCursor(max)
			if len(at) != max {
				t.Fatalf("cursor of %d characters, want %d", len(at), max)
			}
			invOK(t, "cursor at the limit", invCall(t, url, "tools/list", params(M{"cursor": at})))
			past := invCursor(max + 1)
			if len(past) != max+1 {
				past = at + "A" // no valid base64url of this length: the length check still comes first
			}
			invFail(t, "cursor past the limit", invCall(t, url, "tools/list", params(M{"cursor": past})), http.StatusBadRequest, CodeInvalidParams)
		})
	}
}

func checkURIBytes(t *testing.T) {
	s, _ := newServer(t, &Options{Limits: Limits{MaxURIBytes: 256}})
	handler := func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "ok")}}, nil
	}
	must(t, s.AddResourceTemplate(ResourceTemplate{URITemplate: "inv://r/{id}", Name: "r"}, handler))
	url := invServe(t, s)
	uri := func(n int) string { return "inv://r/" + strings.Repeat("a", n-len("inv://r/")) }
	invOK(t, "URI at the limit", invCall(t, url, "resources/read", params(M{"uri": uri(256)})))
	invFail(t, "URI past the limit", invCall(t, url, "resources/read", params(M{"uri": uri(257)})), http.StatusBadRequest, CodeInvalidParams)

	// At the default, where the body carries the URI (subscriptions/listen):
	// 65,536 bytes are accepted, 65,537 refused.
	t.Run("default in subscriptions/listen", func(t *testing.T) {
		s, _ := newServer(t, nil)
		must(t, s.AddResourceTemplate(ResourceTemplate{URITemplate: "inv://r/{id}", Name: "r"}, handler))
		url := invServe(t, s)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res, st := openStream(t, ctx, url, invIDs.Add(1), "subscriptions/listen",
			params(M{"notifications": M{"resourceSubscriptions": []string{uri(defaultMaxURIBytes)}}}))
		defer res.Body.Close()
		if m, _ := st.nextMsg(); m.Method != "notifications/subscriptions/acknowledged" {
			t.Fatalf("want the acknowledgement, got %+v", m)
		}
		r := invCall(t, url, "subscriptions/listen", params(M{"notifications": M{"resourceSubscriptions": []string{uri(defaultMaxURIBytes + 1)}}}))
		invFail(t, "a 65,537-byte subscription URI", r, http.StatusBadRequest, CodeInvalidParams)
	})
	// Over HTTP, resources/read mirrors the URI in Mcp-Name: the header
	// bound (16,384 decoded bytes) comes first.
	t.Run("default in resources/read is bounded by Mcp-Name", func(t *testing.T) {
		s, _ := newServer(t, nil)
		must(t, s.AddResourceTemplate(ResourceTemplate{URITemplate: "inv://r/{id}", Name: "r"}, handler))
		url := invServe(t, s)
		invOK(t, "16,384-byte URI", invCall(t, url, "resources/read", params(M{"uri": uri(hdr.MaxDecodedValueBytes)})))
		invFail(t, "16,385-byte URI", invCall(t, url, "resources/read", params(M{"uri": uri(hdr.MaxDecodedValueBytes + 1)})),
			http.StatusBadRequest, CodeHeaderMismatch)
	})
}

func checkInputResponses(t *testing.T) {
	form := Form(ConditionalCapability)
	s, logs := newServer(t, &Options{Limits: Limits{MaxInputResponses: 4}})
	invTool(t, s, Tool{Name: "ir", Inputs: []Input{form}}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		return textResult(fmt.Sprint(len(req.InputResponses().Keys()))), nil
	})
	invTool(t, s, Tool{Name: "ask", Inputs: []Input{form}}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		nv, _ := req.Arguments().Get("n")
		n, _ := nv.AsNumber()
		k, _ := n.Int64()
		ir := new(InputRequired)
		schema := exactjson.Object(exactjson.Field("type", exactjson.String("object")), exactjson.Field("properties", exactjson.Object()))
		for i := range k {
			ir = ir.Ask("k"+strconv.FormatInt(i, 10), form.Ask("ok?", schema))
		}
		return nil, ir
	})
	url := invServe(t, s)
	responses := func(n int) M {
		m := M{}
		for i := range n {
			m["k"+strconv.Itoa(i)] = M{"action": "decline"}
		}
		return m
	}
	invOK(t, "4 input responses", invCall(t, url, "tools/call", paramsCaps(invFormCaps, M{"name": "ir", "inputResponses": responses(4)})))
	invFail(t, "5 input responses", invCall(t, url, "tools/call", paramsCaps(invFormCaps, M{"name": "ir", "inputResponses": responses(5)})),
		http.StatusBadRequest, CodeInvalidParams)
	at := invCall(t, url, "tools/call", toolCall(invFormCaps, "ask", M{"n": 4}))
	invOK(t, "4 input requests", at)
	if !bytes.Contains(at.msg.Result, []byte(`"input_required"`)) {
		t.Fatalf("4 input requests: %s", at)
	}
	invFail(t, "5 input requests", invCall(t, url, "tools/call", toolCall(invFormCaps, "ask", M{"n": 5})),
		http.StatusInternalServerError, CodeInternalError)
	if logs.count(slog.LevelError, "exceed MaxInputResponses") == 0 {
		t.Errorf("the programming error was not logged")
	}
}

func invResourceServer(t testing.TB, opts *Options) *Server {
	t.Helper()
	s, _ := newServer(t, opts)
	must(t, s.AddResource(Resource{ResourceInfo: ResourceInfo{URI: "inv://doc", Name: "doc"}},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
			return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "doc")}}, nil
		}))
	return s
}

func checkResourceSubscriptions(t *testing.T) {
	s := invResourceServer(t, &Options{Limits: Limits{MaxResourceSubscriptions: 3}})
	url := invServe(t, s)
	uris := func(n int) []string {
		u := make([]string, n)
		for i := range u {
			u[i] = "inv://doc/" + strconv.Itoa(i)
		}
		return u
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, st := openStream(t, ctx, url, invIDs.Add(1), "subscriptions/listen", params(M{"notifications": M{"resourceSubscriptions": uris(3)}}))
	defer res.Body.Close()
	if m, _ := st.nextMsg(); m.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("3 URIs: want the acknowledgement, got %+v", m)
	}
	invFail(t, "4 URIs", invCall(t, url, "subscriptions/listen", params(M{"notifications": M{"resourceSubscriptions": uris(4)}})),
		http.StatusBadRequest, CodeInvalidParams)
}

func checkBodyTimeout(t *testing.T) {
	s, _ := newServer(t, &Options{BodyTimeout: 300 * time.Millisecond})
	ts := startHTTP(t, s)
	addr := strings.TrimPrefix(ts.URL, "http://")
	b := invBody(t, "server/discover", params(nil))
	h := stdHeaders(b)
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n", len(b))
	for k, vs := range h {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v)
		}
	}
	head.WriteString("\r\n")
	if line, err := invRaw(t, addr, head.Bytes(), 50*time.Millisecond, b); err != nil || !strings.Contains(line, " 200 ") {
		t.Fatalf("a body within the timeout: %q %v", line, err)
	}
	line, err := invRaw(t, addr, head.Bytes(), 1200*time.Millisecond, b)
	if err == nil && strings.Contains(line, " 200 ") {
		t.Fatalf("a body slower than the timeout was served: %q", line)
	}
	t.Logf("a body slower than BodyTimeout gets %q (err %v)", line, err)
}

func checkKeepAlive(t *testing.T) {
	if got := invDefaults.opts.KeepAlive; got != 15*time.Second {
		t.Fatalf("default KeepAlive %s", got)
	}
	s := invResourceServer(t, &Options{KeepAlive: 50 * time.Millisecond})
	url := invServe(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, st := openStream(t, ctx, url, invIDs.Add(1), "subscriptions/listen", params(M{"notifications": M{"resourcesListChanged": true}}))
	defer res.Body.Close()
	st.nextMsg()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		line, err := st.br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, ": keep-alive") {
			return
		}
	}
	t.Fatal("no keep-alive comment")
}

func checkPageSize(t *testing.T) {
	for _, n := range []int{256, 257} {
		s, _ := newServer(t, nil)
		for i := range n {
			addText(t, s, "t"+strconv.Itoa(i), "x")
		}
		url := invServe(t, s)
		r := invCall(t, url, "tools/list", params(nil))
		invOK(t, "tools/list", r)
		var page struct {
			Tools      []json.RawMessage
			NextCursor string
		}
		must(t, json.Unmarshal(r.msg.Result, &page))
		if len(page.Tools) != 256 || (page.NextCursor != "") != (n > 256) {
			t.Fatalf("%d tools: first page has %d tools, nextCursor %q", n, len(page.Tools), page.NextCursor)
		}
	}
}

func checkToolSearchResults(t *testing.T) {
	for _, tc := range []struct{ max, found, more int }{{0, DefaultToolSearchResults, 2}, {MaxToolSearchResults, DefaultToolSearchResults + 2, 0}} {
		s, _ := newServer(t, &Options{ToolSearch: &ToolSearch{MaxResults: tc.max}})
		for i := range DefaultToolSearchResults + 2 {
			addText(t, s, "t"+strconv.Itoa(i), "x")
		}
		r := invCall(t, invServe(t, s), "tools/call", toolCall(nil, DefaultToolSearchName, M{"query": "answers"}))
		invOK(t, "search_tools", r)
		var res struct {
			StructuredContent struct {
				Tools []json.RawMessage
				More  int
			}
		}
		must(t, json.Unmarshal(r.msg.Result, &res))
		if len(res.StructuredContent.Tools) != tc.found || res.StructuredContent.More != tc.more {
			t.Errorf("MaxResults %d: found %d, more %d; want %d, %d", tc.max, len(res.StructuredContent.Tools), res.StructuredContent.More, tc.found, tc.more)
		}
	}
	if _, err := NewServer(Implementation{}, &Options{ToolSearch: &ToolSearch{MaxResults: MaxToolSearchResults + 1}}); err == nil {
		t.Error("ToolSearch.MaxResults past the ceiling is accepted")
	}
}

func checkPartition(t *testing.T) {
	var size atomic.Int64
	s, _ := newServer(t, &Options{Admission: func(ctx context.Context, r *AdmissionRequest) (Identity, error) {
		return Identity{Partition: strings.Repeat("p", int(size.Load()))}, nil
	}})
	addText(t, s, "t", "ok")
	url := invServe(t, s)
	size.Store(256)
	invOK(t, "a 256-byte partition", invCall(t, url, "tools/call", toolCall(nil, "t", nil)))
	size.Store(257)
	invFail(t, "a 257-byte partition", invCall(t, url, "tools/call", toolCall(nil, "t", nil)), http.StatusInternalServerError, CodeInternalError)
}

func checkCompletionValues(t *testing.T) {
	var n atomic.Int64
	s, _ := newServer(t, nil)
	must(t, s.AddPrompt(Prompt{Name: "p", Description: "p", Arguments: []PromptArgument{{Name: "a"}},
		Complete: func(ctx context.Context, req *Request, c CompletionRequest) (Completion, error) {
			v := make([]string, n.Load())
			for i := range v {
				v[i] = "v" + strconv.Itoa(i)
			}
			return Completion{Values: v}, nil
		}}, func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error) {
		return &GetPromptResult{}, nil
	}))
	url := invServe(t, s)
	complete := func(k int64) (int, bool) {
		n.Store(k)
		r := invCall(t, url, "completion/complete", params(M{"ref": M{"type": "ref/prompt", "name": "p"}, "argument": M{"name": "a", "value": ""}}))
		invOK(t, "completion/complete", r)
		var res struct {
			Completion struct {
				Values  []string
				HasMore bool
			}
		}
		must(t, json.Unmarshal(r.msg.Result, &res))
		return len(res.Completion.Values), res.Completion.HasMore
	}
	if got, more := complete(100); got != 100 || more {
		t.Fatalf("100 values: got %d, hasMore %v", got, more)
	}
	if got, more := complete(101); got != 100 || !more {
		t.Fatalf("101 values: got %d, hasMore %v", got, more)
	}
}

func checkSubscriptionsPerPartition(t *testing.T) {
	s := invResourceServer(t, &Options{Limits: Limits{MaxSubscriptionsPerPartition: 2}})
	url := invServe(t, s)
	listenParams := params(M{"notifications": M{"resourcesListChanged": true}})
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		res, st := openStream(t, ctx, url, invIDs.Add(1), "subscriptions/listen", listenParams)
		t.Cleanup(func() { res.Body.Close() })
		if m, _ := st.nextMsg(); m.Method != "notifications/subscriptions/acknowledged" {
			t.Fatalf("stream %d: %+v", i+1, m)
		}
	}
	r := invCall(t, url, "subscriptions/listen", listenParams)
	invFail(t, "a third stream", r, http.StatusTooManyRequests, CodeRateLimited)
	if r.header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After on the refused stream")
	}
	// Closing one stream frees its slot.
	cancels[0]()
	deadline := time.Now().Add(hangGuard)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r := invSend(ctx, url, invBody(t, "subscriptions/listen", listenParams))
		cancel()
		if r.status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot of a closed stream was never released: %s", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// invListenLimit: with admission naming the caller by the X-Tenant header
// (as who(tenant) makes it), the first two tenants' streams are
// acknowledged and the third tenant's is refused with 429/-31999.
func invListenLimit(t *testing.T, l Limits, who func(tenant string) Identity, tenants [3]string) {
	s := invResourceServer(t, &Options{Limits: l, Admission: func(_ context.Context, r *AdmissionRequest) (Identity, error) {
		return who(r.Header.Get("X-Tenant")), nil
	}})
	url := invServe(t, s)
	as := func(p string) func(http.Header) { return func(h http.Header) { h.Set("X-Tenant", p) } }
	for _, tenant := range tenants[:2] {
		if ok, r := fairListen(t, http.DefaultClient, url, as(tenant)); !ok {
			t.Fatalf("a stream within the limit (%s): %s", tenant, r)
		}
	}
	ok, r := fairListen(t, http.DefaultClient, url, as(tenants[2]))
	if ok {
		t.Fatal("a stream past the limit was acknowledged")
	}
	invFail(t, "a stream past the limit", r, http.StatusTooManyRequests, CodeRateLimited)
	if r.header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After on the refused stream")
	}
}

// checkSubscriptionsPerIdentity: one principal's third stream is refused
// while its partition has room (TestFairListenStreams: another principal
// of the partition then gets one).
func checkSubscriptionsPerIdentity(t *testing.T) {
	invListenLimit(t, Limits{MaxSubscriptionsPerIdentity: 2}, func(p string) Identity { return Identity{Principal: p, Partition: "org"} }, [3]string{"a", "a", "a"})
}

// checkSubscriptions: the server's third stream is refused, each from a
// partition of its own.
func checkSubscriptions(t *testing.T) {
	invListenLimit(t, Limits{MaxSubscriptions: 2}, func(p string) Identity { return Identity{Partition: p} }, [3]string{"a", "b", "c"})
}

func checkTaskSubscriptions(t *testing.T) {
	s, _ := newServer(t, &Options{Tasks: &TaskOptions{Store: task.NewMemoryStore(nil), NoRunner: true}})
	addText(t, s, "t", "ok")
	url := invServe(t, s)
	ids := func(n int) []string {
		v := make([]string, n)
		for i := range v {
			v[i] = "task-" + strconv.Itoa(i)
		}
		return v
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, st := openStream(t, ctx, url, invIDs.Add(1), "subscriptions/listen", paramsCaps(invTasksCaps(), M{"notifications": M{"taskIds": ids(maxTaskSubscriptions)}}))
	defer res.Body.Close()
	if m, _ := st.nextMsg(); m.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("256 task ids: %+v", m)
	}
	invFail(t, "257 task ids", invCall(t, url, "subscriptions/listen", paramsCaps(invTasksCaps(), M{"notifications": M{"taskIds": ids(maxTaskSubscriptions + 1)}})),
		http.StatusBadRequest, CodeInvalidParams)
}

// invBlocker is a tool that blocks until released (or its context ends).
type invBlocker struct {
	started chan struct{}
	release chan struct{}
}

func newInvBlocker(t testing.TB, s *Server) *invBlocker {
	b := &invBlocker{started: make(chan struct{}, 64), release: make(chan struct{})}
	invTool(t, s, Tool{Name: "block"}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		b.started <- struct{}{}
		select {
		case <-b.release:
			return textResult("released"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	return b
}

func checkGate(t *testing.T) {
	// One caller: the per-caller shares are the whole (checkGatePerIdentity
	// checks the shares).
	s, _ := newServer(t, &Options{MaxConcurrent: 2, MaxQueue: 1, QueueTimeout: hangGuard, MaxConcurrentPerIdentity: 2, MaxQueuePerIdentity: 1})
	b := newInvBlocker(t, s)
	url := invServe(t, s)
	results := make(chan invResp, 3)
	call := func() { results <- invCall(t, url, "tools/call", toolCall(nil, "block", nil)) }
	// MaxConcurrent handlers run.
	go call()
	go call()
	waitFor(t, b.started, "first handler")
	waitFor(t, b.started, "second handler")
	// MaxQueue requests wait.
	go call()
	deadline := time.Now().Add(hangGuard)
	for _, q := s.gate.counts(); q != 1; _, q = s.gate.counts() {
		if time.Now().After(deadline) {
			t.Fatal("the third request never queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// One more is refused at once.
	r := invCall(t, url, "tools/call", toolCall(nil, "block", nil))
	invFail(t, "a request past MaxConcurrent+MaxQueue", r, http.StatusServiceUnavailable, CodeInternalError)
	if r.header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
	close(b.release)
	for range 3 {
		invOK(t, "a request within the limits", waitFor(t, results, "a released request"))
	}
}

// checkGatePerIdentity: one caller runs MaxConcurrentPerIdentity handlers
// and queues MaxQueuePerIdentity requests; its next request is refused at
// once while the gate still has room, and another caller is served.
func checkGatePerIdentity(t *testing.T) {
	s, _ := newServer(t, &Options{MaxConcurrent: 4, MaxConcurrentPerIdentity: 2, MaxQueue: 8, MaxQueuePerIdentity: 1, QueueTimeout: hangGuard,
		Admission: func(_ context.Context, r *AdmissionRequest) (Identity, error) {
			return Identity{Partition: r.Header.Get("X-Tenant")}, nil
		}})
	b := newInvBlocker(t, s)
	addText(t, s, "fast", "fast")
	url := invServe(t, s)
	as := func(p string) func(http.Header) { return func(h http.Header) { h.Set("X-Tenant", p) } }
	results := make(chan invResp, 3)
	call := func() { results <- invCall(t, url, "tools/call", toolCall(nil, "block", nil), as("a")) }
	go call()
	go call()
	waitFor(t, b.started, "first handler")
	waitFor(t, b.started, "second handler")
	go call()
	deadline := time.Now().Add(hangGuard)
	for _, q := s.gate.counts(); q != 1; _, q = s.gate.counts() {
		if time.Now().After(deadline) {
			t.Fatal("the third request never queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r := invCall(t, url, "tools/call", toolCall(nil, "block", nil), as("a"))
	invFail(t, "a request past MaxConcurrentPerIdentity+MaxQueuePerIdentity", r, http.StatusServiceUnavailable, CodeInternalError)
	if r.header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
	invOK(t, "another caller", invCall(t, url, "tools/call", toolCall(nil, "fast", nil), as("b")))
	close(b.release)
	for range 3 {
		invOK(t, "a request within the shares", waitFor(t, results, "a released request"))
	}
}

func checkQueueTimeout(t *testing.T) {
	const queueTimeout = 500 * time.Millisecond // the margin of the queued request served within it
	s, _ := newServer(t, &Options{MaxConcurrent: 1, MaxQueue: 1, QueueTimeout: queueTimeout, MaxConcurrentPerIdentity: 1, MaxQueuePerIdentity: 1})
	b := newInvBlocker(t, s)
	url := invServe(t, s)
	done := make(chan invResp, 1)
	go func() { done <- invCall(t, url, "tools/call", toolCall(nil, "block", nil)) }()
	waitFor(t, b.started, "the blocking handler")
	start := time.Now()
	r := invCall(t, url, "tools/call", toolCall(nil, "block", nil))
	invFail(t, "a request queued past QueueTimeout", r, http.StatusServiceUnavailable, CodeInternalError)
	if r.header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
	if waited := time.Since(start); waited < queueTimeout {
		t.Errorf("refused after %s, before QueueTimeout", waited)
	}
	// Within the timeout a queued request is served.
	queued := make(chan invResp, 1)
	go func() { queued <- invCall(t, url, "tools/call", toolCall(nil, "block", nil)) }()
	deadline := time.Now().Add(hangGuard)
	for _, q := s.gate.counts(); q != 1; _, q = s.gate.counts() {
		if time.Now().After(deadline) {
			t.Fatal("the request within QueueTimeout never queued")
		}
		time.Sleep(time.Millisecond)
	}
	close(b.release)
	invOK(t, "a request queued within QueueTimeout", waitFor(t, queued, "the queued request"))
	invOK(t, "the blocking request", waitFor(t, done, "the blocking request"))
}

// checkReadinessTimeout: a readiness check answering just within
// readinessTimeout is ready; one still waiting then is cut off, unavailable.
func checkReadinessTimeout(t *testing.T) {
	for _, tc := range []struct {
		takes time.Duration
		code  int
	}{{readinessTimeout - time.Millisecond, http.StatusOK}, {readinessTimeout + time.Millisecond, http.StatusServiceUnavailable}} {
		t.Run(tc.takes.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, _ := newServer(t, &Options{ReadinessCheck: func(ctx context.Context) error {
					select {
					case <-time.After(tc.takes):
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				}})
				rec := httptest.NewRecorder()
				start := time.Now()
				s.ReadinessHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ready", nil))
				if rec.Code != tc.code {
					t.Errorf("a check taking %v: HTTP %d %s, want %d", tc.takes, rec.Code, rec.Body, tc.code)
				}
				if took := time.Since(start); took > readinessTimeout {
					t.Errorf("answered after %v, past readinessTimeout", took)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = s.Shutdown(ctx)
			})
		})
	}
}

func checkRequestTimeout(t *testing.T) {
	s, _ := newServer(t, &Options{RequestTimeout: 300 * time.Millisecond})
	invTool(t, s, Tool{Name: "sleep"}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		mv, _ := req.Arguments().Get("ms")
		n, _ := mv.AsNumber()
		ms, _ := n.Int64()
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return textResult("slept"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	url := invServe(t, s)
	invOK(t, "a handler within the deadline", invCall(t, url, "tools/call", toolCall(nil, "sleep", M{"ms": 10})))
	invFail(t, "a handler past the deadline", invCall(t, url, "tools/call", toolCall(nil, "sleep", M{"ms": 5000})),
		http.StatusGatewayTimeout, CodeInternalError)
}

func checkRateLimit(t *testing.T) {
	s, _ := newServer(t, &Options{RateLimiter: NewTokenBucket(0.001, 3)})
	addText(t, s, "t", "ok")
	url := invServe(t, s)
	for i := range 3 {
		invOK(t, fmt.Sprint("request ", i+1, " of the burst"), invCall(t, url, "tools/call", toolCall(nil, "t", nil)))
	}
	r := invCall(t, url, "tools/call", toolCall(nil, "t", nil))
	invFail(t, "a request past the burst", r, http.StatusTooManyRequests, CodeRateLimited)
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
		t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
	}
}

// ---------------------------------------------------------------------------
// JSON

func invJSONServer(t testing.TB, l exactjson.Limits) string {
	t.Helper()
	s, _ := newServer(t, &Options{Limits: Limits{JSON: l}})
	return invServe(t, s)
}

// invJSONBoundary sends server/discover with a pad at the limit (passes)
// and past it (-32700).
func invJSONBoundary(t *testing.T, url string, at, past string) {
	t.Helper()
	// The headers come from the request without the pad (encoding/json
	// cannot read some pads, such as a 1,024-digit number).
	headers := stdHeaders(invWithPad(t, "server/discover", params(nil), "null"))
	same := func(h http.Header) {
		for k, v := range headers {
			h[k] = v
		}
	}
	invOK(t, "at the limit", invSend(context.Background(), url, invWithPad(t, "server/discover", params(nil), at), same))
	invFail(t, "past the limit", invSend(context.Background(), url, invWithPad(t, "server/discover", params(nil), past), same),
		http.StatusBadRequest, CodeParseError)
}

func checkJSONInputBytes(t *testing.T) {
	// Over HTTP the body limit (413) comes before the parser; the parser's
	// own bound is exercised on stdio (see the body check) and here on the
	// package API.
	l := exactjson.Limits{MaxInputBytes: 64}
	at := `"` + strings.Repeat("a", 62) + `"`
	if _, err := exactjson.Parse([]byte(at), l); err != nil {
		t.Fatalf("64 bytes: %v", err)
	}
	if _, err := exactjson.Parse([]byte(at+" "), l); err == nil {
		t.Fatal("65 bytes parsed under MaxInputBytes 64")
	}
	if _, err := exactjson.Parse(bytes.Repeat([]byte(" "), exactjson.DefaultMaxInputBytes+1), exactjson.Limits{}); err == nil {
		t.Fatal("the package default MaxInputBytes is not enforced")
	}
}

func checkJSONDepth(t *testing.T) {
	t.Run("configured 8", func(t *testing.T) {
		invJSONBoundary(t, invJSONServer(t, exactjson.Limits{MaxDepth: 8}), string(nested(7)), string(nested(8)))
	})
	t.Run("default", func(t *testing.T) {
		d := exactjson.DefaultMaxDepth
		invJSONBoundary(t, invJSONServer(t, exactjson.Limits{}), string(nested(d-1)), string(nested(d)))
	})
}

func checkJSONNodes(t *testing.T) {
	for _, limit := range []int{64, exactjson.DefaultMaxNodes} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			cfg := exactjson.Limits{}
			if limit != exactjson.DefaultMaxNodes {
				cfg.MaxNodes = limit
			}
			url := invJSONServer(t, cfg)
			base := invNodes(t, invWithPad(t, "server/discover", params(nil), "[]"))
			nulls := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("null,", n), ",") + "]" }
			at := nulls(limit - base)
			if got := invNodes(t, invWithPad(t, "server/discover", params(nil), at)); got != limit {
				t.Fatalf("built %d nodes, want %d", got, limit)
			}
			invJSONBoundary(t, url, at, nulls(limit-base+1))
		})
	}
}

func checkJSONNumberLength(t *testing.T) {
	t.Run("configured 16", func(t *testing.T) {
		invJSONBoundary(t, invJSONServer(t, exactjson.Limits{MaxNumberLength: 16}), "1"+strings.Repeat("0", 15), "1"+strings.Repeat("0", 16))
	})
	t.Run("default", func(t *testing.T) {
		n := exactjson.DefaultMaxNumberLength
		invJSONBoundary(t, invJSONServer(t, exactjson.Limits{}), "1"+strings.Repeat("0", n-1), "1"+strings.Repeat("0", n))
	})
}

func checkJSONExponent(t *testing.T) {
	t.Run("configured 10", func(t *testing.T) {
		invJSONBoundary(t, invJSONServer(t, exactjson.Limits{MaxExponent: 10}), "1e10", "1e11")
	})
	t.Run("configured 10, negative", func(t *testing.T) {
		invJSONBoundary(t, invJSONServer(t, exactjson.Limits{MaxExponent: 10}), "1e-10", "1e-11")
	})
	t.Run("default", func(t *testing.T) {
		e := exactjson.DefaultMaxExponent
		invJSONBoundary(t, invJSONServer(t, exactjson.Limits{}), "1e"+strconv.Itoa(e), "1e"+strconv.Itoa(e+1))
	})
}

func checkJSONStringBytes(t *testing.T) {
	t.Run("configured 64", func(t *testing.T) {
		// The longest string of the base request is 42 bytes.
		invJSONBoundary(t, invJSONServer(t, exactjson.Limits{MaxStringBytes: 64}), `"`+strings.Repeat("a", 64)+`"`, `"`+strings.Repeat("a", 65)+`"`)
	})
	t.Run("configured 64, member name", func(t *testing.T) {
		invJSONBoundary(t, invJSONServer(t, exactjson.Limits{MaxStringBytes: 64}), `{"`+strings.Repeat("a", 64)+`":1}`, `{"`+strings.Repeat("a", 65)+`":1}`)
	})
	t.Run("configured 64, decoded length", func(t *testing.T) {
		// 32 two-byte characters written as escapes are 64 decoded bytes.
		invJSONBoundary(t, invJSONServer(t, exactjson.Limits{MaxStringBytes: 64}), `"`+strings.Repeat(`\u00e9`, 32)+`"`, `"`+strings.Repeat(`\u00e9`, 32)+`a"`)
	})
	t.Run("default", func(t *testing.T) {
		n := exactjson.DefaultMaxStringBytes
		invJSONBoundary(t, invJSONServer(t, exactjson.Limits{}), `"`+strings.Repeat("a", n)+`"`, `"`+strings.Repeat("a", n+1)+`"`)
	})
}

func checkJSONOutput(t *testing.T) {
	n := exactjson.DefaultMaxOutputBytes
	if _, err := exactjson.Encode(exactjson.String(strings.Repeat("a", n-2)), 0); err != nil {
		t.Fatalf("%d bytes of output: %v", n, err)
	}
	if _, err := exactjson.Encode(exactjson.String(strings.Repeat("a", n-1)), 0); err == nil {
		t.Fatalf("%d bytes of output encoded", n+1)
	}
}

// ---------------------------------------------------------------------------
// Request state

// invStateFixture serves a framework-state tool "st" (asks once with a
// padded state, then completes) on several servers sharing one keyring.
type invStateFixture struct {
	mgr    *seal.Manager
	params M
}

func newInvStateFixture(t testing.TB) *invStateFixture {
	k, err := seal.NewKey("inv", bytes.Repeat([]byte{7}, 32))
	must(t, err)
	kr, err := seal.NewKeyring(k)
	must(t, err)
	return &invStateFixture{mgr: seal.NewManager(kr, &seal.ManagerOptions{MaxTokenBytes: maxBodyBytesCeiling}), params: toolCall(invFormCaps, "st", M{"pad": 100})}
}

func (f *invStateFixture) server(t testing.TB, opts Options) string {
	t.Helper()
	if opts.Protector == nil {
		opts.Protector = f.mgr
	}
	s, _ := newServer(t, &opts)
	form := Form(ConditionalCapability)
	invTool(t, s, Tool{Name: "st", Inputs: []Input{form}, StateMode: StateFramework}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		if st, ok, _ := FrameworkState[exactjson.Value](req); ok {
			if again, _ := st.Get("again"); exactjson.Equal(again, exactjson.Bool(true)) {
				return nil, new(InputRequired).WithFrameworkState(st)
			}
			return textResult("done"), nil
		}
		pv, _ := req.Arguments().Get("pad")
		n, _ := pv.AsNumber()
		k, _ := n.Int64()
		av, _ := req.Arguments().Get("again")
		return nil, new(InputRequired).WithFrameworkState(exactjson.Object(
			exactjson.Field("pad", exactjson.String(strings.Repeat("s", int(k)))),
			exactjson.Field("again", av)))
	})
	return invServe(t, s)
}

// emit calls st and returns the sealed requestState.
func (f *invStateFixture) emit(t testing.TB, url string, p M) string {
	t.Helper()
	r := invCall(t, url, "tools/call", p)
	invOK(t, "emit", r)
	var res struct{ RequestState string }
	must(t, json.Unmarshal(r.msg.Result, &res))
	if res.RequestState == "" {
		t.Fatalf("no requestState: %s", r)
	}
	return res.RequestState
}

func (f *invStateFixture) retry(t testing.TB, url string, p M, token string) invResp {
	t.Helper()
	q := M{}
	for k, v := range p {
		q[k] = v
	}
	q["requestState"] = token
	return invCall(t, url, "tools/call", q)
}

func checkStateEncoded(t *testing.T) {
	f := newInvStateFixture(t)
	token := f.emit(t, f.server(t, Options{}), f.params)
	L := len(token)
	invOK(t, "a token exactly MaxEncodedBytes long", f.retry(t, f.server(t, Options{State: StateLimits{MaxEncodedBytes: L, MaxDecodedBytes: L}}), f.params, token))
	short := f.server(t, Options{State: StateLimits{MaxEncodedBytes: L - 1, MaxDecodedBytes: L - 1}})
	r := f.retry(t, short, f.params, token)
	invFail(t, "a token one byte past MaxEncodedBytes", r, http.StatusBadRequest, CodeInvalidParams)
	if r.msg.Error.Message != msgInvalidState {
		t.Errorf("state failure message %q", r.msg.Error.Message)
	}
	// Sealing a token past the limit: -32603 with HTTP 200. (The plaintext
	// of a new emission differs in length: its timestamps are canonical
	// numbers, 1.79622365115E+12 when the millisecond count ends in a zero.
	// So the limit here sits well below any token, above any plaintext.)
	plain := invPlaintext(t, f, token)
	tight := f.server(t, Options{State: StateLimits{MaxEncodedBytes: len(plain) + 16, MaxDecodedBytes: len(plain) + 16}})
	invFail(t, "sealing past MaxEncodedBytes", invCall(t, tight, "tools/call", f.params), http.StatusOK, CodeInternalError)
}

func checkStateDecoded(t *testing.T) {
	f := newInvStateFixture(t)
	url := f.server(t, Options{})
	token := f.emit(t, url, f.params)
	D := len(invPlaintext(t, f, token))
	invOK(t, "plaintext exactly MaxDecodedBytes long", f.retry(t, f.server(t, Options{State: StateLimits{MaxDecodedBytes: D}}), f.params, token))
	short := f.server(t, Options{State: StateLimits{MaxDecodedBytes: D - 1}})
	invFail(t, "plaintext one byte past MaxDecodedBytes", f.retry(t, short, f.params, token), http.StatusBadRequest, CodeInvalidParams)
	// A new emission's plaintext may be a few bytes shorter (see
	// checkStateEncoded): seal under a limit well below it.
	half := f.server(t, Options{State: StateLimits{MaxDecodedBytes: D / 2}})
	invFail(t, "sealing past MaxDecodedBytes", invCall(t, half, "tools/call", f.params), http.StatusOK, CodeInternalError)
}

// invPlaintext opens a token of the fixture with the binding of its params.
func invPlaintext(t *testing.T, f *invStateFixture, token string) []byte {
	t.Helper()
	pv, err := exactjson.FromGo(f.params)
	must(t, err)
	binding, err := stateBinding("/mcp", ProtocolVersion, "tools/call", "", pv)
	must(t, err)
	plain, err := f.mgr.Open(context.Background(), token, binding)
	must(t, err)
	return plain
}

func checkStateLifetime(t *testing.T) {
	f := newInvStateFixture(t)
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	url := f.server(t, Options{Now: clock, State: StateLimits{Lifetime: time.Minute}})
	t0 := clock()
	token := f.emit(t, url, f.params)
	set(t0.Add(time.Minute - time.Millisecond))
	invOK(t, "a retry 1 ms before the lifetime ends", f.retry(t, url, f.params, token))
	set(t0.Add(time.Minute))
	invFail(t, "a retry when the lifetime ends", f.retry(t, url, f.params, token), http.StatusBadRequest, CodeInvalidParams)
}

func checkStateRounds(t *testing.T) {
	f := newInvStateFixture(t)
	url := f.server(t, Options{State: StateLimits{Rounds: 3}})
	p := toolCall(invFormCaps, "st", M{"pad": 1, "again": true})
	token := f.emit(t, url, p) // round 1
	for round := 2; round <= 3; round++ {
		r := f.retry(t, url, p, token)
		invOK(t, fmt.Sprint("emitting round ", round), r)
		var res struct{ RequestState string }
		must(t, json.Unmarshal(r.msg.Result, &res))
		token = res.RequestState
	}
	// Round 3 opens (at the limit); emitting round 4 is refused.
	invFail(t, "emitting round 4 of 3", f.retry(t, url, p, token), http.StatusOK, CodeInternalError)
}

func checkApplicationState(t *testing.T) {
	form := Form(ConditionalCapability)
	s, _ := newServer(t, nil)
	invTool(t, s, Tool{Name: "app", Inputs: []Input{form}, StateMode: StateApplication}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		if st, ok := req.ApplicationState(); ok {
			return textResult(strconv.Itoa(len(st))), nil
		}
		nv, _ := req.Arguments().Get("n")
		n, _ := nv.AsNumber()
		k, _ := n.Int64()
		return nil, new(InputRequired).WithApplicationState(strings.Repeat("é", int(k)/2) + strings.Repeat("a", int(k)%2))
	})
	url := invServe(t, s)
	// Retry side: UTF-8 bytes, not characters.
	at := strings.Repeat("é", maxApplicationStateBytes/2)
	invOK(t, "application state of 65,536 bytes", invCall(t, url, "tools/call", paramsCaps(invFormCaps, M{"name": "app", "requestState": at})))
	invFail(t, "application state of 65,537 bytes", invCall(t, url, "tools/call", paramsCaps(invFormCaps, M{"name": "app", "requestState": at + "a"})),
		http.StatusBadRequest, CodeInvalidParams)
	// Result side.
	invOK(t, "emitting 65,536 bytes", invCall(t, url, "tools/call", toolCall(invFormCaps, "app", M{"n": maxApplicationStateBytes})))
	invFail(t, "emitting 65,537 bytes", invCall(t, url, "tools/call", toolCall(invFormCaps, "app", M{"n": maxApplicationStateBytes + 1})),
		http.StatusInternalServerError, CodeInternalError)
}

func checkSealTokenBytes(t *testing.T) {
	f := newInvStateFixture(t)
	token := f.emit(t, f.server(t, Options{}), f.params)
	kr := f.mgr.Keyring()
	L := len(token)
	invOK(t, "a token of MaxTokenBytes", f.retry(t, f.server(t, Options{Protector: seal.NewManager(kr, &seal.ManagerOptions{MaxTokenBytes: L})}), f.params, token))
	invFail(t, "a token one byte past MaxTokenBytes", f.retry(t, f.server(t, Options{Protector: seal.NewManager(kr, &seal.ManagerOptions{MaxTokenBytes: L - 1})}), f.params, token),
		http.StatusBadRequest, CodeInvalidParams)
}

func checkKeyID(t *testing.T) {
	secret := bytes.Repeat([]byte{1}, seal.MinKeyBytes)
	if _, err := seal.NewKey(strings.Repeat("k", seal.MaxKeyIDLength), secret); err != nil {
		t.Fatalf("a %d-character key id: %v", seal.MaxKeyIDLength, err)
	}
	if _, err := seal.NewKey(strings.Repeat("k", seal.MaxKeyIDLength+1), secret); !errors.Is(err, seal.ErrInvalidKey) {
		t.Fatalf("a %d-character key id: %v", seal.MaxKeyIDLength+1, err)
	}
	if _, err := seal.NewKey("", secret); err == nil {
		t.Fatal("an empty key id")
	}
}

func checkKeySecret(t *testing.T) {
	if _, err := seal.NewKey("k", bytes.Repeat([]byte{1}, seal.MinKeyBytes)); err != nil {
		t.Fatalf("a %d-byte secret: %v", seal.MinKeyBytes, err)
	}
	if _, err := seal.NewKey("k", bytes.Repeat([]byte{1}, seal.MinKeyBytes-1)); !errors.Is(err, seal.ErrInvalidKey) {
		t.Fatalf("a %d-byte secret: %v", seal.MinKeyBytes-1, err)
	}
}

// ---------------------------------------------------------------------------
// Headers and templates

func checkHeaderValue(t *testing.T) {
	s, _ := httpTestServer(t, nil)
	url := invServe(t, s)
	name := func(n int) string { return strings.Repeat("n", n) }
	// Mcp-Name at the limit is decoded, then the (unknown) tool is looked up.
	max := hdr.MaxDecodedValueBytes
	invFail(t, "Mcp-Name of 16,384 bytes", invCall(t, url, "tools/call", toolCall(nil, name(max), nil)), http.StatusBadRequest, CodeInvalidParams)
	invFail(t, "Mcp-Name of 16,385 bytes", invCall(t, url, "tools/call", toolCall(nil, name(max+1), nil)), http.StatusBadRequest, CodeHeaderMismatch)
	// The Base64 sentinel form bounds the decoded bytes.
	wide := strings.Repeat("é", max/2)
	invFail(t, "Mcp-Name sentinel of 16,384 decoded bytes", invCall(t, url, "tools/call", toolCall(nil, wide, nil), setHeader("Mcp-Name", hdr.Encode(wide))),
		http.StatusBadRequest, CodeInvalidParams)
	invFail(t, "Mcp-Name sentinel of 16,385 decoded bytes", invCall(t, url, "tools/call", toolCall(nil, wide+"a", nil), setHeader("Mcp-Name", hdr.Encode(wide+"a"))),
		http.StatusBadRequest, CodeHeaderMismatch)
	// An Mcp-Param mirror.
	region := func(v string) invResp {
		return invCall(t, url, "tools/call", toolCall(nil, "echo", M{"region": v}), setHeader("Mcp-Param-Region", hdr.Encode(v)))
	}
	invOK(t, "Mcp-Param-Region of 16,384 bytes", region(name(max)))
	invFail(t, "Mcp-Param-Region of 16,385 bytes", region(name(max+1)), http.StatusBadRequest, CodeHeaderMismatch)
}

func invTemplateError(t *testing.T, tmpl string) error {
	t.Helper()
	s, _ := newServer(t, nil)
	return s.AddResourceTemplate(ResourceTemplate{URITemplate: tmpl, Name: "t"},
		func(ctx context.Context, req *Request) (*ReadResourceResult, error) { return nil, nil })
}

func checkTemplateLength(t *testing.T) {
	tmpl := func(n int) string { return "inv://" + strings.Repeat("a", n-len("inv://")-len("{v}")) + "{v}" }
	if err := invTemplateError(t, tmpl(uritemplate.MaxTemplateBytes)); err != nil {
		t.Fatalf("a %d-byte template: %v", uritemplate.MaxTemplateBytes, err)
	}
	if err := invTemplateError(t, tmpl(uritemplate.MaxTemplateBytes+1)); err == nil {
		t.Fatalf("a %d-byte template registered", uritemplate.MaxTemplateBytes+1)
	}
}

func checkTemplateVariables(t *testing.T) {
	tmpl := func(n int) string {
		var sb strings.Builder
		sb.WriteString("inv://t")
		for i := range n {
			fmt.Fprintf(&sb, "/{v%d}", i)
		}
		return sb.String()
	}
	if err := invTemplateError(t, tmpl(uritemplate.MaxVariables)); err != nil {
		t.Fatalf("%d variables: %v", uritemplate.MaxVariables, err)
	}
	if err := invTemplateError(t, tmpl(uritemplate.MaxVariables+1)); err == nil {
		t.Fatalf("%d variables registered", uritemplate.MaxVariables+1)
	}
}

func checkTemplateVarName(t *testing.T) {
	tmpl := func(n int) string { return "inv://t/{" + strings.Repeat("v", n) + "}" }
	if err := invTemplateError(t, tmpl(uritemplate.MaxVariableNameBytes)); err != nil {
		t.Fatalf("a %d-byte variable name: %v", uritemplate.MaxVariableNameBytes, err)
	}
	if err := invTemplateError(t, tmpl(uritemplate.MaxVariableNameBytes+1)); err == nil {
		t.Fatalf("a %d-byte variable name registered", uritemplate.MaxVariableNameBytes+1)
	}
}

func checkTemplateMatchWork(t *testing.T) {
	// A template built to make reverse matching search (many adjacent
	// variables with no literal between them) answers not-found, and fast,
	// instead of running away.
	s, _ := newServer(t, nil)
	var sb strings.Builder
	sb.WriteString("inv://m/")
	for i := range uritemplate.MaxVariables {
		fmt.Fprintf(&sb, "{v%d}-", i)
	}
	sb.WriteString("end")
	handler := func(ctx context.Context, req *Request) (*ReadResourceResult, error) {
		return &ReadResourceResult{Contents: []ResourceContents{TextResource(req.Name, "text/plain", "ok")}}, nil
	}
	must(t, s.AddResourceTemplate(ResourceTemplate{URITemplate: sb.String(), Name: "m"}, handler))
	url := invServe(t, s)
	uri := "inv://m/" + strings.Repeat("-", 4000) + "x"
	start := time.Now()
	r := invCall(t, url, "resources/read", params(M{"uri": uri}))
	invFail(t, "a pathological URI", r, http.StatusBadRequest, CodeInvalidParams)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("matching took %s", d)
	}
}

// ---------------------------------------------------------------------------
// Legacy sessions

func checkLegacySessions(t *testing.T) {
	s, _ := newServer(t, &Options{Legacy: LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxSessions: 2}}})
	addText(t, s, "t", "ok")
	url := invServe(t, s)
	initialize := func() invResp {
		b := invBody(t, "initialize", M{"protocolVersion": LegacyVersion20251125, "capabilities": M{},
			"clientInfo": M{"name": "inv", "version": "1"}})
		return invSend(context.Background(), url, b, func(h http.Header) {
			h.Del("Mcp-Method")
			h.Del("MCP-Protocol-Version")
		})
	}
	for i := range 2 {
		r := initialize()
		invOK(t, fmt.Sprint("session ", i+1), r)
		if r.header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("session %d: no Mcp-Session-Id: %s", i+1, r)
		}
	}
	r := initialize()
	invFail(t, "a session past MaxSessions", r, http.StatusServiceUnavailable, CodeInternalError)
	if r.header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
}

func checkReadHeaderTimeout(t *testing.T) {
	// Enforcement is net/http's (a 10 s wait); the value is NewHTTPServer's.
	if hs := NewHTTPServer("127.0.0.1:0", nil); hs.ReadHeaderTimeout != defaultReadHeaderTimeout {
		t.Fatalf("NewHTTPServer ReadHeaderTimeout = %s", hs.ReadHeaderTimeout)
	}
}

// checkWriteTimeout: a client that reads its event stream gets every frame;
// one that stops reading cuts the stream after WriteTimeout, and the
// handler's notifications fail instead of blocking.
func checkWriteTimeout(t *testing.T) {
	s, _ := newServer(t, &Options{WriteTimeout: 300 * time.Millisecond, KeepAlive: 100 * time.Millisecond})
	type outcome struct {
		sent int
		err  error
		took time.Duration
	}
	results := make(chan outcome, 4)
	big := strings.Repeat("x", 64<<10)
	invTool(t, s, Tool{Name: "flood"}, func(ctx context.Context, req *Request) (*CallToolResult, error) {
		nv, _ := req.Arguments().Get("n")
		n, _ := nv.AsNumber()
		count, _ := n.Int64()
		start := time.Now()
		for i := int64(1); count == 0 || i <= count; i++ {
			if err := req.Progress(float64(i), 0, big); err != nil {
				results <- outcome{int(i - 1), err, time.Since(start)}
				return nil, err
			}
			if time.Since(start) > hangGuard {
				break
			}
		}
		results <- outcome{int(count), nil, time.Since(start)}
		return textResult("flooded"), nil
	})
	url := invServe(t, s)
	withToken := func(n int) M { return withMeta(toolCall(nil, "flood", M{"n": n}), M{"progressToken": 1}) }

	// A reading client: 20 frames of 64 KiB and the response.
	r := invCall(t, url, "tools/call", withToken(20))
	invOK(t, "a client that reads", r)
	if got := strings.Count(string(r.body), "notifications/progress"); got != 20 {
		t.Fatalf("a reading client got %d progress frames, want 20", got)
	}
	if o := waitFor(t, results, "the reading flood"); o.err != nil {
		t.Fatalf("the handler of a reading client failed: %v", o.err)
	}

	// A client that stops reading after the first frame.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, st := openStream(t, ctx, url, invIDs.Add(1), "tools/call", withToken(0))
	defer res.Body.Close()
	if m, _ := st.nextMsg(); m.Method != "notifications/progress" {
		t.Fatalf("first frame %+v", m)
	}
	o := waitFor(t, results, "the stalled flood")
	if o.err == nil {
		t.Fatalf("the handler sent %d frames to a client that stopped reading without an error", o.sent)
	}
	t.Logf("a stalled client: the handler's notification %d failed after %s: %v", o.sent+1, o.took.Round(time.Millisecond), o.err)
}

// invLegacyServer serves a legacy-enabled server with one tool.
func invLegacyServer(t *testing.T, opts *Options) (*Server, string) {
	t.Helper()
	s, _ := newServer(t, opts)
	addText(t, s, "t", "ok")
	return s, startHTTP(t, s).URL
}

func checkLegacySessionsPerIdentity(t *testing.T) {
	_, url := invLegacyServer(t, &Options{
		Admission: func(ctx context.Context, r *AdmissionRequest) (Identity, error) {
			return Identity{Principal: "alice"}, nil
		},
		Legacy: LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxPerIdentity: 1}}})
	newLegacyClient(t, url).initialize()
	c := newLegacyClient(t, url)
	r := c.send(body(t, 0, "initialize", M{"protocolVersion": c.version, "capabilities": c.caps,
		"clientInfo": M{"name": "inv", "version": "1"}}), nil)
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("a second session of one identity past MaxPerIdentity 1: %v", r)
	}
}

func checkLegacyPendingAnswers(t *testing.T) {
	s, url := invLegacyServer(t, &Options{Legacy: LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxPendingAnswers: 2}}})
	c := newLegacyClient(t, url)
	c.initialize()
	ctx := context.Background()
	exp := time.Now().Add(time.Minute)
	for i := range 2 {
		if err := s.legacyAdapter().store.Expect(ctx, c.sid, "r"+strconv.Itoa(i), exp); err != nil {
			t.Fatalf("pending answer %d of 2: %v", i+1, err)
		}
	}
	if err := s.legacyAdapter().store.Expect(ctx, c.sid, "r2", exp); !errors.Is(err, sessionstore.ErrLimit) {
		t.Fatalf("a third pending answer: %v, want ErrLimit", err)
	}
}

func checkLegacySessionID(t *testing.T) {
	if !sessionstore.ValidID(strings.Repeat("a", sessionstore.MaxIDBytes)) {
		t.Fatalf("a %d-byte session id is invalid", sessionstore.MaxIDBytes)
	}
	if sessionstore.ValidID(strings.Repeat("a", sessionstore.MaxIDBytes+1)) {
		t.Fatalf("a %d-byte session id is valid", sessionstore.MaxIDBytes+1)
	}
	_, url := invLegacyServer(t, &Options{Legacy: LegacyOptions{InMemorySessions: true}})
	c := newLegacyClient(t, url)
	c.initialize()
	r := c.send(body(t, 1, "tools/list", nil), func(h http.Header) { h.Set("Mcp-Session-Id", strings.Repeat("a", sessionstore.MaxIDBytes+1)) })
	if r.Status != http.StatusNotFound {
		t.Fatalf("an over-long session id: %v", r)
	}
}

func checkLegacyLifetimes(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	_, url := invLegacyServer(t, &Options{Now: clock, Legacy: LegacyOptions{InMemorySessions: true, IdleTimeout: time.Minute, MaxLifetime: 3 * time.Minute}})
	ping := func(c *legacyClient, what string, want int) {
		t.Helper()
		if r := c.call(invIDs.Add(1), "ping", nil); r.Status != want {
			t.Fatalf("%s: want HTTP %d, got %v", what, want, r)
		}
	}
	// Idle: used 1 ms before IdleTimeout is fine; unused for IdleTimeout is gone.
	c := newLegacyClient(t, url)
	c.initialize()
	advance(time.Minute - time.Millisecond)
	ping(c, "1 ms before the idle timeout", http.StatusOK)
	advance(time.Minute)
	ping(c, "at the idle timeout", http.StatusNotFound)
	// Absolute: kept busy, it lives until MaxLifetime and not one moment more.
	c = newLegacyClient(t, url)
	c.initialize()
	for range 3 {
		advance(50 * time.Second)
		ping(c, "a busy session", http.StatusOK)
	}
	advance(30*time.Second - time.Millisecond)
	ping(c, "1 ms before MaxLifetime", http.StatusOK)
	advance(time.Millisecond)
	ping(c, "at MaxLifetime", http.StatusNotFound)
}

// TestLimitsMisconfiguredServerLeavesNoGauges: a NewServer that fails
// registers nothing with the MeterProvider: no gauges of a server that was
// never returned.
func TestLimitsMisconfiguredServerLeavesNoGauges(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	if _, err := NewServer(Implementation{}, &Options{MeterProvider: mp, Limits: Limits{MaxBodyBytes: maxBodyBytesCeiling + 1}}); err == nil {
		t.Fatal("no configuration error")
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			t.Errorf("a failed NewServer reports %s (scope %s)", m.Name, sm.Scope.Name)
		}
	}
}
