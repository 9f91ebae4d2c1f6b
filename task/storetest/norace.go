//go:build !race

package storetest

// RaceEnabled reports whether the race detector is on; load tests use it to
// shrink themselves (instrumented database drivers run many times slower).
const RaceEnabled = false
