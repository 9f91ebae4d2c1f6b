package weft

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/weftmcp/weft/sessionstore"
)

// fromAddr returns an HTTP client whose connections come from the loopback
// address ip (Linux routes all of 127.0.0.0/8 to lo).
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// tryInitialize sends initialize and returns the HTTP status.
func (c *legacyClient) tryInitialize() int {
	c.t.Helper()
	r := c.send(body(c.t, 0, "initialize", M{"protocolVersion": c.version, "capabilities": c.caps,
		"clientInfo": M{"name": "fair", "version": "1"}}), nil)
	if r.Status == http.StatusOK {
		c.sid = r.Header.Get("Mcp-Session-Id")
	}
	return r.Status
}

// TestLegacySessionsNoisyNeighbour: tenant A opens 2025-11-25 sessions
// until it is refused; tenant B's initialize still succeeds, whether the
// tenants are bearer identities, anonymous callers from two addresses, or
// callers of a store that A filled.
func TestLegacySessionsNoisyNeighbour(t *testing.T) {
	tokens := func(ctx context.Context, r *AdmissionRequest) (Identity, error) {
		return Identity{Principal: r.BearerToken, Partition: "tenant-" + r.BearerToken}, nil
	}
	for _, tc := range []struct {
		name      string
		admission Admission
		limits    sessionstore.Limits
		a, b      func(c *legacyClient)
		flood     int // initialize calls A makes at most
	}{
		{name: "bearer identities", admission: tokens, limits: sessionstore.Limits{MaxSessions: 300},
			a: func(c *legacyClient) { c.token = "a" }, b: func(c *legacyClient) { c.token = "b" }, flood: 301},
		{name: "anonymous callers from two addresses", limits: sessionstore.Limits{MaxSessions: 300},
			a: func(c *legacyClient) { c.httpc = fromAddr("127.0.0.1") }, b: func(c *legacyClient) { c.httpc = fromAddr("127.0.0.2") }, flood: 301},
		{name: "a store A filled", admission: tokens, limits: sessionstore.Limits{MaxSessions: 50, MaxPerIdentity: 1000},
			a: func(c *legacyClient) { c.token = "a" }, b: func(c *legacyClient) { c.token = "b" }, flood: 51},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := invLegacyServer(t, &Options{Admission: tc.admission, Legacy: LegacyOptions{InMemorySessions: true, Limits: tc.limits}})
			var first *legacyClient
			opened, status := 0, 0
			for range tc.flood {
				c := newLegacyClient(t, url)
				tc.a(c)
				if status = c.tryInitialize(); status != http.StatusOK {
					break
				}
				if first == nil {
					first = c
				}
				opened++
			}
			if status != http.StatusServiceUnavailable {
				t.Fatalf("tenant A opened %d sessions, then got HTTP %d; want a 503 within %d", opened, status, tc.flood)
			}
			t.Logf("tenant A opened %d sessions before its 503", opened)
			b := newLegacyClient(t, url)
			tc.b(b)
			if st := b.tryInitialize(); st != http.StatusOK {
				t.Fatalf("tenant B's initialize after tenant A's flood: HTTP %d, want 200", st)
			}
			if r := b.call(1, "tools/call", M{"name": "t", "arguments": M{}}); r.Status != http.StatusOK || r.result(t)["isError"] == true {
				t.Fatalf("tenant B's call: %v", r)
			}
		})
	}
}

func checkLegacySessionsPerPartition(t *testing.T) {
	_, url := invLegacyServer(t, &Options{
		Admission: func(ctx context.Context, r *AdmissionRequest) (Identity, error) {
			return Identity{Principal: r.BearerToken, Partition: "tenant"}, nil
		},
		Legacy: LegacyOptions{InMemorySessions: true, Limits: sessionstore.Limits{MaxPerPartition: 2}}})
	for i, tok := range []string{"u1", "u2", "u3"} {
		c := newLegacyClient(t, url)
		c.token = tok
		want := http.StatusOK
		if i == 2 {
			want = http.StatusServiceUnavailable
		}
		if st := c.tryInitialize(); st != want {
			t.Fatalf("session %d of one partition (MaxPerPartition 2): HTTP %d, want %d", i+1, st, want)
		}
	}
}
