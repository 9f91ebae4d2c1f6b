package main

import (
	"flag"

	"github.com/weftmcp/weft/internal/serving"
)

// addAllowUnauthenticated defines --allow-unauthenticated on fs.
func addAllowUnauthenticated(fs *flag.FlagSet) *bool {
	return fs.Bool(serving.AllowUnauthenticatedFlag, false,
		"listen on a non-loopback --addr without authentication (every caller is anonymous; each remote address gets its own share of the limits, so behind a proxy all callers share one)")
}
