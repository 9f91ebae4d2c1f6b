package sqlq

import "testing"

func TestDollar(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"UPDATE t SET a = ? WHERE b = ? AND c = ?", "UPDATE t SET a = $1 WHERE b = $2 AND c = $3"},
		{"INSERT INTO t VALUES (?,?,?,?,?,?,?,?,?,?,?)", "INSERT INTO t VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)"},
		{"é = ?", "é = $1"},
	} {
		if got := Dollar(tc.in); got != tc.want {
			t.Errorf("Dollar(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
