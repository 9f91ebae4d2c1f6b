package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// First run (issue #26): the README's first command timed from a fresh
// clone by scripts/first-run.sh --weft: `go run ./cmd/weft-demo` until the
// demo answers /healthz with an empty build cache and again with the cache
// it filled, and `go run ./cmd/weft serve` (the whole tool) the same way.

// firstRunRow is one line of scripts/first-run.sh.
type firstRunRow struct {
	name    string
	seconds float64
}

// firstRun runs scripts/first-run.sh --weft (from bench/, as make bench does).
func firstRun(ctx context.Context) ([]firstRunRow, error) {
	out, err := exec.CommandContext(ctx, "bash", "../scripts/first-run.sh", "--weft").Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/first-run.sh: %w", err)
	}
	return parseFirstRun(string(out))
}

// parseFirstRun reads lines of "NAME  SECONDS s".
func parseFirstRun(out string) ([]firstRunRow, error) {
	var rows []firstRunRow
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[len(f)-1] != "s" {
			return nil, fmt.Errorf("scripts/first-run.sh: unexpected line %q", line)
		}
		sec, err := strconv.ParseFloat(f[len(f)-2], 64)
		if err != nil {
			return nil, fmt.Errorf("scripts/first-run.sh: line %q: %w", line, err)
		}
		rows = append(rows, firstRunRow{name: strings.Join(f[:len(f)-2], " "), seconds: sec})
	}
	return rows, nil
}

func (r *report) firstRunMarkdown(p func(string, ...any)) {
	if len(r.firstRun) == 0 {
		return
	}
	p("## First run (issue #26)\n\n")
	p("The README's first command from a fresh clone (`scripts/first-run.sh --weft`): the time from `go run` until the server answers " +
		"`/healthz`, with an empty Go build cache (cold: the standard library and every package are compiled) and then with the cache that " +
		"run filled (warm). Modules come from the module cache, so download time is left out. `weft-demo` links only what the demo uses " +
		"(SQLite for its durable tasks and handles, no OpenAPI, PostgreSQL, OpenTelemetry SDK or Prometheus: `TestLinksOnlyWhatTheDemoUses`); " +
		"`weft serve` is the whole tool, for comparison.\n\n")
	p("| run | time to answer |\n|---|---:|\n")
	for _, row := range r.firstRun {
		p("| `%s` | %.1f s |\n", row.name, row.seconds)
	}
	p("\n")
}
