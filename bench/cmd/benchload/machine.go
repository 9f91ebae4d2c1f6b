package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// machine describes where the run happened.
type machine struct {
	cpuModel  string
	nproc     int
	memory    string
	kernel    string
	goVersion string
	loadStart string
	loadEnd   string
}

func describeMachine() machine {
	m := machine{nproc: runtime.NumCPU(), goVersion: runtime.Version(), cpuModel: "unknown", memory: "unknown", kernel: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpuModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				m.memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = "Linux " + strings.TrimSpace(string(b))
	}
	m.loadStart = loadAvg()
	return m
}

// loadAvg returns the 1-, 5- and 15-minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// versions returns the module versions of the peers (from the build info)
// and a description of the Weft tree.
func versions() map[string]string {
	v := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			ver := d.Version
			if d.Replace != nil {
				ver = "replaced by " + d.Replace.Path
				if d.Replace.Version != "" {
					ver += " " + d.Replace.Version
				}
			}
			v[d.Path] = ver
		}
	}
	v["weft"] = weftTree()
	return v
}

// weftTree names the Weft commit measured (the repository around bench/).
func weftTree() string {
	out, err := exec.Command("git", "-C", "..", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "working tree (no git information)"
	}
	s := "commit " + strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", "..", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		s += " with uncommitted changes"
	}
	return s
}
