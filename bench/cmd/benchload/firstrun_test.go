package main

import "testing"

func TestParseFirstRun(t *testing.T) {
	rows, err := parseFirstRun("weft-demo cold                113.3 s\nweft-demo warm                  0.5 s\n")
	if err != nil || len(rows) != 2 || rows[0].name != "weft-demo cold" || rows[0].seconds != 113.3 || rows[1].seconds != 0.5 {
		t.Fatalf("parseFirstRun = %+v, %v", rows, err)
	}
	for _, bad := range []string{"weft-demo cold", "weft-demo cold x s", "weft-demo cold 1.0 ms"} {
		if _, err := parseFirstRun(bad); err == nil {
			t.Errorf("parseFirstRun(%q): want an error", bad)
		}
	}
}
