package main

// Running some parts only (-only) and merging their sections into the
// report of a whole run: the rest of the file stays as that run wrote it.

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// part is a part of a run that -skip and -only name.
type part struct {
	name     string
	sections []string
}

// parts are the parts of a run, in the order measured, with the headings
// of the report sections each writes ("## " and a prefix of the title).
var parts = []part{
	{"loopback", []string{"tools/call over loopback", "Every round"}},
	{"server", []string{"Server-only cost of one tools/call"}},
	{"ablation", []string{"Where Weft's time goes"}},
	{"mrtr", []string{"Multi-round call (Weft, in memory)"}},
	{"mrtr-loopback", []string{"Multi-round call (Weft, over loopback)"}},
	{"seal", []string{"Sealing request state"}},
	{"json", []string{"JSON: exactjson"}},
	{"tasks", []string{"Tasks: create to complete"}},
	{"tasks-fair", []string{"Tasks: a fair share per tenant"}},
	{"listen", []string{"subscriptions/listen at scale"}},
	{"getstreams", []string{"2025-11-25 GET streams at scale"}},
	{"sessions", []string{"2025-11-25 sessions at scale"}},
	{"gateway", []string{"Gateway overhead"}},
	{"catalog", []string{"Large catalogs"}},
	{"first-run", []string{"First run"}},
	{"fairness", []string{"Noisy neighbour"}},
}

// partNames lists the parts, comma-separated.
func partNames() string {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.name
	}
	return strings.Join(names, ",")
}

// parseParts reads a comma-separated list of parts of flag.
func parseParts(flag, list string) (map[string]bool, error) {
	set := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.ContainsFunc(parts, func(p part) bool { return p.name == s }) {
			return nil, fmt.Errorf("-%s: unknown part %q (the parts: %s)", flag, s, partNames())
		}
		set[s] = true
	}
	return set, nil
}

// skipAllBut is the -skip set that runs only the parts of only.
func skipAllBut(only map[string]bool) map[string]bool {
	skip := map[string]bool{}
	for _, p := range parts {
		if !only[p.name] {
			skip[p.name] = true
		}
	}
	return skip
}

// section is a "## " section of a report: its heading line and the rest.
type section struct {
	heading string // "## Title"
	body    string // what follows the heading line, up to the next section
}

// splitSections splits a report into what precedes the first section and
// its sections.
func splitSections(doc string) (string, []section) {
	lines := strings.SplitAfter(doc, "\n")
	var pre strings.Builder
	var secs []section
	for _, l := range lines {
		if strings.HasPrefix(l, "## ") {
			secs = append(secs, section{heading: strings.TrimRight(l, "\n")})
			continue
		}
		if len(secs) == 0 {
			pre.WriteString(l)
		} else {
			secs[len(secs)-1].body += l
		}
	}
	return pre.String(), secs
}

func joinSections(pre string, secs []section) string {
	var b strings.Builder
	b.WriteString(pre)
	for _, s := range secs {
		b.WriteString(s.heading)
		b.WriteString("\n")
		b.WriteString(s.body)
	}
	return b.String()
}

// titled reports whether s is the section of title (a prefix of its own).
func (s section) titled(title string) bool { return strings.HasPrefix(s.heading, "## "+title) }

// targetsTitle is the heading of the targets table.
const targetsTitle = "Targets"

// metLine is the finding that counts the targets met.
var metLine = regexp.MustCompile(`(?m)^- \d+ of \d+ targets met in this run\.$`)

// mergeReport merges the sections that the parts of only wrote into fresh
// (the report of a run of those parts) into old (the report of a whole
// run): each replaces the section of the same title, or, new, goes before
// the findings. note, in italics, opens each merged section. The rows of
// fresh's targets table replace old's of the same target, or are added;
// the findings' count of targets met is counted again. Every other line of
// old stays as it was.
func mergeReport(old, fresh string, only map[string]bool, note string) (string, error) {
	if err := checkReport(old); err != nil {
		return "", err
	}
	pre, secs := splitSections(old)
	_, got := splitSections(fresh)
	merged := 0
	for _, p := range parts {
		if !only[p.name] {
			continue
		}
		for _, title := range p.sections {
			i := slices.IndexFunc(got, func(s section) bool { return s.titled(title) })
			if i < 0 {
				continue // the part wrote nothing under this title (a note instead, or no rows)
			}
			s := got[i]
			s.body = "\n_" + note + "_\n" + s.body
			if j := slices.IndexFunc(secs, func(o section) bool { return o.titled(title) }); j >= 0 {
				secs[j] = s
			} else {
				at := slices.IndexFunc(secs, func(o section) bool { return o.titled("Findings") })
				if at < 0 {
					at = len(secs)
				}
				secs = slices.Insert(secs, at, s)
			}
			merged++
		}
	}
	if merged == 0 {
		return "", fmt.Errorf("the run wrote no section of %s", strings.Join(sortedKeys(only), ", "))
	}
	if i := slices.IndexFunc(got, func(s section) bool { return s.titled(targetsTitle) }); i >= 0 {
		j := slices.IndexFunc(secs, func(o section) bool { return o.titled(targetsTitle) })
		if j < 0 {
			secs = slices.Insert(secs, min(len(secs), 3), got[i]) // after machine, versions, command
		} else {
			secs[j].body = mergeRows(secs[j].body, got[i].body)
			met, all := countTargets(secs[j].body)
			if k := slices.IndexFunc(secs, func(o section) bool { return o.titled("Findings") }); k >= 0 {
				secs[k].body = metLine.ReplaceAllLiteralString(secs[k].body, fmt.Sprintf("- %d of %d targets met in this run.", met, all))
			}
		}
	}
	return joinSections(pre, secs), nil
}

// checkReport checks that doc looks like a report of benchload.
func checkReport(doc string) error {
	pre, secs := splitSections(doc)
	if !strings.HasPrefix(pre, "# ") || len(secs) == 0 {
		return errors.New("it is not a report of benchload (no title, or no sections)")
	}
	return nil
}

// mergeRows merges the table rows of fresh into the table of old, keyed by
// their first cell.
func mergeRows(old, fresh string) string {
	lines := strings.SplitAfter(old, "\n")
	last := -1 // old's last table row
	for i, l := range lines {
		if strings.HasPrefix(l, "| ") {
			last = i
		}
	}
	for _, row := range strings.SplitAfter(fresh, "\n") {
		if !strings.HasPrefix(row, "| ") || strings.HasPrefix(row, "| target ") {
			continue
		}
		if !strings.HasSuffix(row, "\n") {
			row += "\n"
		}
		key := firstCell(row)
		if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "| ") && firstCell(l) == key }); i >= 0 {
			lines[i] = row
			continue
		}
		if last < 0 {
			continue
		}
		last++
		lines = slices.Insert(lines, last, row)
	}
	return strings.Join(lines, "")
}

func firstCell(row string) string {
	cells := strings.Split(row, " | ")
	return strings.TrimPrefix(cells[0], "| ")
}

// countTargets counts the met targets of a targets table and all of them.
func countTargets(body string) (met, all int) {
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "| target ") {
			continue
		}
		all++
		if strings.HasSuffix(l, "| **yes** |") {
			met++
		}
	}
	return met, all
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
