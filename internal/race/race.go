//go:build !race

// Package race reports whether the race detector is on, so heavy tests can
// scale down under it.
package race

// Enabled reports whether the binary was built with -race.
const Enabled = false
