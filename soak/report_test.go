package soak

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// writeReport writes the report to path, or to a new weft-soak-*.md file
// in the OS temp directory when path is empty, and returns the path.
func writeReport(path, report string) (string, error) {
	body := "# Weft soak report\n\n" + report
	if path == "" {
		f, err := os.CreateTemp("", "weft-soak-"+time.Now().UTC().Format("20060102-150405")+"-*.md")
		if err != nil {
			return "", err
		}
		defer f.Close()
		if _, err := f.WriteString(body); err != nil {
			return "", err
		}
		return f.Name(), f.Close()
	}
	return path, os.WriteFile(path, []byte(body), 0o644)
}

var windows = []string{"steady", "PostgreSQL restart", "SIGTERM A", "SIGKILL B"}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

var logLine = regexp.MustCompile(`level=(ERROR|WARN) msg="((?:[^"\\]|\\.)*)"`)

// serverLogs counts the ERROR and WARN lines of the instances' logs by
// message.
func (s *soak) serverLogs() map[string]int {
	out := map[string]int{}
	for _, in := range s.inst {
		f, err := os.Open(in.logPath)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if m := logLine.FindStringSubmatch(sc.Text()); m != nil {
				out[m[1]+" "+m[2]]++
			}
		}
		f.Close()
	}
	return out
}

func (s *soak) report(v verdict) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	load := s.loadEnd.Sub(s.start)
	w("Run of %s UTC: Go %s %s/%s, %d CPUs (load average %s at the end, the machine is shared).\n",
		s.start.UTC().Format("2006-01-02 15:04"), strings.TrimPrefix(runtime.Version(), "go"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), loadAverage())
	w("Command: `make soak` (`WEFT_SOAK=1 go test -count=1 -timeout 10m -run '^TestSoak$' -v ./soak`), %d clients for %s, two `weft serve` instances on one schema of a throwaway PostgreSQL cluster, task lease %s.\n",
		s.cfg.clients, s.cfg.duration, taskLease)
	w("Wall time: setup (build, keyring, start) %s, load %s, drain and checks %s, total %s.\n\n",
		v.setup.Round(time.Second), load.Round(time.Second), (v.total - v.setup - load).Round(time.Second), v.total.Round(time.Second))

	verdictWord := "PASS"
	if len(v.problems) > 0 || s.t.Failed() {
		verdictWord = "FAIL"
	}
	w("**Verdict: %s.** Malformed responses: %d. Tasks lost: %d, duplicated: %d, changed after their end: %d, wrong result: %d. Goroutines: %d at the baseline, %d at the end.\n\n",
		verdictWord, classCount(s.stats, ClassMalformed), v.lost, v.duplicated, v.changed, v.wrong, v.goroutinesBase, v.goroutinesEnd)

	w("#### Faults injected\n\n| fault | at | errors attributed until | what happened |\n|---|---|---|---|\n")
	for _, f := range s.faults.list {
		if f.start.IsZero() {
			w("| %s | — | — | %s |\n", f.name, f.detail)
			continue
		}
		w("| %s | %s | %s | %s |\n", f.name, since(s.start, f.start), since(s.start, f.end), f.detail)
	}

	counts := s.stats.Counts()
	w("\n#### Requests by kind\n\n%d HTTP exchanges (%d of them re-sent to the other instance after a refused connection).\n\n", s.stats.Requests(), s.stats.Retried())
	classes := []Class{ClassOK, ClassRPCError, ClassRefused, ClassCancelled, ClassLost, ClassCut, ClassMalformed}
	w("| method | total |")
	for _, c := range classes {
		w(" %s |", c)
	}
	w("\n|---|---:|%s\n", strings.Repeat("---:|", len(classes)))
	byMethod := map[string]map[string]int64{}
	for _, c := range counts {
		if byMethod[c.Method] == nil {
			byMethod[c.Method] = map[string]int64{}
		}
		byMethod[c.Method][c.Class] += c.N
	}
	methods := make([]string, 0, len(byMethod))
	for m := range byMethod {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	totals := map[string]int64{}
	var grand int64
	for _, m := range methods {
		var sum int64
		for _, n := range byMethod[m] {
			sum += n
		}
		grand += sum
		w("| %s | %d |", m, sum)
		for _, c := range classes {
			w(" %d |", byMethod[m][string(c)])
			totals[string(c)] += byMethod[m][string(c)]
		}
		w("\n")
	}
	w("| **all** | %d |", grand)
	for _, c := range classes {
		w(" %d |", totals[string(c)])
	}
	w("\n")

	w("\n#### Errors by kind and fault window\n\nEvery exchange that was not a plain result, by the window it happened in (a fault's window runs from the fault until a few seconds after recovery).\n\n")
	w("| method | class | detail |")
	for _, win := range windows {
		w(" %s |", win)
	}
	w("\n|---|---|---|%s\n", strings.Repeat("---:|", len(windows)))
	type key struct{ method, class, detail string }
	perWin := map[key]map[string]int{}
	for _, e := range s.stats.Events() {
		k := key{e.Method, string(e.Class), e.Detail}
		if perWin[k] == nil {
			perWin[k] = map[string]int{}
		}
		perWin[k][s.faults.window(e.At)]++
	}
	keys := make([]key, 0, len(perWin))
	for k := range perWin {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return strings.Compare(a.class+a.method+a.detail, b.class+b.method+b.detail)
	})
	for _, k := range keys {
		w("| %s | %s | %s |", k.method, k.class, strings.ReplaceAll(k.detail, "|", "\\|"))
		for _, win := range windows {
			w(" %d |", perWin[k][win])
		}
		w("\n")
	}

	w("\n#### Client flows\n\n| flow | outcome | count |\n|---|---|---:|\n")
	type fk = [2]string
	fkeys := make([]fk, 0, len(s.flows.counts))
	for k := range s.flows.counts {
		fkeys = append(fkeys, k)
	}
	slices.SortFunc(fkeys, func(a, b fk) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	for _, k := range fkeys {
		w("| %s | %s | %d |\n", k[0], strings.ReplaceAll(k[1], "|", "\\|"), s.flows.counts[k])
	}
	notes := s.stats.Notes()
	if len(notes) > 0 {
		nk := make([]string, 0, len(notes))
		for k := range notes {
			nk = append(nk, k)
		}
		slices.Sort(nk)
		w("\nNotifications received on streams:")
		for i, k := range nk {
			sep := ","
			if i == 0 {
				sep = ""
			}
			w("%s %s %d", sep, k, notes[k])
		}
		w(".\n")
	}

	w("\n#### Tasks\n\n| created | completed with charts | completed without | cancelled | failed | orphans (creation response lost, found in the database) | lost | duplicated | changed after their end | wrong result | database rows |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	w("| %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", v.created, v.charts, v.noCharts, v.cancelled, v.failed, v.orphans, v.lost, v.duplicated, v.changed, v.wrong, v.dbRows)

	w("\n%d tasks had a step running (leased, on either instance) when B was killed; %d of them ended with their expected result (the steps of B's share were taken over after the lease expired).\n",
		len(s.leasedAtKill), v.recovered)

	w("\n#### Resources\n\n| | value |\n|---|---|\n")
	w("| test-process goroutines | %d at the baseline, %d at the end |\n", v.goroutinesBase, v.goroutinesEnd)
	w("| test-process heap in use at the end | %.1f MiB |\n", float64(v.clientHeap)/(1<<20))
	for _, in := range s.inst {
		var runs []string
		for _, r := range in.runs {
			runs = append(runs, fmt.Sprintf("%.0f MiB (%s)", float64(r.hwm.Load())/(1<<20), r.how))
		}
		w("| instance %s peak RSS (VmHWM) per process | %s; ceiling %d MiB |\n", in.name, strings.Join(runs, ", "), rssCeiling>>20)
	}

	logs := s.serverLogs()
	if len(logs) > 0 {
		w("\n#### Server log lines (ERROR and WARN, both instances)\n\n| level and message | count |\n|---|---:|\n")
		lk := make([]string, 0, len(logs))
		for k := range logs {
			lk = append(lk, k)
		}
		slices.Sort(lk)
		for _, k := range lk {
			w("| %s | %d |\n", strings.ReplaceAll(k, "|", "\\|"), logs[k])
		}
	}
	if len(v.problems) > 0 {
		w("\n#### Problems\n\n")
		for i, p := range v.problems {
			if i == 30 {
				w("- ... and %d more\n", len(v.problems)-30)
				break
			}
			w("- %s\n", p)
		}
	}
	return b.String()
}

func since(start, t time.Time) string {
	return fmt.Sprintf("%.1fs", t.Sub(start).Seconds())
}
