// Package sqlq holds what Weft's SQL stores share about query text: their
// queries are written once with "?" placeholders (SQLite's) and numbered
// for PostgreSQL.
package sqlq

import (
	"strconv"
	"strings"
)

// Dollar numbers the "?" placeholders of query as PostgreSQL's $1, $2, ...
// The stores' queries hold no "?" inside literals, so every "?" is a
// placeholder.
func Dollar(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
