package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// cliVersion is the version weft reports (weft --version, and its client
// info): the module version it was built as, or "devel" with the commit
// when built from a checkout.
func cliVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "devel"
	}
	return "devel-" + rev + modified
}

// versionCmd prints the version, the Go version and the protocol
// revisions weft speaks.
func versionCmd(stdout io.Writer) error {
	fmt.Fprintf(stdout, "weft %s (%s, %s/%s)\nMCP 2026-07-28, 2025-11-25, 2025-06-18\n", cliVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
