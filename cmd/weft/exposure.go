package main

import (
	"flag"
	"fmt"
	"net"
)

// allowUnauthenticatedFlag names the flag that lets serve, gateway and
// openapi listen on a non-loopback address without authentication.
const allowUnauthenticatedFlag = "allow-unauthenticated"

// addAllowUnauthenticated defines --allow-unauthenticated on fs.
func addAllowUnauthenticated(fs *flag.FlagSet) *bool {
	return fs.Bool(allowUnauthenticatedFlag, false,
		"listen on a non-loopback --addr without authentication (every caller is anonymous; each remote address gets its own share of the limits, so behind a proxy all callers share one)")
}

// checkExposure refuses to listen on a non-loopback address without
// authentication (issue 25): anonymous callers on a network share what a
// proxy or NAT makes one address, and anyone who reaches the port may call
// every tool. authenticated says requests need credentials (how is named
// in howAuth, e.g. "--tokens FILE"; "" when the command has none);
// allowed is --allow-unauthenticated. A host that is not a loopback IP
// address or "localhost" ("", 0.0.0.0, ::, a name) is not loopback.
func checkExposure(addr string, authenticated, allowed bool, howAuth string) error {
	if authenticated || allowed {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	how := "put it behind an authenticating proxy"
	if howAuth != "" {
		how = "configure authentication (" + howAuth + ")"
	}
	return fmt.Errorf("--addr %q is not a loopback address and requests are not authenticated: anyone who reaches it may call every tool, as one anonymous caller per address; %s, or pass --%s to serve it anyway",
		addr, how, allowUnauthenticatedFlag)
}
