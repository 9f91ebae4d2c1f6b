// Package doccheck holds the test that keeps the README and the guides in
// docs/guides honest: every Go code block in them is a complete file that
// compiles (as a package of a throwaway module that requires this
// checkout), and the blocks marked to run are run (servers are started and
// called with the Weft client, test files are run with go test).
//
// A block is marked by an HTML comment on the line before its fence:
//
//	<!-- doccheck {"run":"http","calls":[{"tool":"greet","args":{"name":"Ada"},"want":"Hello, Ada!"}]} -->
//
// run is "build" (the default), "http" (a server listening on
// 127.0.0.1:8080, which the check rewrites to a free port), "stdio" (a server
// on standard input and output) or "test" (a _test.go file). The package has
// no exported API; it exists for its test.
package doccheck
